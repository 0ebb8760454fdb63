#include "experiments/calibration.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "experiments/nccl_tests.hpp"
#include "experiments/run.hpp"
#include "topo/server.hpp"
#include "validation/parsers.hpp"

namespace fabricsim {

namespace {

// The binary from the output's own line, else from the file name ("all_gather_perf.txt").
std::string binary_of(const validation::NcclTestsOutput& o, const std::filesystem::path& file) {
  if (!o.binary.empty()) return o.binary;
  const std::string stem = file.stem().string();
  for (const char* b : {"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf",
                        "broadcast_perf", "reduce_perf", "alltoall_perf", "sendrecv_perf"})
    if (stem.find(b) != std::string::npos) return b;
  return {};
}

}  // namespace

MeasurementSet load_measurements(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir))
    throw std::invalid_argument(fmt::format("{}: not a folder of measurements", dir.string()));
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  MeasurementSet set;
  // Rows of fabricsim-bench JSON: kept apart until the end, since the harness writes the same
  // rows as nccl-tests text beside it (--out-dir).
  std::vector<Measurement> json_rows;
  const auto add_perftest = [&](const validation::PerftestOutput& o, const std::string& name) {
    if (!o.latency) {
      double peak = 0;
      for (const auto& r : o.rows) peak = std::max(peak, r.bw_avg_gbps);
      set.rdma_gbps.emplace_back(name, peak);  // diagnose's evidence, whatever the test
    }
    const std::string binary = perftest_binary(o.test);
    if (binary.empty())
      set.notes.push_back(fmt::format(
          "{}: {}: not calibration data: only RDMA writes and sends are single messages", name,
          o.test));
    for (const auto& r : binary.empty() ? std::vector<validation::PerftestRow>{} : o.rows) {
      const std::string source = fmt::format("{}:{}", name, r.line);
      // Latency rows: the typical (median) one-way time. Bandwidth rows: the stream's time per
      // message, bytes / average bandwidth.
      const double us = o.latency ? r.t_typical
                        : r.bw_avg_gbps > 0
                            ? static_cast<double>(r.bytes) * 8 / (r.bw_avg_gbps * 1e3)
                            : 0;
      if (us <= 0) {
        set.notes.push_back(fmt::format("{}: skipped: no time or bandwidth", source));
        continue;
      }
      set.collectives.push_back({source, binary, CollOp::kSendRecv, 2, r.bytes, us});
    }
    set.notes.push_back(fmt::format("{}: {} ({} rows)", name, o.test, o.rows.size()));
  };
  for (const auto& f : files) {
    const std::string text = read_input_file(f, "measurement file");
    const std::string name = f.string();
    const std::string tool = validation::harness_json_tool(text);
    if (tool == "fabricsim-bench") {
      const bench::Report r = validation::parse_bench_json(text, name);
      std::size_t used = 0;
      for (std::size_t i = 0; i < r.collectives.size(); ++i) {
        const auto& c = r.collectives[i];
        const std::string binary = c.op + "_perf";
        const auto op = parse_perf_binary(binary);
        if (!op) {
          set.notes.push_back(
              fmt::format("{}: collectives[{}]: skipped: unknown op '{}'", name, i, c.op));
          continue;
        }
        if (c.wrong > 0) {
          set.notes.push_back(fmt::format("{}: collectives[{}]: skipped: {} wrong result elements",
                                          name, i, c.wrong));
          continue;
        }
        json_rows.push_back({fmt::format("{}:collectives[{}]", name, i), binary, *op, r.ranks(),
                             c.bytes, c.time_us});
        ++used;
      }
      if (r.micro) set.micro.emplace_back(name, *r.micro);
      set.notes.push_back(fmt::format("{}: fabricsim-bench on {} x {} ({} ranks), {} rows{}", name,
                                      r.processes, r.device, r.ranks(), used,
                                      r.micro ? ", single-GPU micro figures" : ""));
    } else if (tool == "fabricsim-verbs-bench") {
      add_perftest(validation::parse_verbs_bench_json(text, name), name);
    } else if (validation::looks_like_results_json(text)) {
      auto r = validation::parse_results_json(text, name);
      const std::vector<std::pair<std::string, std::uint64_t>> counters(r.counters.begin(),
                                                                        r.counters.end());
      set.pause_frames.emplace_back(name, pfc_pause_frames(counters));
      set.notes.push_back(fmt::format("{}: fabricsim {} results ({}), {} link loads", name,
                                      r.version, r.status, r.bottlenecks.size()));
      set.simulations.emplace_back(name, std::move(r));
    } else if (validation::looks_like_nccl_tests(text)) {
      const auto o = validation::parse_nccl_tests(text, name);
      const std::string binary = binary_of(o, f);
      const auto op = parse_perf_binary(binary);
      if (!op) {
        set.notes.push_back(
            fmt::format("{}: skipped: cannot tell which *_perf binary wrote it", name));
        continue;
      }
      if (o.ranks == 0) {
        set.notes.push_back(fmt::format("{}: skipped: no '#  Rank' lines, so no rank count", name));
        continue;
      }
      std::size_t used = 0;
      for (const auto& r : o.rows) {
        if (r.wrong[0].value_or(0) > 0) {
          set.notes.push_back(
              fmt::format("{}:{}: skipped: {} wrong result elements", name, r.line, *r.wrong[0]));
          continue;
        }
        set.collectives.push_back(
            {fmt::format("{}:{}", name, r.line), binary, *op, o.ranks, r.bytes, r.time_us[0]});
        ++used;
      }
      set.notes.push_back(fmt::format("{}: {} on {} ranks, {} sizes", name, binary, o.ranks, used));
    } else if (validation::looks_like_perftest(text)) {
      add_perftest(validation::parse_perftest(text, name), name);
    } else if (validation::looks_like_nvidia_smi_topo(text)) {
      TopoMatrix t;
      try {
        t = parse_topo_matrix(text);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("{}: {}", name, e.what()));
      }
      // GPU pairs that talk over PCIe while others use NVLink.
      int nv = 0, other = 0;
      for (std::size_t a = 0; a < t.devices.size(); ++a)
        for (std::size_t b = a + 1; b < t.devices.size(); ++b)
          if (t.devices[a].starts_with("GPU") && t.devices[b].starts_with("GPU"))
            (t.relation[a][b].starts_with("NV") ? nv : other)++;
      if (nv > 0 && other > 0)
        set.topology_findings.push_back(fmt::format(
            "{}: {} GPU pairs connect through PCIe while {} use NVLink", name, other, nv));
      set.notes.push_back(fmt::format("{}: nvidia-smi topo, {} devices", name, t.devices.size()));
    } else if (validation::looks_like_ethtool_stats(text)) {
      const auto s = validation::parse_ethtool_stats(text, name);
      set.pause_frames.emplace_back(name, s.pause_frames());
      set.notes.push_back(fmt::format("{}: ethtool -S, {} pause frames, {} ECN-marked, {} CNP",
                                      name, s.pause_frames(), s.ecn_marked(), s.cnp()));
    } else if (validation::looks_like_nccl_debug_log(text)) {
      const auto l = validation::parse_nccl_debug_log(text, name);
      set.notes.push_back(fmt::format("{}: NCCL {} log, {} rings, {} coll channels", name,
                                      l.version, l.rings.size(), l.coll_channels));
    } else {
      set.notes.push_back(fmt::format("{}: skipped: not a format fabricsim reads", name));
    }
  }
  // A JSON row counts only for a series (binary, ranks) no nccl-tests text holds.
  std::set<std::pair<std::string, int>> text_series;
  for (const auto& m : set.collectives) text_series.emplace(m.binary, m.ranks);
  std::size_t duplicates = 0;
  for (auto& m : json_rows) {
    if (text_series.count({m.binary, m.ranks}) > 0)
      ++duplicates;
    else
      set.collectives.push_back(std::move(m));
  }
  if (duplicates > 0)
    set.notes.push_back(fmt::format(
        "{} fabricsim-bench JSON rows not used: their series are read from nccl-tests text",
        duplicates));
  return set;
}

