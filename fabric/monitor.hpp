#pragma once
// Safety nets for a packet-level run: PFC deadlock detection and a no-progress guard.
//
// Deadlock: every `check_interval` (only while the network has other work) the monitor builds
// the wait-for graph of paused queues. A node is an egress queue (switch, port, priority)
// that is non-empty and paused by the switch downstream. It waits on that downstream switch's
// ingress (the same cable, same priority), which drains only through the downstream egress
// queues holding packets that came in on it; an edge goes to each such queue that is itself
// paused and non-empty. A cycle is a cyclic buffer dependency in action. If a cycle is found
// at two consecutive checks, the run stops and the cycle is reported: its switches, ports and
// priority, and the messages whose packets sit in it. (HotNets'16: a cyclic buffer dependency
// is necessary for a PFC deadlock; seeing it persist across a check interval is the evidence.)
//
// No progress: if no payload byte is delivered for `no_progress_timeout` while messages are
// still incomplete, the run stops and says how many messages are stuck and where data waits.

#include <optional>
#include <string>
#include <vector>

#include "fabric/packet_network.hpp"

namespace fabricsim {

class FabricMonitor {
 public:
  FabricMonitor(Simulation& sim, PacketNetwork& net, const MonitorConfig& cfg);
  // Why the monitor stopped the run ("deadlock", "no-progress"), if it did.
  const std::optional<std::string>& verdict() const { return verdict_; }
  const std::string& report() const { return report_; }
  // The current cycle of paused queues, if any (one line describing it).
  std::optional<std::string> find_pause_cycle() const;

 private:
  void tick(std::uint64_t);
  Simulation& sim_;
  PacketNetwork& net_;
  MonitorConfig cfg_;
  HandlerId tick_;
  Time interval_{};
  std::optional<std::string> last_cycle_;
  Bytes last_delivered_{-1};
  Time last_progress_{};
  std::optional<std::string> verdict_;
  std::string report_;
};

}  // namespace fabricsim
