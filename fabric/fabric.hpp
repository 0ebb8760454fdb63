#pragma once
// One interface for both fidelities. A Fabric carries messages between endpoints (the
// TransferPort the collective engine posts to), keeps their log, reports transport errors,
// and lists its links with the bytes each has carried. Both implementations register their
// probes under the same names wherever the quantity exists at their level:
//   <port>.tx_bytes              bytes a link direction sent on the wire (packet: counted per
//                                packet, ACKs and CNPs included; flow: the payload it carried
//                                in full-MTU framing, i.e. payload x wire rate / payload rate)
//   <nic>.rx_payload_bytes       payload a NIC received from the network
//   <nic>.rx_messages            messages a NIC received in full
// Port names are the packet model's: "<switch>.port<p>", "<nic>.nic", "<from>><to>" inside a
// server, "<cpu>.memory"; the flow level adds one NVLink bundle per GPU and direction,
// "<gpu>.nvlink_out" / "_in", where the packet level has a port per NVLink. Counters only the
// packet level has (PFC pauses, ECN marks, drops, retransmissions, queue gauges) are absent at
// flow level, so a sum over them is 0 there.
// Above this header nothing needs to know which fidelity runs: the bottleneck summary below,
// the monitor's and the report's counters read the same names from either.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/nccl/collective.hpp"
#include "models/transport/nic.hpp"

namespace fabricsim {

// A named number a run reports (results.json `metrics`).
struct Metric {
  std::string name;
  double value;
  std::string unit;  // for the text report; results.json carries the unit in the name
};

// The safety nets a run may ask of its fabric (fabric/monitor.hpp).
struct MonitorConfig {
  Time check_interval{};       // 0 = deadlock detection off
  Time no_progress_timeout{};  // 0 = guard off
};

class Fabric : public TransferPort {
 public:
  virtual ~Fabric() = default;

  // "packet" or "flow".
  virtual std::string_view level() const = 0;
  // Either add messages to the log and call start_messages() once, which schedules every
  // one, or post() them one at a time, at any point of the run.
  virtual MessageLog& messages() = 0;
  virtual const MessageLog& messages() const = 0;
  virtual void start_messages() = 0;
  // Queue-pair errors (retry counter exceeded), in the order they happened; none at flow level.
  virtual const std::vector<TransportError>& errors() const = 0;

  // Watch the run: stop it on a PFC deadlock or when nothing is delivered for the timeout,
  // and say why (verdict). A flow-level fabric cannot stall (every active flow has a positive
  // max-min rate), so it has nothing to watch.
  virtual void watch(const MonitorConfig&) {}
  struct Verdict {
    std::string status;  // "deadlock", "no-progress"
    std::string report;  // what was found, one line
  };
  virtual std::optional<Verdict> verdict() const { return std::nullopt; }

  // The figures only this level measures, after the run: at packet level drops, PFC pause
  // frames, ECN marks, CNPs, retransmissions, QP errors and the deepest switch queue; at flow
  // level the solver's work. Appended to a run's metrics in this order.
  virtual std::vector<Metric> level_metrics() const = 0;

  // One link direction: its layer in bottleneck summaries (topo/topology.hpp link_layer, or
  // "NVLink", "PCIe", "host memory" inside servers), its probe name, and `bytes` carried so
  // far at `bytes_per_s` when busy (packet: wire bytes at the line rate; flow: payload at the
  // payload capacity), so bytes / bytes_per_s is the time it was busy.
  struct Link {
    std::string_view layer, name;
    std::uint64_t bytes = 0;
    double bytes_per_s = 0;
    bool switch_port = false;  // leaves a network switch
  };
  virtual void for_each_link(const std::function<void(const Link&)>& f) const = 0;
};

// One busy link of the bottleneck summary.
struct LinkLoad {
  std::string layer;  // NVLink, PCIe, host memory, NIC, leaf downlink, leaf uplink, spine
  std::string port;
  double utilization = 0;  // busy time / span
  double paused_us = 0;    // time its transmitter was paused by PFC (packet level)
  // Mean utilization over every link of its layer, idle ones included: utilization / layer_mean
  // is how unevenly the layer is loaded (ECMP collisions put the busiest uplink far above it).
  double layer_mean = 0;
};

// The `per_layer` busiest links of each layer over `span`, layers ordered by their busiest
// link, counting from `since` (link_bytes_now at the span's start) when given. Pause times
// come from the `<port>.rx_prio<p>_pause_duration_ns` counters of `counters` (a run's).
// At flow level bytes count when a flow ends, so spans should end when traffic has drained.
std::vector<LinkLoad> bottleneck_summary(
    const Fabric& fabric, Time span,
    const std::vector<std::pair<std::string, std::uint64_t>>& counters, std::size_t per_layer = 2,
    const std::map<std::string, std::uint64_t>* since = nullptr);
// What PFC and ECN did in one layer of links (packet level; flow level has neither): the
// layer's link directions, how many of them PFC paused at least once, the pause frames their
// transmitters received and the time they stood paused (summed, and the most-paused link's
// share of `span`), and the packets its switch ports marked CE. Pauses that reach layers
// beyond the one whose queue filled are congestion spreading (head-of-line blocking of flows
// that never crossed the hot queue).
struct TierCongestion {
  std::string layer;
  std::size_t links = 0;
  std::size_t paused_links = 0;
  std::uint64_t pause_frames = 0;
  double paused_us = 0;
  double max_paused_share = 0;
  std::uint64_t ecn_marked = 0;
};
// Per layer, in the fabric's link order (from the hosts outward), from the counters
// `<port>.rx_prio<p>_pause`, `<port>.rx_prio<p>_pause_duration_ns` and
// `<port>.ecn_marked_packets`; only layers with any of them (empty at flow level).
std::vector<TierCongestion> congestion_by_tier(
    const Fabric& fabric, Time span,
    const std::vector<std::pair<std::string, std::uint64_t>>& counters);
// `tiers` summed over layers: pause frames and ECN marks, paused links, layers with a paused
// link (more than one: the pauses spread beyond the hop whose queue filled) and the most-paused
// link's share.
struct CongestionTotals {
  std::uint64_t pause_frames = 0, ecn_marked = 0;
  std::size_t paused_links = 0, paused_tiers = 0;
  double max_paused_share = 0;
};
CongestionTotals congestion_totals(const std::vector<TierCongestion>& tiers);
// The run-level metrics of those totals: pfc_paused_links, pfc_paused_tiers and
// pfc_max_paused_share.
std::vector<Metric> congestion_metrics(const std::vector<TierCongestion>& tiers);
// Whether a counter counts PFC pause frames a port sent ("<port>.tx_prio<p>_pause").
bool is_pfc_pause_sent(std::string_view counter);
// PFC pause frames sent, over all ports, from a run's counters.
std::uint64_t pfc_pause_frames(const std::vector<std::pair<std::string, std::uint64_t>>& counters);
// The busiest switch port's busy time over `span`, as a fraction (0 for an empty span).
double peak_switch_port_utilization(const Fabric& fabric, Time span);
// Bytes each link has carried so far: a `since` baseline for bottleneck_summary.
std::map<std::string, std::uint64_t> link_bytes_now(const Fabric& fabric);
// The `per_layer` busiest links of each layer, layers ordered by their busiest link.
std::vector<LinkLoad> busiest_per_layer(std::vector<LinkLoad> all, std::size_t per_layer);

}  // namespace fabricsim