// ---------------------------------------------------------------- parameters

// The schema's rows with a FitSpec (scenario/schema.cpp), in their fit order: per link class
// the flow level's bandwidth efficiency (beta) and NCCL's step latency per protocol (alpha, the
// tuner's hwLat); per protocol the launch latency; the NIC's per-message overhead and rate.
// The PCIe class only carries collectives on servers without NVLink (GPU to GPU peer to peer):
// its efficiency is usually set directly from fabricsim-bench's host copies, and fitted when
// asked for. The step latencies separate from the launch latency by the data only with sweeps
// at several rank counts on each link class (the time of a small operation is launch + steps x
// step latency, and the steps grow with the ranks); with fewer, the priors share the change
// (validation/fit.hpp). Left out, the launch latencies absorb the steps' share of mid sizes and
// leave their physical range.
std::vector<CalibrationParameter> calibration_parameters() {
  std::vector<std::pair<int, CalibrationParameter>> ordered;
  for (const auto& k : scenario_schema())
    if (k.fit.use != FitSpec::Use::kNone)
      ordered.push_back({k.fit.order,
                         {k.path, k.fit.min, k.fit.max, k.type == KeyType::kTime, k.fit.start,
                          k.fit.use, k.fit.low, k.fit.high, std::string(k.fit.basis)}});
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<CalibrationParameter> out;
  for (auto& [order, p] : ordered) out.push_back(std::move(p));
  return out;
}

