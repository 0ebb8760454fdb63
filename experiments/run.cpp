#include "experiments/run.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "fabric/monitor.hpp"

namespace fabricsim {

namespace {

// Nearest-rank percentile of sorted values (p in [0, 100]).
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank =
      static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

// Sum of the counters whose names satisfy `match`.
template <class Match>
std::uint64_t sum_counters(const std::vector<std::pair<std::string, std::uint64_t>>& counters,
                           Match match) {
  std::uint64_t sum = 0;
  for (const auto& [name, value] : counters)
    if (match(std::string_view(name))) sum += value;
  return sum;
}

auto ends_with(std::string_view suffix) {
  return [suffix](std::string_view name) { return name.ends_with(suffix); };
}

}  // namespace

std::uint64_t pfc_pause_frames(const std::vector<std::pair<std::string, std::uint64_t>>& counters) {
  return sum_counters(counters, [](std::string_view n) {
    return n.find(".tx_prio") != std::string_view::npos && n.ends_with("_pause");  // frames sent
  });
}

std::vector<LinkLoad> bottleneck_summary(
    PacketNetwork& net, const Topology& topo, const Routing& routing, Time span,
    const std::vector<std::pair<std::string, std::uint64_t>>& counters, std::size_t per_layer,
    const std::map<std::string, std::uint64_t>* since) {
  std::vector<LinkLoad> all;
  if (span <= Time::zero()) return all;
  std::map<std::string, std::uint64_t> by_name(counters.begin(), counters.end());
  const auto add = [&](const std::string& layer, const EgressPort& port) {
    double paused_ns = 0;
    for (int p = 0; p < 8; ++p) {
      const auto it = by_name.find(fmt::format("{}.rx_prio{}_pause_duration_ns", port.name(), p));
      if (it != by_name.end()) paused_ns += static_cast<double>(it->second);
    }
    std::uint64_t sent = port.tx_bytes();
    if (since != nullptr && since->contains(port.name())) sent -= since->at(port.name());
    const double util = static_cast<double>(sent) * 8 /
                        (span.seconds() * static_cast<double>(port.config().rate.bps()));
    if (util > 0 || paused_ns > 0) all.push_back({layer, port.name(), util, paused_ns / 1e3});
  };
  if (const HostFabric* h = net.host_fabric())
    h->for_each_port([&](const char* layer, const EgressPort& port) { add(layer, port); });
  for (std::size_t e = 0; e < net.nic_count(); ++e) add("NIC", net.nic(e).port());
  const auto& g = topo.graph();
  for (std::size_t s = 0; s < net.switch_count(); ++s)
    for (std::size_t p = 0; p < routing.ports(s).size(); ++p)
      add(std::string(link_layer(g, routing.switch_vertex(s), routing.ports(s)[p].peer,
                                 LinkKind::kNetwork)),
          net.network_switch(s).port(p));
  return busiest_per_layer(std::move(all), per_layer);
}

std::vector<LinkLoad> bottleneck_summary(const FlowNetwork& net, Time span, std::size_t per_layer,
                                         const std::map<std::string, std::uint64_t>* since) {
  std::vector<LinkLoad> all;
  if (span <= Time::zero()) return all;
  for (const auto& l : net.link_bytes()) {
    std::uint64_t carried = l.bytes;
    if (since != nullptr && since->contains(l.name)) carried -= since->at(l.name);
    const double util = static_cast<double>(carried) / (span.seconds() * l.capacity);
    if (util > 0) all.push_back({l.layer, l.name, util, 0});
  }
  return busiest_per_layer(std::move(all), per_layer);
}

std::map<std::string, std::uint64_t> link_bytes_now(const FlowNetwork& net) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& l : net.link_bytes()) out[l.name] = l.bytes;
  return out;
}

std::vector<LinkLoad> busiest_per_layer(std::vector<LinkLoad> all, std::size_t per_layer) {
  // Per layer the busiest few; layers ordered by their busiest link.
  std::map<std::string, std::vector<LinkLoad>> layers;
  for (auto& l : all) layers[l.layer].push_back(l);
  std::vector<std::vector<LinkLoad>> ordered;
  for (auto& [name, links] : layers) {
    std::stable_sort(links.begin(), links.end(), [](const LinkLoad& a, const LinkLoad& b) {
      return a.utilization > b.utilization;
    });
    links.resize(std::min(links.size(), per_layer));
    ordered.push_back(std::move(links));
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.front().utilization > b.front().utilization;
  });
  std::vector<LinkLoad> out;
  for (auto& links : ordered) out.insert(out.end(), links.begin(), links.end());
  return out;
}

