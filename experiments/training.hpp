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

// What `run --trace` shows of the cluster run (report/trace.hpp writes it).
struct TrainingTrace {
  // The step timeline, and the collectives' primitives on per-GPU tracks: up to
  // `primitive_limit`, after which they are only counted (`primitives_dropped`).
  std::vector<TraceSpan> spans;
  std::size_t primitive_limit = 0;
  std::uint64_t primitives_dropped = 0;
  // The network's links (no in-server NVLink, PCIe or host memory), sampled every `interval`:
  // each link's utilization over the interval before each sample (packet and hybrid level:
  // wire bytes sent / line rate; flow level: the solver's share of the link's capacity at the
  // sample) and, at packet level, its egress queue depth in bytes.
  struct Link {
    std::string layer, name;
    std::vector<double> utilization, queue_bytes;  // aligned with `times`; empty: not measured
  };
  Time interval{};
  std::vector<Time> times;
  std::vector<Link> links;
  // PFC pauses: a link's transmitter held paused on one priority, first pause frame to expiry
  // or XON. A pause still on when the run ended ends at `end`.
  struct Pause {
    std::string layer, port;
    int priority = 0;
    Time start{}, end{};
  };
  std::vector<Pause> pauses;
  Time end{};
};

// The step timeline's sampling period when the scenario sets no simulation.sample_interval:
// coarse enough that a step of hundreds of milliseconds on a thousand links stays within
// memory, fine enough to show each data-parallel bucket's AllReduce.
inline constexpr Time kTraceSampleInterval = Time::from_ps(100'000'000);  // 100 us

// `trace` (when not null) receives what the trace shows of the cluster run.
RunResult run_training(const Scenario& scenario, const BuiltCluster& cluster,
                       ProgressFn progress = {}, TrainingTrace* trace = nullptr);

}  // namespace fabricsim