std::vector<CalibrationParameter> calibration_parameters(const std::vector<std::string>& keys,
                                                         const std::vector<Measurement>& rows) {
  using Use = CalibrationParameter::Use;
  const auto all = calibration_parameters();
  if (keys.empty()) {
    const auto any = [&](bool (Measurement::*kind)() const) {
      return std::any_of(rows.begin(), rows.end(),
                         [&](const Measurement& m) { return (m.*kind)(); });
    };
    const bool latency = any(&Measurement::rdma_latency), stream = any(&Measurement::rdma_stream);
    std::vector<CalibrationParameter> out;
    for (const auto& p : all)
      if (p.use == Use::kDefault || (p.use == Use::kWithRdmaLatencyRows && latency) ||
          (p.use == Use::kWithRdmaStreamRows && stream))
        out.push_back(p);
    return out;
  }
  if (keys.size() == 1 && keys.front() == "all") return all;
  std::vector<CalibrationParameter> out;
  for (const auto& k : keys) {
    const auto it = std::find_if(all.begin(), all.end(), [&](const auto& p) { return p.key == k; });
    if (it == all.end()) {
      std::string known;
      for (const auto& p : all) known += " " + p.key;
      throw std::invalid_argument(
          fmt::format("--fit: unknown parameter '{}' (known: all{})", k, known));
    }
    if (std::none_of(out.begin(), out.end(), [&](const auto& p) { return p.key == k; }))
      out.push_back(*it);
  }
  return out;
}

namespace {

// The number a calibration key sets (the schema's KeyNumber); a key without one is a
// programming error.
const KeyNumber& key_number(const std::string& key) {
  const KeySpec* k = find_scenario_key(key);
  if (k == nullptr || !k->number)
    throw std::logic_error("scenario key " + key + " has no number calibration can set");
  return k->number;
}

}  // namespace

double CalibrationParameter::get(const Scenario& s) const {
  return key_number(key).get(s);
}

std::string CalibrationParameter::at_bound(double v) const {
  // Within 0.1 % of a bound (the fit works in ln p: a relative distance).
  if (v <= min * 1.001)
    return fmt::format("at its lower bound {}: the measurements ask for less", min);
  if (v >= max * 0.999)
    return fmt::format("at its upper bound {}: the measurements ask for more", max);
  return {};
}

void CalibrationParameter::set(Scenario& s, double v) const {
  key_number(key).set(s, v);
}

std::string CalibrationParameter::outside_range(double v) const {
  if (v >= low && v <= high) return {};
  return fmt::format("{} = {:.4g} is outside its physical range {:.4g} to {:.4g} ({})", key, v, low,
                     high, basis);
}

validation::FitParameter CalibrationParameter::fit_parameter(const Scenario& s) const {
  const double initial = get(s) >= min ? get(s) : start;
  return {key, initial, min, max, std::clamp(initial, low, high), std::log(high / low) / 2};
}

std::vector<std::string> Calibration::problems() const {
  std::vector<std::string> out;
  if (!fit.converged) out.push_back("the fit did not converge");
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!fit.identifiable[i]) continue;
    const double v = fit.values[i];
    if (const std::string b = params[i].at_bound(v); !b.empty())
      out.push_back(params[i].key + " " + b);
    else if (const std::string r = params[i].outside_range(v); !r.empty())
      out.push_back(r);
  }
  return out;
}

// ---------------------------------------------------------------- direct estimates

void DirectEstimate::apply(Scenario& s) const {
  key_number(key).set(s, value);
}

std::string DirectEstimate::toml_value() const {
  // In the key's number unit (KeyNumber): GB/s for a bandwidth.
  const KeySpec* k = find_scenario_key(key);
  return k != nullptr && k->type == KeyType::kBandwidth ? fmt::format("\"{:.1f}GB/s\"", value)
                                                        : fmt::format("{:.5f}", value);
}