FabricBackend::FabricBackend(Simulation& sim, const Scenario& s, const BuiltCluster& cluster) {
  if (s.fidelity == Fidelity::kFlow) {
    flow = std::make_unique<FlowNetwork>(sim, cluster.topology, cluster.routing, s.network,
                                         s.flow_efficiency);
    flow->set_recycle(true);
  } else {
    packet = std::make_unique<PacketNetwork>(sim, cluster.topology, cluster.routing, s.network);
  }
}

std::vector<LinkLoad> FabricBackend::bottlenecks(
    const BuiltCluster& cluster, Time span,
    const std::vector<std::pair<std::string, std::uint64_t>>& counters, std::size_t per_layer,
    const std::map<std::string, std::uint64_t>* since) {
  return packet ? bottleneck_summary(*packet, cluster.topology, cluster.routing, span, counters,
                                     per_layer, since)
                : bottleneck_summary(*flow, span, per_layer, since);
}

std::map<std::string, std::uint64_t> FabricBackend::bytes_now() {
  return packet ? port_bytes_now(*packet) : link_bytes_now(*flow);
}

std::map<std::string, std::uint64_t> port_bytes_now(PacketNetwork& net) {
  std::map<std::string, std::uint64_t> out;
  if (const HostFabric* h = net.host_fabric())
    h->for_each_port([&](const char*, const EgressPort& p) { out[p.name()] = p.tx_bytes(); });
  for (std::size_t e = 0; e < net.nic_count(); ++e)
    out[net.nic(e).port().name()] = net.nic(e).port().tx_bytes();
  for (std::size_t s = 0; s < net.switch_count(); ++s)
    for (std::size_t p = 0; p < net.network_switch(s).port_count(); ++p)
      out[net.network_switch(s).port(p).name()] = net.network_switch(s).port(p).tx_bytes();
  return out;
}

SeedSpread spread_of(std::string name, std::string unit, const std::vector<double>& values) {
  SeedSpread s{std::move(name), std::move(unit)};
  if (values.empty()) return s;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  return s;
}

RunResult SeedsResult::mean_run() const {
  RunResult r = runs.front();
  for (std::size_t i = 0; i < r.metrics.size() && i < metrics.size(); ++i)
    r.metrics[i].value = metrics[i].mean;
  return r;
}

SeedsResult run_seeds(const Scenario& scenario, const BuiltCluster& cluster, int count,
                      const RunFn& run) {
  SeedsResult out;
  for (int i = 0; i < std::max(1, count); ++i) {
    Scenario s = scenario;
    s.seed = scenario.seed + static_cast<std::uint64_t>(i);
    std::optional<BuiltCluster> other;
    if (i > 0) other.emplace(s);
    out.seeds.push_back(s.seed);
    out.runs.push_back(run(s, i > 0 ? *other : cluster));
  }
  for (std::size_t m = 0; m < out.runs.front().metrics.size(); ++m) {
    const Metric& first = out.runs.front().metrics[m];
    std::vector<double> values;
    for (const RunResult& r : out.runs)
      for (const Metric& x : r.metrics)
        if (x.name == first.name) values.push_back(x.value);
    out.metrics.push_back(spread_of(first.name, first.unit, values));
    const SeedSpread& sp = out.metrics.back();
    if (sp.spread() > kSeedSpreadWarning)
      out.warnings.push_back(fmt::format(
          "{} varies by {:.1f} % over seeds {}..{} ({:.4g} to {:.4g}): the answer depends on ECMP "
          "hashing or timing luck; report the range, not one run",
          sp.name, 100 * sp.spread(), out.seeds.front(), out.seeds.back(), sp.min, sp.max));
  }
  return out;
}

BuiltCluster::BuiltCluster(const Scenario& scenario)
    : topology(build_cluster(scenario.cluster)),
      routing(Routing::compute(topology, scenario.seed)) {}

