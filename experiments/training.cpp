#include "experiments/training.hpp"

#include <fmt/format.h>
#include <map>
#include <memory>
#include <set>

#include "experiments/nccl_tests.hpp"
#include "topo/communicator.hpp"

namespace fabricsim {

namespace {

struct TrainingRun {
  WorkloadResult workload;
  std::vector<std::pair<std::string, std::uint64_t>> counters;
  std::vector<std::string> errors;
  std::vector<LinkLoad> bottlenecks;
  std::vector<TierCongestion> congestion;
  std::vector<Metric> level;  // the packet level's own figures (drops, marks, CNPs, ...)
  Time sim_time{};
  std::uint64_t events = 0;
  std::uint64_t fingerprint = 0;
  int channels = 0;
  std::vector<std::string> series_names;
  std::vector<Time> series_times;
  std::vector<std::vector<double>> series_values;
};

// The link sampler's series as per-link tracks: a cumulative byte count becomes the
// utilization of the interval before each sample (bytes / (line rate x interval)).
void collect_network_tracks(const GaugeSampler& sampler,
                            const std::map<std::string, std::pair<std::string, double>>& network,
                            TrainingTrace& trace) {
  trace.times = sampler.times();
  std::map<std::string, TrainingTrace::Link> links;
  for (std::size_t i = 0; i < sampler.names().size(); ++i) {
    const std::string& gauge = sampler.names()[i];
    const std::size_t dot = gauge.rfind('.');
    const std::string link = gauge.substr(0, dot), what = gauge.substr(dot + 1);
    const auto& [layer, bytes_per_s] = network.at(link);
    TrainingTrace::Link& l = links[link];
    l.layer = layer;
    l.name = link;
    const std::vector<double>& v = sampler.values()[i];
    if (what == "queue_bytes") {
      l.queue_bytes = v;
    } else if (what == "utilization") {
      l.utilization = v;
    } else {  // tx_bytes_cumulative
      l.utilization.assign(v.size(), 0.0);
      for (std::size_t k = 1; k < v.size(); ++k) {
        const double dt = (trace.times[k] - trace.times[k - 1]).seconds();
        if (dt > 0 && bytes_per_s > 0) l.utilization[k] = (v[k] - v[k - 1]) / (bytes_per_s * dt);
      }
    }
  }
  for (auto& [name, l] : links) trace.links.push_back(std::move(l));
}

// PFC pause spans of the network's ports ("<port>.prio<p>_paused"), in the order they began.
void collect_pauses(const ProbeRegistry& probes,
                    const std::map<std::string, std::pair<std::string, double>>& network,
                    TrainingTrace& trace) {
  for (const SpanRecord& sp : probes.spans()) {
    const std::string& name = probes.span_name_of(sp.name);
    const std::size_t dot = name.rfind(".prio");
    if (dot == std::string::npos || !name.ends_with("_paused")) continue;
    const std::string port = name.substr(0, dot);
    const auto it = network.find(port);
    trace.pauses.push_back({it != network.end() ? it->second.first : std::string("network"), port,
                            std::stoi(name.substr(dot + 5)), sp.start,
                            std::min(sp.end, trace.end)});
  }
}

TrainingRun simulate(const Scenario& s, const BuiltCluster& cluster, const WorkloadSpec& spec,
                     ProgressFn progress, std::string phase, TrainingTrace* trace, bool sample) {
  Simulation sim(s.seed);
  const std::unique_ptr<Fabric> fabric = make_fabric(sim, s, cluster);
  CollectiveEngine engine(sim, *fabric, s.gpu, s.nccl, s.execution);
  const int servers = std::max(1, s.cluster.servers);
  const int gpus = static_cast<int>(s.cluster.server.gpus.size());
  const CommunicatorOptions base = communicator_options(s);
  const int stages = std::max(1, spec.pipeline_stages);
  const int replicas = servers / stages;
  WorkloadComms comms;
  std::vector<double> speed(static_cast<std::size_t>(servers), 1.0);
  for (int srv = 0; srv < servers; ++srv) {
    CommunicatorOptions o = base;
    o.server_order = ServerOrder::kHostfile;
    o.server_list.clear();
    o.first_rank = srv * gpus;
    o.ranks = gpus;
    comms.tp.push_back(
        engine.add_communicator(build_communicator(cluster.topology, cluster.routing, o)));
    for (int g = 0; g < gpus; ++g)
      speed[static_cast<std::size_t>(srv)] = std::min(
          speed[static_cast<std::size_t>(srv)],
          spec.gpu_speed.empty() ? 1.0 : spec.gpu_speed[static_cast<std::size_t>(srv * gpus + g)]);
  }
  // DP: GPU g of every replica of a stage. PP: a server's GPUs, then its next-stage peer's.
  comms.dp.resize(static_cast<std::size_t>(stages));
  for (int p = 0; p < stages && replicas > 1; ++p) {
    for (int g = 0; g < gpus; ++g) {
      CommunicatorOptions o = base;
      for (int d = 0; d < replicas; ++d) o.gpus.push_back((p * replicas + d) * gpus + g);
      comms.dp[static_cast<std::size_t>(p)].push_back(
          engine.add_communicator(build_communicator(cluster.topology, cluster.routing, o)));
    }
  }
  for (int srv = 0; srv + replicas < servers && stages > 1; ++srv) {
    CommunicatorOptions o = base;
    o.server_order = ServerOrder::kHostfile;
    o.server_list.clear();
    for (int g = 0; g < gpus; ++g) o.gpus.push_back(srv * gpus + g);
    for (int g = 0; g < gpus; ++g) o.gpus.push_back((srv + replicas) * gpus + g);
    comms.pp.push_back(
        engine.add_communicator(build_communicator(cluster.topology, cluster.routing, o)));
  }
  const std::uint32_t dp_first =
      comms.dp.front().empty() ? comms.tp.front() : comms.dp.front().front();
  WorkloadDriver driver(sim, engine, spec, std::move(comms), speed);
  if (trace != nullptr) driver.enable_trace();
  // The training step's own gauges (not those of the one-server run the efficiency needs).
  std::unique_ptr<GaugeSampler> sampler;
  if (sample) sampler = record_timeseries(sim, s);
  // The trace's network tracks: its own sampler over every network link, and PFC pause spans.
  std::unique_ptr<GaugeSampler> link_sampler;
  std::map<std::string, std::pair<std::string, double>> network;  // link -> layer, bytes/s
  if (trace != nullptr) {
    std::vector<std::string> gauges;
    fabric->for_each_link([&](const Fabric::Link& l) {
      if (l.layer == "NVLink" || l.layer == "PCIe" || l.layer == "host memory") return;
      network.emplace(std::string(l.name), std::pair(std::string(l.layer), l.bytes_per_s));
      for (const char* g : {".queue_bytes", ".tx_bytes_cumulative", ".utilization"})
        gauges.push_back(fmt::format("{}{}", l.name, g));
    });
    trace->interval = s.simulation.sample_interval > Time::zero() ? s.simulation.sample_interval
                                                                  : kTraceSampleInterval;
    link_sampler = std::make_unique<GaugeSampler>(sim, gauges, trace->interval);
    sim.probes().record_spans(true);
  }
  driver.start();
  ProgressWatch watch(
      sim, std::move(progress), [&driver] { return driver.fraction_done(); }, std::move(phase));
  sim.run_until(s.simulation.stop_time);
  watch.finish();
  TrainingRun r;
  r.workload = driver.result();
  // Collective primitives onto per-GPU tracks (4 + the GPU's index in its server).
  for (const StepSpan& st : r.workload.steps) {
    const auto gpu = static_cast<int>(engine.layout(st.comm).ranks[st.rank].gpu);
    r.workload.trace.push_back(
        {"primitive", gpu / gpus, 4 + gpu % gpus, st.start, st.end - st.start});
  }
  r.sim_time = sim.now();
  r.events = sim.events_processed();
  r.fingerprint = sim.fingerprint();
  r.channels = engine.channels(dp_first);
  if (sampler) {
    r.series_names = sampler->names();
    r.series_times = sampler->times();
    r.series_values = sampler->values();
  }
  if (trace != nullptr) {
    trace->spans = std::move(r.workload.trace);  // up to 200,000 primitives: moved
    trace->primitive_limit = WorkloadDriver::kTracePrimitiveLimit;
    trace->primitives_dropped = engine.steps_dropped();
    trace->end = sim.now();
    collect_network_tracks(*link_sampler, network, *trace);
    collect_pauses(sim.probes(), network, *trace);
  }
  for (const auto& c : sim.probes().counters())
    r.counters.emplace_back(std::string(c.name), c.value);
  for (const auto& e : fabric->errors())
    r.errors.push_back(fmt::format("{} at {}", e.text, to_string(e.time)));
  r.bottlenecks = bottleneck_summary(*fabric, sim.now(), r.counters);
  if (s.fidelity != Fidelity::kFlow) {
    r.congestion = congestion_by_tier(*fabric, sim.now(), r.counters);
    // What a buyer compares across RoCE and InfiniBand options; the solver's work counters
    // of the hybrid's flow part are left out.
    static const std::set<std::string> kept = {"dropped_packets", "ecn_marked_packets",
                                               "cnp_sent",        "retransmitted_packets",
                                               "qp_errors",       "peak_switch_queue_bytes"};
    for (Metric& m : fabric->level_metrics())
      if (kept.contains(m.name)) r.level.push_back(std::move(m));
    for (Metric& m : congestion_metrics(r.congestion)) r.level.push_back(std::move(m));
  }
  return r;
}

}  // namespace

RunResult run_training(const Scenario& scenario, const BuiltCluster& cluster, ProgressFn progress,
                       TrainingTrace* trace) {
  if (scenario.cluster.servers < 1)
    throw std::invalid_argument("a [workload] needs a [server] model (GPUs to train on)");
  const bool study = !scenario.study_ops.empty();
  const TrainingRun full = simulate(scenario, cluster, scenario.workload, progress,
                                    study ? "training step" : "", trace, true);

  // The same per-server work on one server alone: no gradient traffic across servers.
  Scenario one = scenario;
  one.cluster.servers = 1;
  one.cluster.fabric.shape = StarSpec{};
  one.cluster.fabric.switch_ports = 0;
  one.cluster.fabric.rail_optimized = false;
  one.workload.tokens_per_step = std::max<std::uint64_t>(
      1, scenario.workload.tokens_per_step / static_cast<std::uint64_t>(scenario.cluster.servers));
  one.workload.gpu_speed.resize(scenario.cluster.server.gpus.size(), 1.0);
  one.workload.pipeline_stages = 1;  // one server holds one stage's work
  const BuiltCluster single(one);
  const TrainingRun alone = simulate(one, single, one.workload, study ? progress : ProgressFn{},
                                     "one server alone", nullptr, false);

  RunResult r;
  const WorkloadResult& w = full.workload;
  r.status = w.completed ? "completed" : "time-limit";
  r.errors = full.errors;
  if (!w.completed)
    r.errors.push_back(fmt::format("the training step did not finish by simulation.stop_time ({})",
                                   to_string(scenario.simulation.stop_time)));
  r.sim_time = full.sim_time;
  r.bottleneck_span = full.sim_time;
  r.events = full.events;
  fold_fingerprint(r.fingerprint, full.fingerprint);
  fold_fingerprint(r.fingerprint, alone.fingerprint);
  r.counters = full.counters;
  r.bottlenecks = full.bottlenecks;
  r.congestion = full.congestion;
  r.series_names = full.series_names;
  r.series_times = full.series_times;
  r.series_values = full.series_values;
  const double n = scenario.cluster.servers;
  const double dp_s = w.dp_active.seconds() / std::max(1, scenario.workload.pipeline_stages);
  // Bytes each NIC received from the network per step, from the hosts' NICs' counters (both
  // levels count what crossed the network, whichever algorithm the tuner chose; a switch's
  // SHARP aggregation node is an endpoint with counters too, but no NIC of a server).
  const auto& g = cluster.topology.graph();
  std::set<std::string> host_nics;
  for (const Vertex v : cluster.topology.endpoints())
    host_nics.insert(g[v].name + ".rx_payload_bytes");
  const double nics = static_cast<double>(cluster.topology.endpoints().size());
  double received = 0;
  for (const auto& [name, value] : full.counters)
    if (host_nics.contains(name)) received += static_cast<double>(value);
  const double per_nic_bytes = received / nics / scenario.workload.steps;
  const double single_tps = alone.workload.tokens_per_s;
  r.metrics = {
      {"step_time_ms", w.step_ms, "ms"},
      {"compute_ms", w.compute_ms, "ms"},
      {"exposed_comm_ms", w.exposed_comm_ms, "ms"},
      {"overlapped_comm_ms", w.overlapped_comm_ms, "ms"},
      {"allreduce_ms_per_step", w.tp_allreduce_ms + w.dp_allreduce_ms, "ms"},
      {"allreduce_cross_node_ms", w.dp_allreduce_ms, "ms"},
      // What each NIC received per step over the time the gradient AllReduce ran, whatever
      // the transport (RoCE, InfiniBand, TCP). roce_throughput_gbps: the same value under its
      // old name, kept for one release.
      {"cross_node_throughput_gbit_per_s", dp_s > 0 ? per_nic_bytes * 8 / dp_s / 1e9 : 0, "Gb/s"},
      {"roce_throughput_gbps", dp_s > 0 ? per_nic_bytes * 8 / dp_s / 1e9 : 0, "Gb/s"},
      {"pfc_pause_frames", static_cast<double>(pfc_pause_frames(r.counters)), ""},
      {"tokens_per_s", w.tokens_per_s, "tokens/s"},
      {"single_server_tokens_per_s", single_tps, "tokens/s"},
      {"scaling_efficiency", single_tps > 0 ? w.tokens_per_s / (n * single_tps) : 0, ""},
      {"collectives_per_step", static_cast<double>(w.collectives) / scenario.workload.steps, ""},
      {"compute_slowdown_overlapped",
       compute_slowdown(scenario.gpu, full.channels, Bandwidth{}, false), ""},
  };
  for (const Metric& m : full.level) r.metrics.push_back(m);
  if (scenario.workload.pipeline_stages > 1) {
    r.metrics.push_back({"pp_send_ms", w.pp_send_ms, "ms"});
    r.metrics.push_back({"pipeline_bubble_ms", w.pp_wait_ms, "ms"});
  }
  for (const auto& binary : scenario.study_ops) {
    for (const Bytes size : scenario.study_sizes) {
      NcclTestsArgs a;
      a.binary = binary;
      a.op = *parse_perf_binary(binary);
      a.min_bytes = a.max_bytes = static_cast<std::uint64_t>(size.count());
      a.placements = 1;  // the metric is the out-of-place busbw
      const NcclTestsResult t = run_nccl_tests(
          scenario, cluster, a, progress, fmt::format("study: {} {}", binary, to_string(size)));
      const std::string op = binary.substr(0, binary.size() - 5);  // "all_reduce"
      r.metrics.push_back({fmt::format("busbw_{}_{}", op, to_string(size)),
                           t.rows.empty() ? 0 : t.rows.front().busbw[0], "GB/s"});
      if (!t.rows.empty() && scenario.fidelity != Fidelity::kFlow) {
        // What PFC and ECN did in that collective (its iterations, warm-up included).
        const CongestionTotals c = congestion_totals(t.rows.front().congestion);
        r.metrics.push_back({fmt::format("pfc_pause_frames_{}_{}", op, to_string(size)),
                             double(c.pause_frames), ""});
        r.metrics.push_back({fmt::format("ecn_marked_packets_{}_{}", op, to_string(size)),
                             double(c.ecn_marked), ""});
      }
      for (const auto& e : t.errors) r.errors.push_back(e);
    }
  }
  if (!scenario.study_ops.empty()) {
    const TopologySummary t = analyse(cluster.topology, cluster.routing, scenario.analysis);
    r.metrics.push_back({"switches", static_cast<double>(t.switches), ""});
    r.metrics.push_back({"cables", static_cast<double>(t.host_cables + t.fabric_cables), ""});
    r.metrics.push_back({"optical_cables", static_cast<double>(t.optical_cables), ""});
    r.metrics.push_back({"bisection_gbps", t.bisection_gbps, "Gb/s"});
    if (t.cost.contains("total")) {
      r.metrics.push_back({"cost_total", t.cost.at("total"), ""});
      r.metrics.push_back({"cost_per_token_per_s",
                           w.tokens_per_s > 0 ? t.cost.at("total") / w.tokens_per_s : 0, ""});
    }
  }
  return r;
}

}  // namespace fabricsim