double host_path_gbs(const ServerSpec& sv) {
  Bandwidth path = sv.gpu_pcie.rate();
  if (!sv.gpus.empty() && sv.gpus.front().pcie_switch >= 0)
    path = std::min(path, sv.uplink_pcie.rate());
  return static_cast<double>(path.bps()) / 8e9;
}

std::vector<DirectEstimate> direct_estimates(const Scenario& s, const MeasurementSet& set,
                                             std::vector<std::string>& notes) {
  std::vector<DirectEstimate> out;
  if (set.micro.empty()) return out;
  double h2d = 0, d2h = 0, d2d = 0;
  std::string files;
  for (const auto& [file, m] : set.micro) {
    h2d += m.h2d_gbs;
    d2h += m.d2h_gbs;
    d2d += m.d2d_gbs;
    files += (files.empty() ? "" : ", ") + file;
  }
  const auto n = static_cast<double>(set.micro.size());
  h2d /= n;
  d2h /= n;
  d2d /= n;
  // HBM: a device-to-device copy reads and writes every byte.
  if (d2d > 0)
    out.push_back({"nccl.gpu_hbm", 2 * d2d,
                   fmt::format("2 x device-to-device copy {:.1f} GB/s ({})", d2d, files)});
  // PCIe: the flow level moves a host copy at the host path's payload rate times the
  // efficiency.
  if (s.cluster.servers <= 0 || s.cluster.server.gpus.empty()) {
    notes.push_back("micro: no PCIe efficiency: the scenario has no server model");
    return out;
  }
  const ServerSpec& sv = s.cluster.server;
  const double path_gbs = host_path_gbs(sv);
  const double copy = (h2d + d2h) / 2;
  if (copy > path_gbs) {
    notes.push_back(fmt::format(
        "micro: host copies ({:.1f} GB/s) exceed the scenario's PCIe path ({:.1f} GB/s): its "
        "PCIe generation or width is not the measured machine's; efficiency not set",
        copy, path_gbs));
  } else if (copy > 0) {
    out.push_back(
        {"flow.efficiency_pcie", std::max(0.01, copy / path_gbs),
         fmt::format("host copies h2d {:.1f}, d2h {:.1f} GB/s over a {:.1f} GB/s PCIe "
                     "Gen{} x{} path ({})",
                     h2d, d2h, path_gbs, sv.gpu_pcie.generation, sv.gpu_pcie.width, files)});
  }
  return out;
}

// ---------------------------------------------------------------- simulation

std::vector<double> simulate_measurements(const Scenario& scenario,
                                          const std::vector<Measurement>& measurements) {
  return simulate_measurements(scenario, BuiltCluster(scenario), measurements);
}

std::vector<double> simulate_measurements(const Scenario& s, const BuiltCluster& cluster,
                                          const std::vector<Measurement>& measurements) {
  std::vector<double> out;
  // One simulation per (binary, ranks, size): measurements repeat them across files.
  std::map<std::tuple<std::string, int, std::uint64_t>, double> done;
  for (const Measurement& m : measurements) {
    const auto key = std::make_tuple(m.binary, m.ranks, m.bytes);
    if (const auto it = done.find(key); it != done.end()) {
      out.push_back(it->second);
      continue;
    }
    const double us = m.rdma_stream()    ? rdma_stream_message_us(s, cluster, m.bytes)
                      : m.rdma_latency() ? rdma_message_latency_us(s, cluster, m.bytes)
                                         : nccl_tests_row_us(s, cluster, m);
    done.emplace(key, us);
    out.push_back(us);
  }
  return out;
}

double nccl_tests_row_us(const Scenario& s, const BuiltCluster& cluster, const Measurement& m) {
  const int per_server = s.cluster.servers > 0 ? static_cast<int>(s.cluster.server.gpus.size()) : 1;
  const int servers = std::max(1, s.cluster.servers);
  NcclTestsArgs a;
  a.binary = m.binary;
  a.op = m.op;
  a.min_bytes = a.max_bytes = m.bytes;
  if (m.ranks <= per_server) {
    a.ngpus = m.ranks;
    a.nprocs = 1;
  } else if (m.ranks % per_server == 0 && m.ranks / per_server <= servers) {
    a.ngpus = per_server;
    a.nprocs = m.ranks / per_server;
  } else {
    throw std::invalid_argument(
        fmt::format("{}: {} ranks do not fit the scenario's {} servers of {} GPUs", m.source,
                    m.ranks, servers, per_server));
  }
  const NcclTestsResult r = run_nccl_tests(s, cluster, a);
  if (r.rows.empty() || !r.errors.empty())
    throw std::runtime_error(fmt::format("{}: the simulation of this row failed", m.source));
  return r.rows.front().time_us[0];
}

