#include "cli/calibration.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "cli/experiment.hpp"
#include "cli/html_report.hpp"
#include "cli/nccl_tests.hpp"
#include "cli/output.hpp"
#include "topologies/server.hpp"
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

namespace {

constexpr const char* kProtos[] = {"ll", "ll128", "simple"};  // NcclConfig's protocol order
constexpr const char* kLinks[] = {"nvlink", "pcie", "net"};   // and link-class order

// The [nccl] table's latency a key names: launch_latency.<proto> or step_latency.<proto>_<link>
// (const or not, as the config).
template <class Config>
auto nccl_latency(Config& c, const std::string& key) -> decltype(&c.launch_latency_us[0]) {
  for (int p = 0; p < 3; ++p) {
    if (key == fmt::format("nccl.launch_latency.{}", kProtos[p])) return &c.launch_latency_us[p];
    for (int l = 0; l < 3; ++l)
      if (key == fmt::format("nccl.step_latency.{}_{}", kProtos[p], kLinks[l]))
        return &c.step_latency_us[p][l];
  }
  return nullptr;
}

// The scenario's plain number a key names (efficiencies, NCCL latencies in us, the NIC message
// rate), else nullptr (const or not, as the scenario).
template <class S>
auto scenario_number(S& s, const std::string& key) -> decltype(&s.flow_efficiency.nvlink) {
  if (key == "flow.efficiency_nvlink") return &s.flow_efficiency.nvlink;
  if (key == "flow.efficiency_network") return &s.flow_efficiency.network;
  if (key == "flow.efficiency_pcie") return &s.flow_efficiency.pcie;
  if (key == "nic.message_rate_mpps") return &s.network.nic.message_rate_mpps;
  return nccl_latency(s.nccl, key);
}

}  // namespace

