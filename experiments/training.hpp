#pragma once
// `fabricsim run` on a scenario with a [workload]: the training step of
// models/workload/workload.hpp on the scenario's cluster (packet or flow level), and the same
// workload on one server for the scaling efficiency. Metrics (results.json `metrics`):
//   step_time_ms, compute_ms, exposed_comm_ms, overlapped_comm_ms
//   allreduce_ms_per_step    TP (in-server) + DP (cross-server) AllReduce time per step
//   allreduce_cross_node_ms  the DP part
//   cross_node_throughput_gbit_per_s (and its old name roce_throughput_gbps)
//                            the payload each NIC received per step (the NICs'
//                            rx_payload_bytes counters, at either level) over the time the DP
//                            AllReduces ran, i.e. the per-NIC rate a counter shows while
//                            gradients are reduced
//   pfc_pause_frames         pause frames the switches sent (packet level)
//   at packet and hybrid level also dropped_packets, ecn_marked_packets, cnp_sent,
//   retransmitted_packets, qp_errors, peak_switch_queue_bytes and the PFC spread figures
//   pfc_paused_links, pfc_paused_tiers, pfc_max_paused_share (fabric/fabric.hpp)
//   tokens_per_s, single_server_tokens_per_s,
//   scaling_efficiency       tokens/s / (servers x single-server tokens/s)
//   compute_slowdown_overlapped  what NCCL's SMs cost a compute-bound kernel meanwhile

#include "experiments/run.hpp"

namespace fabricsim {

// `trace` (when not null) receives the step timeline of the cluster run.
RunResult run_training(const Scenario& scenario, const BuiltCluster& cluster,
                       ProgressFn progress = {}, std::vector<TraceSpan>* trace = nullptr);

}  // namespace fabricsim