Calibration calibrate(const Scenario& s, const std::vector<Measurement>& measurements,
                      const std::vector<std::string>& keys) {
  return calibrate(s, BuiltCluster(s), measurements, keys);
}

Calibration calibrate(const Scenario& s, const BuiltCluster& cluster,
                      const std::vector<Measurement>& measurements,
                      const std::vector<std::string>& keys) {
  Calibration c;
  c.params = calibration_parameters(keys, measurements);
  std::vector<validation::FitParameter> fp;
  for (const auto& p : c.params) fp.push_back(p.fit_parameter(s));
  std::vector<double> measured;
  for (const auto& m : measurements) measured.push_back(m.time_us);
  c.fit = validation::fit(fp, measured, [&](const std::vector<double>& v) {
    Scenario t = s;
    t.fidelity = Fidelity::kFlow;  // the efficiencies are flow-level parameters
    for (std::size_t i = 0; i < v.size(); ++i) c.params[i].set(t, v[i]);
    return simulate_measurements(t, cluster, measurements);
  });
  return c;
}

Split holdout_split(const std::vector<Measurement>& all, double fraction) {
  Split s;
  if (fraction <= 0) {
    s.fit = all;
    return s;
  }
  // Every k-th row of each (binary, ranks) series, k = round(1 / fraction), is held out,
  // starting with the second, so the ends of each sweep stay in the fit.
  const int k = std::max(2, static_cast<int>(std::lround(1 / fraction)));
  std::map<std::pair<std::string, int>, int> index;
  for (const auto& m : all) {
    const int i = index[{m.binary, m.ranks}]++;
    ((i % k) == 1 ? s.held : s.fit).push_back(m);
  }
  return s;
}

std::vector<DirectEstimate> apply_direct_estimates(Scenario& s, const MeasurementSet& set,
                                                   std::vector<std::string>& notes) {
  const auto direct = direct_estimates(s, set, notes);
  for (const auto& d : direct) d.apply(s);
  return direct;
}

namespace {

void add_rows(const std::vector<Measurement>& ms, const std::vector<double>& sim,
              const std::string& role, std::vector<ValidationRow>& rows) {
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const auto& m = ms[i];
    rows.push_back(
        {m.binary, m.ranks, m.bytes, m.time_us, sim[i], bus_factor(m.op, m.ranks), role});
  }
}

ValidationErrors errors_of(const std::vector<Measurement>& ms, const std::vector<double>& sim) {
  ValidationErrors e;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const double a = std::abs(sim[i] / ms[i].time_us - 1) * 100;
    e.mape += a;
    e.worst = std::max(e.worst, a);
  }
  e.n = ms.size();
  if (e.n > 0) e.mape /= static_cast<double>(e.n);
  return e;
}

}  // namespace

Validation validate(Scenario s, const MeasurementSet& set, double holdout,
                    const std::vector<std::string>& fit_keys, std::vector<std::string>& notes) {
  if (holdout < 0 || holdout >= 1)
    throw std::invalid_argument("--holdout must be a fraction in [0, 1)");
  Validation v;
  const Split parts = holdout_split(set.collectives, holdout);
  v.fit_rows = parts.fit.size();
  v.held_rows = parts.held.size();
  const BuiltCluster cluster(s);  // neither calibration nor fidelity changes the topology
  if (!parts.held.empty()) {
    v.direct = apply_direct_estimates(s, set, notes);
    // Fit on the rest, then judge on what the fit did not see.
    const Calibration cal = calibrate(s, cluster, parts.fit, fit_keys);
    for (std::size_t i = 0; i < cal.params.size(); ++i) cal.params[i].set(s, cal.fit.values[i]);
    v.fit_problems = cal.problems();
    s.fidelity = Fidelity::kFlow;
  }
  const std::vector<double> sim_fit = simulate_measurements(s, cluster, parts.fit);
  add_rows(parts.fit, sim_fit, "fit", v.rows);
  std::vector<double> sim_held;
  if (!parts.held.empty()) {
    sim_held = simulate_measurements(s, cluster, parts.held);
    add_rows(parts.held, sim_held, "held-out", v.rows);
  }
  v.judged = parts.held.empty() ? errors_of(parts.fit, sim_fit) : errors_of(parts.held, sim_held);
  return v;
}

}  // namespace fabricsim
