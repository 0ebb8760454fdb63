#include "experiments/run.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "fabric/flow_network.hpp"
#include "fabric/hybrid_network.hpp"
#include "fabric/packet_network.hpp"

namespace fabricsim {

namespace {

// Nearest-rank percentile of sorted values (p in [0, 100]).
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank =
      static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

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

CommunicatorOptions communicator_options(const Scenario& s) {
  CommunicatorOptions o;
  o.server_order = s.nccl.server_order;
  o.cross_nic = s.nccl.cross_nic;
  o.channels_per_net_peer = s.nccl.channels_per_net_peer;
  o.server_list = s.nccl.server_list;
  o.channel_gbs = static_cast<double>(s.gpu.nvlink_channel.bps()) / 8e9;
  o.sm_version = s.gpu.sm_version;
  o.host_side = s.network.host_side;
  o.sharp_trees_per_switch = s.cluster.fabric.sharp_trees;
  return o;
}

std::unique_ptr<Fabric> make_fabric(Simulation& sim, const Scenario& s,
                                    const BuiltCluster& cluster) {
  if (s.fidelity == Fidelity::kPacket)
    return std::make_unique<PacketNetwork>(sim, cluster.topology, cluster.routing, s.network);
  if (s.fidelity == Fidelity::kHybrid)
    return std::make_unique<HybridNetwork>(sim, cluster.topology, cluster.routing, s.network,
                                           s.flow_efficiency);
  return std::make_unique<FlowNetwork>(sim, cluster.topology, cluster.routing, s.network,
                                       s.flow_efficiency);
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
  if (s.fidelity != Fidelity::kFlow)
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

}  // namespace

std::unique_ptr<GaugeSampler> record_timeseries(Simulation& sim, const Scenario& scenario) {
  const auto& patterns = scenario.simulation.timeseries;
  auto sampler = std::make_unique<GaugeSampler>(sim, patterns, scenario.simulation.sample_interval);
  // Each pattern must have selected something: checked on what the sampler matched, so the
  // fabric's gauges are looked up once (and all of them only to name the nearest).
  std::vector<std::string> names, errors;
  for (const auto& p : patterns) {
    if (std::any_of(sampler->names().begin(), sampler->names().end(),
                    [&p](const std::string& n) { return glob_match(p, n); }))
      continue;
    if (names.empty()) names = sim.probes().gauge_names();
    const auto at = scenario.positions.find("simulation.timeseries");
    const auto near = nearest_keys(p, names, 5);
    errors.push_back(fmt::format(
        "{}simulation.timeseries: \"{}\" matches no gauge of this {}-level run{}",
        at != scenario.positions.end() ? at->second + ": " : "", p, to_string(scenario.fidelity),
        near.empty() ? std::string(" (it has none)")
                     : fmt::format("; nearest: {}", fmt::join(near, ", "))));
  }
  if (!errors.empty()) throw ConfigError(std::move(errors));
  return sampler;
}

RunResult run_scenario(const Scenario& scenario, const BuiltCluster& cluster, ProgressFn progress) {
  if (!scenario.has_traffic)
    throw std::invalid_argument(
        "the scenario has no [traffic] to run (`fabricsim nccl-tests` runs collectives on it)");
  Simulation sim(scenario.seed);
  const std::unique_ptr<Fabric> fabric = make_fabric(sim, scenario, cluster);
  fabric->messages().assign(generate_messages(
      scenario.traffic, static_cast<std::uint32_t>(cluster.topology.endpoints().size()),
      sim.rng()));
  fabric->start_messages();
  const std::unique_ptr<GaugeSampler> sampler = record_timeseries(sim, scenario);
  fabric->watch({.check_interval = scenario.simulation.deadlock_check_interval,
                 .no_progress_timeout = scenario.simulation.no_progress_timeout});
  // The pattern's messages are all in the log before the run; both levels count the payload
  // delivered as it arrives (MessageLog::delivered).
  const MessageLog& log = fabric->messages();
  double payload = 0;
  for (const Message& m : log) payload += static_cast<double>(m.size.count());
  ProgressWatch watch(sim, std::move(progress), [&log, payload] {
    return payload > 0 ? std::min(1.0, static_cast<double>(log.delivered.count()) / payload) : 1.0;
  });

  const StopReason reason = sim.run_until(scenario.simulation.stop_time);
  watch.finish();

  RunResult r;
  r.status = reason == StopReason::kIdle ? "completed" : "time-limit";
  if (const auto verdict = fabric->verdict()) {
    r.status = verdict->status;
    r.errors.push_back(verdict->report);
  }
  r.sim_time = sim.now();
  r.events = sim.events_processed();
  r.fingerprint = sim.fingerprint();
  for (const auto& c : sim.probes().counters())
    r.counters.emplace_back(std::string(c.name), c.value);

  const LogSummary summary = summarise(fabric->messages());
  r.metrics = summary.metrics;
  for (auto& m : fabric->level_metrics()) r.metrics.push_back(std::move(m));
  r.metrics.push_back(
      {"peak_switch_port_utilization", peak_switch_port_utilization(*fabric, summary.span), ""});
  for (const auto& e : fabric->errors())
    r.errors.push_back(fmt::format("{} at {}", e.text, to_string(e.time)));
  r.bottleneck_span = summary.span > Time::zero() ? summary.span : r.sim_time;
  r.bottlenecks = bottleneck_summary(*fabric, r.bottleneck_span, r.counters);
  r.congestion = congestion_by_tier(*fabric, r.bottleneck_span, r.counters);
  if (scenario.fidelity != Fidelity::kFlow)
    for (auto& m : congestion_metrics(r.congestion)) r.metrics.push_back(std::move(m));
  r.series_names = sampler->names();
  r.series_times = sampler->times();
  r.series_values = sampler->values();
  return r;
}

}  // namespace fabricsim