// Per link class: the flow level's bandwidth efficiency (beta) and NCCL's step latency per
// protocol (alpha, the tuner's hwLat); per protocol the launch latency. The PCIe class only
// carries collectives on servers without NVLink (GPU to GPU peer to peer): its efficiency is
// usually set directly from fabricsim-bench's host copies, and fitted when asked for.
//
// The step latencies only separate from the launch latency with sweeps at several rank counts
// on each link class (the time of a small operation is launch + steps x step latency, and the
// steps grow with the ranks): they are fitted when asked for.
std::vector<CalibrationParameter> calibration_parameters() {
  using Use = CalibrationParameter::Use;
  std::vector<CalibrationParameter> out = {{"flow.efficiency_nvlink", 0.05, 1.0, false},
                                           {"flow.efficiency_network", 0.05, 1.0, false}};
  for (const char* p : kProtos)
    out.push_back({fmt::format("nccl.launch_latency.{}", p), 0.1, 1000, true});
  out.push_back({"flow.efficiency_pcie", 0.05, 1.0, false, 0, Use::kOnRequest});
  for (const char* p : kProtos)
    for (const char* l : kLinks)
      out.push_back(
          {fmt::format("nccl.step_latency.{}_{}", p, l), 0.01, 1000, true, 0, Use::kOnRequest});
  // From 0 by default: the fit starts at 1 us (it works on the parameter's logarithm).
  out.push_back({"nic.message_overhead", 0.01, 100, true, 1.0, Use::kWithRdmaLatencyRows});
  // From 0 (no limit) by default: the fit starts at 100 Mpps, 10 ns a message.
  out.push_back({"nic.message_rate_mpps", 0.01, 1e5, false, 100, Use::kWithRdmaStreamRows});
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

double CalibrationParameter::get(const Scenario& s) const {
  if (const double* v = scenario_number(s, key)) return *v;
  if (key == "nic.message_overhead") return s.network.nic.message_overhead.us();
  throw std::logic_error("unknown calibration parameter " + key);
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
  if (double* p = scenario_number(s, key)) {
    *p = v;
  } else if (key == "nic.message_overhead") {
    s.network.nic.message_overhead = Time::from_ps(static_cast<Time::rep>(std::llround(v * 1e6)));
  } else {
    throw std::logic_error("unknown calibration parameter " + key);
  }
}

// ---------------------------------------------------------------- direct estimates

void DirectEstimate::apply(Scenario& s) const {
  if (double* p = scenario_number(s, key)) *p = value;
  if (key == "nccl.gpu_hbm")
    s.gpu.hbm = Bandwidth::from_bps(static_cast<Bandwidth::rep>(std::llround(value * 8e9)));
}

std::string DirectEstimate::toml_value() const {
  return key == "nccl.gpu_hbm" ? fmt::format("\"{:.1f}GB/s\"", value)
                               : fmt::format("{:.5f}", value);
}

namespace {

// Payload rate (GB/s) of a GPU's host path: its PCIe link and, under a PCIe switch, the
// switch's uplink to the CPU (a pinned host copy crosses both).
double host_path_gbs(const ServerSpec& sv) {
  Bandwidth path = sv.gpu_pcie.rate();
  if (!sv.gpus.empty() && sv.gpus.front().pcie_switch >= 0)
    path = std::min(path, sv.uplink_pcie.rate());
  return static_cast<double>(path.bps()) / 8e9;
}

}  // namespace

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
  for (const auto& p : c.params)
    fp.push_back({p.key, p.get(s) >= p.min ? p.get(s) : p.start, p.min, p.max});
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

std::string calibration_overlay(const Calibration& c, const std::filesystem::path& scenario,
                                const std::filesystem::path& out, std::size_t rows,
                                const std::string& from) {
  const auto base = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
  std::string text = fmt::format(
      "# Written by `fabricsim calibrate` from {} ({} measured rows; fit: rms relative error "
      "{:.2f} %, {} iterations).\n# Uncertainties are 1 sigma, relative. Values apply at flow "
      "level (fidelity = \"flow\"); launch latencies and HBM at both levels.\n",
      from, rows, c.fit.rms * 100, c.fit.iterations);
  text += fmt::format("extends = \"{}\"\nfidelity = \"flow\"\n",
                      std::filesystem::relative(std::filesystem::absolute(scenario),
                                                std::filesystem::absolute(base))
                          .generic_string());
  // Lines per table ("flow", "nccl", "nccl.launch_latency": a parent table before its child).
  std::map<std::string, std::string> tables;
  const auto add = [&](const std::string& key, const std::string& line) {
    const auto dot = key.rfind('.');
    tables[key.substr(0, dot)] += key.substr(dot + 1) + " = " + line + "\n";
  };
  // A direct estimate the fit refined (it started there) is written once, as fitted.
  const auto refined = [&](const std::string& key) {
    for (std::size_t i = 0; i < c.params.size(); ++i)
      if (c.params[i].key == key && c.fit.identifiable[i]) return true;
    return false;
  };
  for (const auto& d : c.direct)
    if (!refined(d.key)) add(d.key, d.toml_value() + "  # direct: " + d.evidence);
  std::string fixed;
  for (std::size_t i = 0; i < c.params.size(); ++i) {
    const auto& p = c.params[i];
    const double v = c.fit.values[i];
    if (!c.fit.identifiable[i]) {
      fixed += " " + p.key;
      continue;
    }
    const std::string bound = p.at_bound(v);
    const std::string note =
        bound.empty() ? fmt::format("+- {:.2f} %", c.fit.rel_std_error[i] * 100) : bound;
    add(p.key, p.time_us ? fmt::format("\"{:.4f}us\"  # {}", v, note)
                         : fmt::format("{:.5f}  # {}", v, note));
  }
  if (!fixed.empty())
    text +=
        fmt::format("# Not identifiable from these measurements (left as they were):{}\n", fixed);
  for (const auto& [table, lines] : tables) text += fmt::format("\n[{}]\n{}", table, lines);
  return text;
}

// ---------------------------------------------------------------- commands

namespace {

struct Split {
  std::vector<Measurement> fit, held;
};

// Every k-th row of each (binary, ranks) series, k = round(1 / fraction), is held out,
// starting with the second, so the ends of each sweep stay in the fit.
Split split(const std::vector<Measurement>& all, double fraction) {
  Split s;
  if (fraction <= 0) {
    s.fit = all;
    return s;
  }
  const int k = std::max(2, static_cast<int>(std::lround(1 / fraction)));
  std::map<std::pair<std::string, int>, int> index;
  for (const auto& m : all) {
    const int i = index[{m.binary, m.ranks}]++;
    ((i % k) == 1 ? s.held : s.fit).push_back(m);
  }
  return s;
}

void print_table(const std::vector<Measurement>& ms, const std::vector<double>& sim,
                 const std::string& role, std::ostream& out, std::vector<ValidationRow>& rows) {
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const auto& m = ms[i];
    rows.push_back({fmt::format("{}, {} ranks", m.binary, m.ranks), m.bytes, m.time_us, sim[i],
                    bus_factor(m.op, m.ranks), role});
    out << fmt::format("{:<20} {:>6} {:>12} {:>12.3f} {:>12.3f} {:>+8.2f}  {}\n", m.binary, m.ranks,
                       m.bytes, m.time_us, sim[i], (sim[i] / m.time_us - 1) * 100, role);
  }
}

struct Errors {
  double mape = 0, worst = 0;
  std::size_t n = 0;
};
Errors errors(const std::vector<Measurement>& ms, const std::vector<double>& sim) {
  Errors e;
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

// The folder's measurements (what was read is listed on `err`); nccl-tests rows required.
static MeasurementSet collective_measurements(const CalibrationCli& c, std::ostream& err) {
  MeasurementSet set = load_measurements(c.measurements);
  for (const auto& n : set.notes) err << "  " << n << '\n';
  if (set.collectives.empty())
    throw std::invalid_argument(fmt::format(
        "{}: no nccl-tests or perftest write/send outputs among the measurements", c.measurements));
  return set;
}

// The scenario with the measurements' direct estimates applied (listed on `out`).
static std::vector<DirectEstimate> apply_direct_estimates(Scenario& s, const MeasurementSet& set,
                                                          std::ostream& out, std::ostream& err) {
  std::vector<std::string> notes;
  const auto direct = direct_estimates(s, set, notes);
  for (const auto& n : notes) err << "  " << n << '\n';
  for (const auto& d : direct) {
    out << fmt::format("{:<28} {:>12} (direct: {})\n", d.key, d.toml_value(), d.evidence);
    d.apply(s);
  }
  return direct;
}

int run_calibrate(const CalibrationCli& c, std::ostream& out, std::ostream& err) {
  const MeasurementSet set = collective_measurements(c, err);
  Scenario s = load_scenario(c.scenario);
  const auto direct = apply_direct_estimates(s, set, out, err);
  Calibration cal = calibrate(s, set.collectives, c.fit);
  cal.direct = direct;
  out << fmt::format("{:<28} {:>12} {:>12} {:>10}\n", "parameter", "before", "fitted", "+- (1s)");
  for (std::size_t i = 0; i < cal.params.size(); ++i) {
    const auto& p = cal.params[i];
    if (!cal.fit.identifiable[i]) {
      out << fmt::format("{:<28} {:>12.4f} {:>12} {:>10}\n", p.key, p.get(s), "-",
                         "not identifiable");
      continue;
    }
    if (const std::string bound = p.at_bound(cal.fit.values[i]); !bound.empty()) {
      out << fmt::format("{:<28} {:>12.4f} {:>12.4f}  {}\n", p.key, p.get(s), cal.fit.values[i],
                         bound);
      continue;
    }
    out << fmt::format("{:<28} {:>12.4f} {:>12.4f} {:>9.2f}%\n", p.key, p.get(s), cal.fit.values[i],
                       cal.fit.rel_std_error[i] * 100);
  }
  std::size_t outliers = 0;
  for (double w : cal.fit.weights) outliers += w < 0.5;  // beyond 2.7 robust sigmas
  out << fmt::format(
      "fit: {} rows, rms relative error {:.2f} %, {} rows down-weighted as outliers, {} "
      "iterations, {} simulations{}\n",
      set.collectives.size(), cal.fit.rms * 100, outliers, cal.fit.iterations, cal.fit.evaluations,
      cal.fit.converged ? "" : " (not converged)");
  write_file_atomically(
      c.out, calibration_overlay(cal, c.scenario, c.out, set.collectives.size(), c.measurements));
  out << "wrote " << c.out << '\n';
  return 0;
}

int run_validate(const CalibrationCli& c, std::ostream& out, std::ostream& err) {
  const MeasurementSet set = collective_measurements(c, err);
  if (c.holdout < 0 || c.holdout >= 1)
    throw std::invalid_argument("--holdout must be a fraction in [0, 1)");
  Scenario s = load_scenario(c.scenario);
  if (!c.fidelity.empty()) s.fidelity = c.fidelity == "flow" ? Fidelity::kFlow : Fidelity::kPacket;
  const Split parts = split(set.collectives, c.holdout);
  const BuiltCluster cluster(s);  // neither calibration nor fidelity changes the topology
  if (!parts.held.empty()) {
    apply_direct_estimates(s, set, err, err);
    // Fit on the rest, then judge on what the fit did not see.
    const Calibration cal = calibrate(s, cluster, parts.fit, c.fit);
    for (std::size_t i = 0; i < cal.params.size(); ++i) cal.params[i].set(s, cal.fit.values[i]);
    s.fidelity = Fidelity::kFlow;
    err << fmt::format("  calibrated on {} rows, holding out {}\n", parts.fit.size(),
                       parts.held.size());
  }
  const auto& judged = parts.held.empty() ? parts.fit : parts.held;
  out << fmt::format("{:<20} {:>6} {:>12} {:>12} {:>12} {:>8}  {}\n", "binary", "ranks", "bytes",
                     "measured_us", "simulated_us", "error_%", "role");
  const std::vector<double> sim_fit = simulate_measurements(s, cluster, parts.fit);
  std::vector<ValidationRow> rows;
  print_table(parts.fit, sim_fit, "fit", out, rows);
  std::vector<double> sim_held;
  if (!parts.held.empty()) {
    sim_held = simulate_measurements(s, cluster, parts.held);
    print_table(parts.held, sim_held, "held-out", out, rows);
  }
  const Errors e = errors(judged, parts.held.empty() ? sim_fit : sim_held);
  out << fmt::format("{}: {} rows, mean absolute error {:.2f} %, worst {:.2f} %\n",
                     parts.held.empty() ? "all rows" : "held-out rows", e.n, e.mape, e.worst);
  if (!c.report.empty()) {
    write_file_atomically(c.report, validation_html(fmt::format("fabricsim validate: {} against {}",
                                                                c.scenario, c.measurements),
                                                    rows));
    out << "wrote " << c.report << '\n';
  }
  if (c.max_error > 0 && e.mape > c.max_error) {
    err << fmt::format(
        "fabricsim: validation failed: mean absolute error {:.2f} % > --max-error "
        "{:.2f} %\n",
        e.mape, c.max_error);
    return 1;
  }
  return 0;
}

}  // namespace fabricsim

namespace fabricsim {

// The seed's layered method (case study, section 3.2): inside a server, then between servers,
// then the collective across servers against the one inside, then the PCIe topology. Each
// check prints its evidence; the first layer that fails is named the bottleneck, with the
// next measurement to take.
int run_diagnose(const CalibrationCli& c, std::ostream& out, std::ostream& err) {
  const MeasurementSet set = load_measurements(c.measurements);
  for (const auto& n : set.notes) err << "  " << n << '\n';
  std::optional<Scenario> s;
  if (!c.scenario.empty()) s = load_scenario(c.scenario);
  struct Finding {
    std::string layer, evidence, next;
    bool bad = false;
    std::string tag = {};  // printed instead of ok/suspect ("model": the model's other layers)
  };
  std::vector<Finding> findings;
  // Largest size per (binary, ranks): the bandwidth regime.
  std::map<std::pair<std::string, int>, const Measurement*> largest;
  for (const auto& m : set.collectives) {
    auto& l = largest[{m.binary, m.ranks}];
    if (l == nullptr || m.bytes > l->bytes) l = &m;
  }
  const int per_server =
      s && s->cluster.servers > 0 ? static_cast<int>(s->cluster.server.gpus.size()) : 8;
  const auto busbw = [](const Measurement& m) {
    return static_cast<double>(m.bytes) / (m.time_us * 1e3) * bus_factor(m.op, m.ranks);
  };
  // 1. Intra-server collective against the NVLink peak (per GPU, one direction).
  double nvlink_gbs = 0;
  if (s && s->cluster.servers > 0) {
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
    if (!s || s->cluster.servers <= 0) {
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
  if (s) link_gbps = static_cast<double>(s->cluster.fabric.link_rate.bps()) / 1e9;
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
    const double span_ms = static_cast<double>(r.sim_time_ps) * 1e-9;
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
  if (findings.empty()) {
    out << "no evidence to diagnose: give nccl-tests, perftest, nvidia-smi, ethtool or "
           "fabricsim-bench outputs, or a fabricsim results.json\n";
    return 0;
  }
  const Finding* verdict = nullptr;
  for (const auto& f : findings) {
    out << fmt::format("[{}] {}: {}\n",
                       !f.tag.empty() ? f.tag
                       : f.bad        ? "suspect"
                                      : "ok",
                       f.layer, f.evidence);
    if (f.bad && verdict == nullptr) verdict = &f;
  }
  if (verdict != nullptr)
    out << fmt::format("bottleneck: {}\nnext: {}\n", verdict->layer, verdict->next);
  else
    out << "bottleneck: none found in these measurements\n";
  return 0;
}

}  // namespace fabricsim
