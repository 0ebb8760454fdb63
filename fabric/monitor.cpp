#include "fabric/monitor.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace fabricsim {

FabricMonitor::FabricMonitor(Simulation& sim, PacketNetwork& net, const MonitorConfig& cfg)
    : sim_(sim), net_(net), cfg_(cfg), tick_(sim.bind<&FabricMonitor::tick>(*this)) {
  interval_ = cfg.check_interval;
  if (cfg.no_progress_timeout > Time::zero()) {
    const Time quarter = cfg.no_progress_timeout / 4;
    interval_ = interval_ > Time::zero() ? std::min(interval_, quarter) : quarter;
  }
  if (interval_ > Time::zero()) sim_.schedule_background_in(interval_, tick_, 0, /*priority=*/255);
}

std::optional<std::string> FabricMonitor::find_pause_cycle() const {
  struct Node {
    std::size_t sw, port;
    std::uint8_t prio;
  };
  std::vector<Node> nodes;
  std::map<std::tuple<std::size_t, std::size_t, int>, std::size_t> id;
  for (std::size_t s = 0; s < net_.switch_count(); ++s) {
    const Switch& sw = net_.network_switch(s);
    for (std::size_t p = 0; p < sw.port_count(); ++p)
      for (int prio = 0; prio < EgressPort::kPriorities; ++prio) {
        const EgressPort& port = sw.port(p);
        if (port.paused(static_cast<std::uint8_t>(prio)) &&
            !port.queue(static_cast<std::uint8_t>(prio)).empty()) {
          id[{s, p, prio}] = nodes.size();
          nodes.push_back({s, p, static_cast<std::uint8_t>(prio)});
        }
      }
  }
  if (nodes.empty()) return std::nullopt;
  std::vector<std::vector<std::size_t>> next(nodes.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const EgressPort& port = net_.network_switch(nodes[n].sw).port(nodes[n].port);
    const auto* down = dynamic_cast<const Switch*>(port.far_end());
    if (down == nullptr) continue;
    const PortIndex ingress = port.far_port();
    for (std::size_t e = 0; e < down->port_count(); ++e) {
      const auto it = id.find({down->index(), e, nodes[n].prio});
      if (it == id.end()) continue;
      const auto& q = down->port(e).queue(nodes[n].prio);
      if (std::any_of(q.begin(), q.end(), [&](const Packet* p) { return p->ingress == ingress; }))
        next[n].push_back(it->second);
    }
  }
  // Iterative DFS with colours; the first back edge closes a cycle.
  std::vector<int> colour(nodes.size(), 0);
  std::vector<std::size_t> parent(nodes.size(), SIZE_MAX);
  for (std::size_t root = 0; root < nodes.size(); ++root) {
    if (colour[root] != 0) continue;
    std::vector<std::pair<std::size_t, std::size_t>> stack{{root, 0}};
    colour[root] = 1;
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      if (i == next[n].size()) {
        colour[n] = 2;
        stack.pop_back();
        continue;
      }
      const std::size_t m = next[n][i++];
      if (colour[m] == 0) {
        colour[m] = 1;
        parent[m] = n;
        stack.emplace_back(m, 0);
      } else if (colour[m] == 1) {
        std::vector<std::size_t> cycle{m};
        for (std::size_t k = n; k != m; k = parent[k]) cycle.push_back(k);
        std::reverse(cycle.begin() + 1, cycle.end());
        std::string text;
        std::set<std::uint64_t> messages;
        for (const std::size_t k : cycle) {
          const EgressPort& port = net_.network_switch(nodes[k].sw).port(nodes[k].port);
          text += fmt::format("{} priority {} -> ", port.name(), nodes[k].prio);
          for (const Packet* p : port.queue(nodes[k].prio)) messages.insert(p->message);
        }
        text +=
            fmt::format("{} priority {}",
                        net_.network_switch(nodes[m].sw).port(nodes[m].port).name(), nodes[m].prio);
        std::string list;
        for (const auto msg : messages) list += fmt::format("{}{}", list.empty() ? "" : ", ", msg);
        return fmt::format(
            "PFC deadlock: a cycle of paused queues, {}; messages with packets in it: {}", text,
            list);
      }
    }
  }
  return std::nullopt;
}

void FabricMonitor::tick(std::uint64_t) {
  const Time now = sim_.now();
  if (cfg_.no_progress_timeout > Time::zero()) {
    const Bytes delivered = net_.messages().delivered;
    const auto incomplete = [&] {
      std::size_t n = 0;
      for (const Message& m : net_.messages().messages)
        n += !m.complete() && !m.failed && m.start <= now;
      return n;
    };
    if (delivered != last_delivered_) {
      last_delivered_ = delivered;
      last_progress_ = now;
    } else if (now - last_progress_ >= cfg_.no_progress_timeout && incomplete() > 0) {
      verdict_ = "no-progress";
      report_ = fmt::format(
          "no progress: no payload delivered for {} (since {}), {} messages incomplete; "
          "raise simulation.no_progress_timeout if the fabric is waiting for long "
          "ACK timeouts (nic.ib_timeout)",
          to_string(now - last_progress_), to_string(last_progress_), incomplete());
      sim_.stop();
      return;
    }
  }
  if (cfg_.check_interval > Time::zero()) {
    auto cycle = find_pause_cycle();
    if (cycle && last_cycle_) {
      verdict_ = "deadlock";
      report_ = *cycle + fmt::format(" (persisting at {})", to_string(now));
      sim_.stop();
      return;
    }
    last_cycle_ = std::move(cycle);
  }
  if (sim_.pending_events() > 0) sim_.schedule_background_in(interval_, tick_, 0, 255);
}

}  // namespace fabricsim