void preflight(const Scenario& s, const BuiltCluster& cluster, bool force) {
  std::vector<std::string> errors;
  const auto refuse = [&](std::string_view key, const std::string& message) {
    errors.push_back(fmt::format("{}: {}: {}", s.position_of(key), key, message));
  };
  const auto too_large = [&](std::string_view key, const std::string& estimate) {
    if (!force) refuse(key, estimate + "; change it, or pass --force to run anyway");
  };
  if (s.fidelity == Fidelity::kPacket)
    for (std::size_t sw = 0; sw < cluster.routing.switch_count(); ++sw)
      if (const std::string why =
              buffer_shortfall(s.network.buffer, cluster.routing.ports(sw).size());
          !why.empty()) {
        refuse("switch.buffer",
               fmt::format("switch {}: {}",
                           cluster.topology.graph()[cluster.routing.switch_vertex(sw)].name, why));
        break;  // every switch of that size says the same
      }
  if (s.has_traffic) {
    const auto hosts = static_cast<std::uint32_t>(cluster.routing.endpoint_count());
    if (s.traffic.pattern == TrafficPattern::kPermutation && s.traffic.shift % hosts == 0)
      refuse("traffic.shift",
             fmt::format("shift {} is a multiple of the {} hosts: every host would send to itself "
                         "and nothing would run; use a shift from 1 to {}",
                         s.traffic.shift, hosts, hosts - 1));
    if (const std::uint64_t n = message_count(s.traffic, hosts); n > kMaxMessages)
      too_large(
          "traffic.messages",
          fmt::format("{} messages ({} hosts) would hold at least {:.1f} GB of message "
                      "state, over the {} a run takes",
                      n, hosts, static_cast<double>(n) * sizeof(Message) * 1e-9, kMaxMessages));
  }
  if (!s.simulation.timeseries.empty() && s.simulation.sample_interval > Time::zero()) {
    const auto samples =
        static_cast<std::uint64_t>(s.simulation.stop_time.ps() / s.simulation.sample_interval.ps());
    if (samples > kMaxSamplesPerGauge)
      too_large(
          "simulation.sample_interval",
          fmt::format("sampling every {} up to simulation.stop_time {} is {} samples per "
                      "gauge ({:.1f} GB each), over the {} a run records",
                      to_string(s.simulation.sample_interval), to_string(s.simulation.stop_time),
                      samples, static_cast<double>(samples) * 8e-9, kMaxSamplesPerGauge));
  }
  if (!errors.empty()) throw ConfigError(std::move(errors));
}

namespace {

// Completion metrics of a message log: FCT statistics, delivered bytes, makespan.
struct LogSummary {
  std::vector<Metric> metrics;
  Time span{};
};

LogSummary summarise(const MessageLog& messages) {
  const auto& log = messages.messages;
  std::vector<double> fct_us;
  Bytes delivered{0};
  Time first_start = Time::max(), last_finish = Time::zero();
  for (const Message& m : log) {
    delivered += m.received;
    first_start = std::min(first_start, m.start);
    if (m.complete()) {
      fct_us.push_back((m.finish - m.start).us());
      last_finish = std::max(last_finish, m.finish);
    }
  }
  std::sort(fct_us.begin(), fct_us.end());
  const Time span = last_finish > first_start ? last_finish - first_start : Time::zero();
  double mean = 0;
  for (double v : fct_us) mean += v;
  if (!fct_us.empty()) mean /= static_cast<double>(fct_us.size());
  return {{
              {"messages_total", static_cast<double>(log.size()), ""},
              {"messages_completed", static_cast<double>(fct_us.size()), ""},
              {"delivered_payload_bytes", static_cast<double>(delivered.count()), "B"},
              {"makespan_us", span.us(), "us"},
              {"aggregate_goodput_gbps", rate_gbps(delivered, span), "Gb/s"},
              {"fct_mean_us", mean, "us"},
              {"fct_p50_us", percentile(fct_us, 50), "us"},
              {"fct_p99_us", percentile(fct_us, 99), "us"},
              {"fct_max_us", fct_us.empty() ? 0 : fct_us.back(), "us"},
          },
          span};
}

// The flow level: messages as max-min fair flows; per-port payload bytes as counters.
RunResult run_flow_level(const Scenario& scenario, const BuiltCluster& cluster,
                         Simulation::ProgressFn progress) {
  Simulation sim(scenario.seed);
  FlowNetwork fabric(sim, cluster.topology, cluster.routing, scenario.network,
                     scenario.flow_efficiency);
  fabric.messages().assign(generate_messages(
      scenario.traffic, static_cast<std::uint32_t>(cluster.topology.endpoints().size()),
      sim.rng()));
  fabric.start_messages();
  if (progress) sim.set_progress_callback(std::move(progress));
  const StopReason reason = sim.run_until(scenario.simulation.stop_time);
  RunResult r;
  r.status = reason == StopReason::kIdle ? "completed" : "time-limit";
  r.sim_time = sim.now();
  r.events = sim.events_processed();
  r.fingerprint = sim.fingerprint();
  const LogSummary summary = summarise(fabric.messages());
  r.metrics = summary.metrics;
  double peak_util = 0;
  for (const auto& port : fabric.port_bytes()) {
    r.counters.emplace_back(port.name + ".tx_payload_bytes", port.bytes);
    if (summary.span > Time::zero())
      peak_util =
          std::max(peak_util, rate_gbps(Bytes(static_cast<Bytes::rep>(port.bytes)), summary.span) /
                                  port.rate.gbps());
  }
  r.metrics.push_back({"peak_switch_port_utilization", peak_util, ""});
  r.metrics.push_back({"rate_updates", static_cast<double>(fabric.rate_updates()), ""});
  r.metrics.push_back({"flows_resolved", static_cast<double>(fabric.flows_resolved()), ""});
  r.bottlenecks = bottleneck_summary(fabric, r.sim_time);
  return r;
}

}  // namespace

