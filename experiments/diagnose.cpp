#include "experiments/diagnose.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <map>

namespace fabricsim {

const Finding* Diagnosis::verdict() const {
  for (const auto& f : findings)
    if (f.bad) return &f;
  return nullptr;
}

Diagnosis diagnose(const MeasurementSet& set, const Scenario* s) {
  std::vector<Finding> findings;
  // Largest size per (binary, ranks): the bandwidth regime.
  std::map<std::pair<std::string, int>, const Measurement*> largest;
  for (const auto& m : set.collectives) {
    auto& l = largest[{m.binary, m.ranks}];
    if (l == nullptr || m.bytes > l->bytes) l = &m;
  }
  const int per_server =
      s != nullptr && s->cluster.servers > 0 ? static_cast<int>(s->cluster.server.gpus.size()) : 8;
  const auto busbw = [](const Measurement& m) {
    return static_cast<double>(m.bytes) / (m.time_us * 1e3) * bus_factor(m.op, m.ranks);
  };
  // 1. Intra-server collective against the NVLink peak (per GPU, one direction).
  double nvlink_gbs = 0;
  if (s != nullptr && s->cluster.servers > 0) {
    // NVLink per GPU and direction: its links to the NVSwitches (or, without them, to a peer).
    const ServerSpec& sv = s->cluster.server;
    int links = 0;
    for (int l : sv.nvswitch_links) links += l;
    for (std::size_t j = 1; links == 0 && j < sv.gpus.size(); ++j)
      links = std::max(links, sv.nvlink_count(0, static_cast<int>(j)));
    nvlink_gbs = links * static_cast<double>(sv.nvlink_rate.bps()) / 8e9;
  }
  for (const auto& [key, m] : largest) {
    if (key.first != "all_reduce_perf" || key.second > per_server || key.second < 2) continue;
    const double bw = busbw(*m);
    if (nvlink_gbs <= 0) {
      findings.push_back({"NVLink",
                          fmt::format("intra-server AllReduce busbw {:.1f} GB/s at {} B "
                                      "(give --scenario for the NVLink peak)",
                                      bw, m->bytes),
                          "", false});
      continue;
    }
    const bool bad = bw < 0.7 * nvlink_gbs;
    findings.push_back(
        {"NVLink / PCIe inside the server",
         fmt::format("intra-server AllReduce busbw {:.1f} GB/s = {:.0f} % of the NVLink peak "
                     "{:.0f} GB/s ({})",
                     bw, bw / nvlink_gbs * 100, nvlink_gbs, m->source),
         "check GPU-NIC and GPU-GPU paths and NUMA affinity: nvidia-smi topo -m, numactl", bad});
  }
  // 1b. Pinned host copies (fabricsim-bench --micro) against the GPU's PCIe host path: a link
  // trained below its generation or width, or a buffer on the far socket.
  for (const auto& [file, m] : set.micro) {
    const double copy = (m.h2d_gbs + m.d2h_gbs) / 2;
    if (s == nullptr || s->cluster.servers <= 0) {
      findings.push_back({"PCIe (host <-> GPU)",
                          fmt::format("host copies h2d {:.1f}, d2h {:.1f} GB/s ({}; give "
                                      "--scenario for the PCIe path rate)",
                                      m.h2d_gbs, m.d2h_gbs, file),
                          "", false});
      continue;
    }
    const double path = host_path_gbs(s->cluster.server);
    findings.push_back(
        {"PCIe (host <-> GPU)",
         fmt::format("host copies h2d {:.1f}, d2h {:.1f} GB/s = {:.0f} % of the {:.1f} GB/s PCIe "
                     "path ({})",
                     m.h2d_gbs, m.d2h_gbs, copy / path * 100, path, file),
         "check the negotiated PCIe generation and width (nvidia-smi -q -d PCIE, lspci -vv "
         "LnkSta) and that the pinned buffer sits on the GPU's socket (numactl)",
         copy < 0.7 * path});
  }
  // 2. Point-to-point RDMA against the link rate.
  double link_gbps = 0;
  if (s != nullptr) link_gbps = static_cast<double>(s->cluster.fabric.link_rate.bps()) / 1e9;
  for (const auto& [file, gbps] : set.rdma_gbps) {
    const bool bad = link_gbps > 0 && gbps < 0.8 * link_gbps;
    findings.push_back(
        {"network (NIC, links, switches)",
         link_gbps > 0
             ? fmt::format("RDMA write {:.1f} Gb/s = {:.0f} % of the {:.0f} Gb/s link ({})", gbps,
                           gbps / link_gbps * 100, link_gbps, file)
             : fmt::format("RDMA write {:.1f} Gb/s ({}; give --scenario for the link rate)", gbps,
                           file),
         "look at PFC/ECN counters (ethtool -S), routing imbalance across uplinks, and the MTU",
         bad});
  }
  for (const auto& [file, pauses] : set.pause_frames)
    if (pauses > 0)
      findings.push_back({"network (PFC)", fmt::format("{} PFC pause frames ({})", pauses, file),
                          "enable ECN/DCQCN, size the switch buffer (headroom), find the incast",
                          true});
  // 3. Cross-server collective against the intra-server one, same binary and size.
  for (const auto& [key, m] : largest) {
    if (key.second <= per_server) continue;
    for (const auto& [k2, m2] : largest) {
      if (k2.first != key.first || k2.second > per_server || k2.second < 2) continue;
      const double ratio = busbw(*m2) / busbw(*m);
      findings.push_back(
          {"network (cross-server collective)",
           fmt::format("{} busbw {:.1f} GB/s on {} ranks against {:.1f} GB/s inside one server: "
                       "{:.1f}x slower across servers",
                       key.first, busbw(*m), key.second, busbw(*m2), ratio),
           "measure point-to-point RDMA between two servers (ib_write_bw) and the switch "
           "counters",
           ratio > 2});
      break;
    }
  }
  // 4. PCIe where NVLink was expected.
  for (const auto& f : set.topology_findings)
    findings.push_back(
        {"PCIe topology", f, "check the NVLink/NVSwitch state (nvidia-smi nvlink -s)", true});
  // 5. The model's own attribution, from a simulation's results.json: per layer, the busiest
  // link's busy time (utilisation x the run) and the time it was paused. The busiest layer is
  // the model's bottleneck; compare it with the measured cluster's verdict.
  for (const auto& [file, r] : set.simulations) {
    const double span_ms = static_cast<double>(r.span_ps) * 1e-9;
    std::map<std::string, const validation::SimulationResults::Load*> busiest;
    for (const auto& l : r.bottlenecks) {
      auto& b = busiest[l.layer];
      if (b == nullptr || l.utilization > b->utilization) b = &l;
    }
    std::vector<const validation::SimulationResults::Load*> layers;
    for (const auto& [layer, l] : busiest) layers.push_back(l);
    std::stable_sort(layers.begin(), layers.end(),
                     [](const auto* a, const auto* b) { return a->utilization > b->utilization; });
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const auto& l = *layers[i];
      findings.push_back(
          {fmt::format("model: {}", l.layer),
           fmt::format("busiest link {} busy {:.3f} ms = {:.0f} % of the {:.3f} ms run{} ({})",
                       l.port, l.utilization * span_ms, l.utilization * 100, span_ms,
                       l.paused_us > 0 ? fmt::format(", paused {:.3f} ms", l.paused_us / 1e3)
                                       : std::string(),
                       file),
           "the model's busiest layer: compare with the measured cluster's diagnosis; in the "
           "model, relieve it (rates, oversubscription, routing) and rerun",
           i == 0, i == 0 ? "" : "model"});
    }
  }
  return {std::move(findings)};
}

}  // namespace fabricsim