RunResult run_scenario(const Scenario& scenario, const BuiltCluster& cluster,
                       Simulation::ProgressFn progress) {
  if (!scenario.has_traffic)
    throw std::invalid_argument(
        "the scenario has no [traffic] to run (`fabricsim nccl-tests` runs collectives on it)");
  if (scenario.fidelity == Fidelity::kFlow) return run_flow_level(scenario, cluster, progress);
  Simulation sim(scenario.seed);
  PacketNetwork fabric(sim, cluster.topology, cluster.routing, scenario.network);
  const auto traffic = generate_messages(scenario.traffic,
                                         static_cast<std::uint32_t>(fabric.nic_count()), sim.rng());
  fabric.messages().messages.assign(traffic.begin(), traffic.end());
  fabric.start_messages();
  GaugeSampler sampler(sim, scenario.simulation.timeseries, scenario.simulation.sample_interval);
  FabricMonitor monitor(sim, fabric,
                        {.check_interval = scenario.simulation.deadlock_check_interval,
                         .no_progress_timeout = scenario.simulation.no_progress_timeout});
  if (progress) sim.set_progress_callback(std::move(progress));

  const StopReason reason = sim.run_until(scenario.simulation.stop_time);

  RunResult r;
  r.status = reason == StopReason::kIdle ? "completed" : "time-limit";
  if (monitor.verdict()) {
    r.status = *monitor.verdict();
    r.errors.push_back(monitor.report());
  }
  r.sim_time = sim.now();
  r.events = sim.events_processed();
  r.fingerprint = sim.fingerprint();

  const LogSummary summary = summarise(fabric.messages());
  const Time span = summary.span;

  Bytes peak_queue{0};
  double peak_util = 0;
  for (std::size_t s = 0; s < fabric.switch_count(); ++s) {
    Switch& sw = fabric.network_switch(s);
    for (std::size_t i = 0; i < sw.port_count(); ++i) {
      EgressPort& port = sw.port(i);
      peak_queue = std::max(peak_queue, port.peak_queued());
      if (span > Time::zero())
        peak_util =
            std::max(peak_util, rate_gbps(Bytes(static_cast<Bytes::rep>(port.tx_bytes())), span) /
                                    port.config().rate.gbps());
    }
  }
  for (const auto& c : sim.probes().counters()) {
    r.counters.emplace_back(std::string(c.name), c.value);
  }

  r.metrics = summary.metrics;
  r.metrics.insert(
      r.metrics.end(),
      {
          {"dropped_packets",
           static_cast<double>(sum_counters(r.counters, ends_with(".drop_packets"))), ""},
          {"pfc_pause_frames", static_cast<double>(pfc_pause_frames(r.counters)), ""},
          {"ecn_marked_packets",
           static_cast<double>(sum_counters(r.counters, ends_with(".ecn_marked_packets"))), ""},
          {"cnp_sent", static_cast<double>(sum_counters(r.counters, ends_with(".cnp_sent"))), ""},
          {"retransmitted_packets",
           static_cast<double>(sum_counters(r.counters, ends_with(".retransmitted_packets"))), ""},
          {"qp_errors", static_cast<double>(fabric.errors().size()), ""},
          {"peak_switch_queue_bytes", static_cast<double>(peak_queue.count()), "B"},
          {"peak_switch_port_utilization", peak_util, ""},
      });
  for (const auto& e : fabric.errors())
    r.errors.push_back(fmt::format("{} at {}", e.text, to_string(e.time)));
  r.bottlenecks =
      bottleneck_summary(fabric, cluster.topology, cluster.routing, r.sim_time, r.counters);
  r.series_names = sampler.names();
  r.series_times = sampler.times();
  r.series_values = sampler.values();
  return r;
}

}  // namespace fabricsim
