#include "cli/commands.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

extern char** environ;  // POSIX: the process environment, for --env-from-process

#include "cli/help.hpp"
#include "experiments/calibration.hpp"
#include "experiments/diagnose.hpp"
#include "experiments/nccl_tests.hpp"
#include "experiments/perftest.hpp"
#include "experiments/run.hpp"
#include "experiments/sweep.hpp"
#include "experiments/training.hpp"
#include "fabricsim/revision.hpp"
#include "fabricsim/version.hpp"
#include "report/calibration_report.hpp"
#include "report/html.hpp"
#include "report/nccl_tests_output.hpp"
#include "report/perftest_output.hpp"
#include "report/progress_display.hpp"
#include "report/results.hpp"
#include "report/scenario_doc.hpp"
#include "report/trace.hpp"
#include "scenario/nccl_env.hpp"
#include "scenario/scenario.hpp"
#include "scenario/schema.hpp"
#include "topo/nccl_xml.hpp"
#include "validation/parsers.hpp"

namespace fabricsim {
namespace {

// `calibrate`, `validate` and `diagnose`: their arguments, and the experiment each runs
// (experiments/calibration.hpp, experiments/diagnose.hpp) with its report.
struct CalibrationCli {
  std::string measurements, scenario, out = "calibrated.toml", fidelity, report;
  double holdout = 0, max_error = 0;
  std::vector<std::string> fit;  // --fit: parameter keys (calibration_parameters)
};

// A scenario as the loader reads it, with its warnings printed on `err`.
Scenario load_warned(const std::string& file, const LoadOptions& options, std::ostream& err) {
  Scenario s = load_scenario(file, options);
  for (const auto& w : s.warnings) err << "fabricsim: warning: " << w << '\n';
  return s;
}

void print_notes(const std::vector<std::string>& notes, std::ostream& err) {
  for (const auto& n : notes) err << "  " << n << '\n';
}

// The folder's measurements (what was read is listed on `err`); nccl-tests rows required.
MeasurementSet collective_measurements(const CalibrationCli& c, std::ostream& err) {
  MeasurementSet set = load_measurements(c.measurements);
  print_notes(set.notes, err);
  if (set.collectives.empty())
    throw std::invalid_argument(fmt::format(
        "{}: no nccl-tests or perftest write/send outputs among the measurements", c.measurements));
  return set;
}

int run_calibrate(const CalibrationCli& c, std::ostream& out, std::ostream& err) {
  const MeasurementSet set = collective_measurements(c, err);
  Scenario s = load_warned(c.scenario, {}, err);
  std::vector<std::string> notes;
  const auto direct = apply_direct_estimates(s, set, notes);
  print_notes(notes, err);
  out << direct_estimates_text(direct);
  Calibration cal = calibrate(s, set.collectives, c.fit);
  cal.direct = direct;
  out << calibration_table(s, cal, set.collectives.size());
  write_file_atomically(
      c.out, calibration_overlay(cal, c.scenario, c.out, set.collectives.size(), c.measurements));
  out << "wrote " << c.out << '\n';
  return kExitOk;
}

int run_validate(const CalibrationCli& c, std::ostream& out, std::ostream& err) {
  const MeasurementSet set = collective_measurements(c, err);
  Scenario s = load_warned(c.scenario, {}, err);
  if (!c.fidelity.empty()) s.fidelity = fidelity_of(c.fidelity);
  std::vector<std::string> notes;
  const Validation v = validate(s, set, c.holdout, c.fit, notes);
  print_notes(notes, err);
  err << direct_estimates_text(v.direct);
  if (v.held_rows > 0) {
    err << fmt::format("  calibrated on {} rows, holding out {}; fit {}\n", v.fit_rows, v.held_rows,
                       v.fit_problems.empty() ? "good" : "NOT GOOD:");
    for (const auto& why : v.fit_problems) err << "    - " << why << '\n';
  }
  out << validation_table(v);
  if (!c.report.empty()) {
    write_file_atomically(c.report, validation_html(fmt::format("fabricsim validate: {} against {}",
                                                                c.scenario, c.measurements),
                                                    v.rows));
    out << "wrote " << c.report << '\n';
  }
  if (c.max_error > 0 && v.judged.mape > c.max_error) {
    err << fmt::format(
        "fabricsim: validation failed: mean absolute error {:.2f} % > --max-error "
        "{:.2f} %\n",
        v.judged.mape, c.max_error);
    return kExitFailure;
  }
  return kExitOk;
}

int run_diagnose(const CalibrationCli& c, std::ostream& out, std::ostream& err) {
  const MeasurementSet set = load_measurements(c.measurements);
  print_notes(set.notes, err);
  std::optional<Scenario> s;
  if (!c.scenario.empty()) s = load_warned(c.scenario, {}, err);
  out << diagnosis_text(diagnose(set, s ? &*s : nullptr));
  return kExitOk;
}

// What `run` and `compare` simulate for a scenario: its training step or its traffic.
RunFn run_function(const Scenario& s) {
  if (s.has_workload)
    return [](const Scenario& sc, const BuiltCluster& c) { return run_training(sc, c); };
  return [](const Scenario& sc, const BuiltCluster& c) { return run_scenario(sc, c); };
}

}  // namespace

namespace {

// A command's `--help` ends with examples that run as written from the source tree (the man
// page shows the same ones; a test runs each).
void add_examples(CLI::App& cmd, std::initializer_list<const char*> lines) {
  std::string footer = "\nExamples:";
  for (const char* l : lines) footer += fmt::format("\n  {}", l);
  cmd.footer(footer);
}

constexpr const char* kForceHelp =
    "Run even when a size estimate (messages, samples, sweep points) is over its limit";

// `--fidelity F` as the scenario override it stands for.
std::string fidelity_override(const std::string& fidelity) {
  return fmt::format("fidelity=\"{}\"", fidelity);
}

// Load options for `--set` overrides and `--fidelity` ("" when not given), in that order.
LoadOptions overridden(std::vector<std::string> set, const std::string& fidelity) {
  if (!fidelity.empty()) set.push_back(fidelity_override(fidelity));
  return {.overrides = std::move(set)};
}

// `--set KEY=VALUE` (repeatable) and `--fidelity packet|flow`: scenario overrides.
void add_overrides(CLI::App& cmd, std::vector<std::string>& set, std::string& fidelity,
                   const std::string& set_help,
                   const std::string& fidelity_help =
                       "packet, flow or hybrid (overrides the scenario's 'fidelity')") {
  cmd.add_option("--set", set, set_help)
      ->take_last()
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd.add_option("--fidelity", fidelity, fidelity_help)
      ->check(CLI::IsMember({"packet", "flow", "hybrid"}));
}

// `--env NAME=VALUE` (repeatable) and `--env-from-process`: NCCL's environment as a real run
// takes it (scenario/nccl_env.hpp), so one command line serves the cluster and the simulator.
struct NcclEnvArgs {
  std::vector<std::string> env;
  bool from_process = false;

  void add_to(CLI::App& cmd) {
    cmd.add_option("--env", env,
                   "An NCCL variable as set for a real run, e.g. --env NCCL_ALGO=Ring,Tree "
                   "(repeatable; the [nccl] key of that name)")
        ->take_last()
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd.add_flag("--env-from-process", from_process,
                 "Take every NCCL_* variable of this process's environment (before --env)");
  }
  // The overrides they stand for (the process's variables, then --env in order); a warning on
  // `err` for each variable the model does not read.
  std::vector<std::string> overrides(std::ostream& err) const {
    std::vector<std::pair<std::string, std::string>> vars;
    if (from_process) vars = nccl_variables(environ);
    for (const auto& e : env) {
      auto v = split_assignment(e);
      if (!v.first.starts_with("NCCL_"))
        throw std::invalid_argument(fmt::format(
            "--env {}: only NCCL_* variables are NCCL's (use --set for scenario keys)", e));
      vars.push_back(std::move(v));
    }
    NcclEnvironment resolved = nccl_environment(vars);
    for (const auto& w : resolved.warnings) err << "fabricsim: warning: " << w << '\n';
    return std::move(resolved.overrides);
  }
};

struct ScenarioArgs {
  std::string file;
  std::vector<std::string> overrides;
  std::optional<std::uint64_t> seed;
  std::string fidelity;
  std::string stop_time;
  NcclEnvArgs nccl_env;
  std::vector<std::string> env_overrides;  // nccl_env's, once resolve_env has run

  void add_to(CLI::App& cmd) {
    cmd.add_option("scenario", file, "Scenario file (TOML)")->required();
    add_overrides(cmd, overrides, fidelity, "Override a scenario key, e.g. --set fabric.hosts=16");
    cmd.add_option("--seed", seed, "Random seed (overrides the scenario's 'seed'), 0 or more")
        ->check(CLI::Range(std::uint64_t{0},
                           static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
    cmd.add_option("--stop-time", stop_time,
                   "Stop the simulation at this simulated time, e.g. 10ms (overrides "
                   "simulation.stop_time)");
    nccl_env.add_to(cmd);
  }
  void resolve_env(std::ostream& err) { env_overrides = nccl_env.overrides(err); }
  // The NCCL environment, --set, --seed and --fidelity as overrides, in that order.
  LoadOptions options() const {
    std::vector<std::string> set = env_overrides;
    set.insert(set.end(), overrides.begin(), overrides.end());
    if (seed) set.push_back(fmt::format("seed={}", *seed));
    if (!stop_time.empty()) set.push_back(fmt::format("simulation.stop_time=\"{}\"", stop_time));
    return overridden(std::move(set), fidelity);
  }
  std::vector<std::string> all_overrides() const { return options().overrides; }
  Scenario load(std::ostream& err) const { return load_warned(file, options(), err); }
};

// Progress on a terminal: simulated time, wall time, events/s and ETA, at most twice a second,
// starting after the first second of wall time.
struct TopoArgs {
  ScenarioArgs scenario;
  bool matrix = false;
  bool json = false;
  std::string dot;
  std::string nccl_xml_dir;
};

int run_topo(const TopoArgs& args, std::ostream& out, std::ostream& err) {
  const Scenario s = args.scenario.load(err);
  const BuiltCluster cluster(s);
  const TopologySummary summary = analyse(cluster.topology, cluster.routing, s.analysis);
  if (args.matrix) {
    if (s.cluster.servers == 0) {
      err << "fabricsim: error: --matrix needs a [server] in the scenario\n";
      return kExitUsage;
    }
    out << format_topo_matrix(topo_matrix(s.cluster.server));
  }
  if (!args.dot.empty()) write_file_atomically(args.dot, topology_dot(cluster.topology));
  if (!args.nccl_xml_dir.empty()) {
    if (s.cluster.servers == 0) {
      err << "fabricsim: error: --nccl-xml needs a [server] in the scenario\n";
      return kExitUsage;
    }
    std::filesystem::create_directories(args.nccl_xml_dir);
    const std::string xml = export_nccl_xml(s.cluster.server);
    for (int i = 0; i < s.cluster.servers; ++i)
      write_file_atomically(
          std::filesystem::path(args.nccl_xml_dir) / fmt::format("server{}.xml", i), xml);
  }
  if (args.json) {
    out << topology_json(s, summary);
  } else if (!args.matrix) {
    out << topology_report(s, summary);
  }
  return kExitOk;
}

struct NcclTestsCli {
  NcclTestsArgs args;
  std::string scenario;
  NcclEnvArgs nccl_env;
  std::vector<std::string> overrides;
  std::string fidelity;
  std::string min_bytes = "32M", max_bytes = "32M", step_bytes = "1M";
  std::string json, csv;
  int seeds = 0;  // 0: the scenario's simulation.seeds
  bool force = false;
};

void add_nccl_tests(CLI::App& app, NcclTestsCli& c) {
  CLI::App* cmd = app.add_subcommand(
      "nccl-tests",
      "Run an nccl-tests binary (all_reduce_perf, ...) on the simulated cluster, printing "
      "nccl-tests' output");
  std::vector<std::string> binaries = perf_binaries();
  cmd->add_option("binary", c.args.binary, "all_reduce_perf, all_gather_perf, ...")
      ->required()
      ->check(CLI::IsMember(binaries));
  cmd->add_option("--scenario", c.scenario, "Scenario file (TOML)")->required();
  add_overrides(*cmd, c.overrides, c.fidelity,
                "Override a scenario key, e.g. --set nccl.NCCL_PROTO=LL");
  c.nccl_env.add_to(*cmd);
  cmd->add_option("-b,--minbytes", c.min_bytes, "Smallest size (8, 64K, 1M, 8G)");
  cmd->add_option("-e,--maxbytes", c.max_bytes, "Largest size");
  cmd->add_option("-f,--stepfactor", c.args.step_factor,
                  "Multiply the size by this per step (1: step by -i bytes instead)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
  cmd->add_option("-i,--stepbytes", c.step_bytes, "Add this to the size per step (without -f)");
  cmd->add_option("-g,--ngpus", c.args.ngpus, "GPUs per thread")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-t,--nthreads", c.args.nthreads, "Threads per process")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--np", c.args.nprocs,
                  "Processes, as mpirun -np (default: every GPU of the scenario)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-o,--op", c.args.redop, "Reduction: sum, prod, min, max, avg")
      ->check(CLI::IsMember({"sum", "prod", "min", "max", "avg"}));
  cmd->add_option("-d,--datatype", c.args.datatype, "Data type: float, half, int8, double, ...");
  cmd->add_option("-r,--root", c.args.root, "Root of Broadcast and Reduce");
  cmd->add_option("-n,--iters", c.args.iters, "Iterations (printed; see --sim-iters)");
  cmd->add_option("-w,--warmup_iters", c.args.warmup,
                  "Warm-up iterations per size, simulated and not timed (0 or more)");
  cmd->add_option("-m,--agg_iters", c.args.agg_iters, "Aggregated iterations");
  cmd->add_option("-c,--check", c.args.check, "Check results (the model has no data: N/A)");
  cmd->add_option("-a,--average", c.args.average,
                  "Time reported: 0 rank 0, 1 mean over ranks, 2 min, 3 max")
      ->check(CLI::Range(0, 3));
  cmd->add_option("-z,--blocking", c.args.blocking, "Blocking collectives (printed only)");
  cmd->add_option("-G,--cudagraph", c.args.graph, "CUDA graph launches (printed only)");
  cmd->add_option("--sim-iters", c.args.sim_iters, "Iterations simulated per size and placement")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--seeds", c.seeds,
                  "Run the sweep with N seeds from the scenario's and print mean times, busbw "
                  "min and max (default: simulation.seeds)")
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--force", c.force, kForceHelp);
  cmd->add_option("--json", c.json, "Also write the results as JSON to FILE (- for stdout)");
  cmd->add_option("--csv", c.csv, "Also write the results as CSV to FILE (- for stdout)");
  add_examples(*cmd,
               {"fabricsim nccl-tests all_reduce_perf --scenario scenarios/nccl/dgx-h100.toml "
                "-b 8 -e 128M -f 4",
                "fabricsim nccl-tests alltoall_perf --scenario "
                "scenarios/nccl/dgx-a100-x4-roce.toml -b 1M -e 64M -f 8 --json a2a.json",
                "fabricsim nccl-tests all_reduce_perf --scenario scenarios/nccl/dgx-h100.toml "
                "-b 1M -e 1M --env NCCL_ALGO=Ring --env NCCL_PROTO=Simple"});
}

int run_nccl_tests_command(NcclTestsCli& c, std::ostream& out, std::ostream& err) {
  NcclTestsArgs& a = c.args;
  a.op = *parse_perf_binary(a.binary);
  try {
    a.min_bytes = parse_nccl_size(c.min_bytes);
    a.max_bytes = parse_nccl_size(c.max_bytes);
    a.step_bytes = parse_nccl_size(c.step_bytes);
  } catch (const std::invalid_argument& e) {
    err << "fabricsim: error: " << e.what() << '\n';
    return kExitUsage;
  }
  if (!parse_datatype(a.datatype)) {
    err << "fabricsim: error: unknown data type '" << a.datatype << "'\n";
    return kExitUsage;
  }
  if (a.max_bytes < a.min_bytes) {
    err << "fabricsim: error: -e (maxbytes) is below -b (minbytes)\n";
    return kExitUsage;
  }
  std::vector<std::string> set = c.nccl_env.overrides(err);
  set.insert(set.end(), c.overrides.begin(), c.overrides.end());
  const Scenario s = load_warned(c.scenario, overridden(std::move(set), c.fidelity), err);
  const BuiltCluster cluster(s);
  preflight(s, cluster, c.force);
  const int seeds = c.seeds > 0 ? c.seeds : s.simulation.seeds;
  const NcclTestsResult r =
      seeds > 1 ? run_nccl_tests_seeds(s, cluster, a, seeds) : run_nccl_tests(s, cluster, a);
  const auto emit = [&](const std::string& target, const std::string& text) {
    if (target == "-") {
      out << text;
    } else if (!target.empty()) {
      write_file_atomically(target, text);
    }
  };
  if (c.json != "-" && c.csv != "-") out << nccl_tests_text(a, r);
  emit(c.json, nccl_tests_json(s, a, r));
  emit(c.csv, nccl_tests_csv(r));
  for (const auto& e : r.errors) err << "fabricsim: " << e << '\n';
  return r.errors.empty() ? kExitOk : kExitFailure;
}

struct PerftestCli {
  PerftestArgs args;
  std::string scenario;
  std::vector<std::string> overrides;
  std::string fidelity;
  bool force = false;
};

void add_perftest(CLI::App& app, PerftestCli& c) {
  CLI::App* cmd = app.add_subcommand(
      "perftest",
      "Run a perftest binary (ib_write_bw, ib_write_lat, ...) between two servers of the "
      "simulated cluster, printing perftest's output");
  cmd->add_option("binary", c.args.binary, "ib_write_bw, ib_send_bw, ib_write_lat, ib_send_lat")
      ->required()
      ->check(CLI::IsMember(perftest_binaries()));
  cmd->add_option("--scenario", c.scenario, "Scenario file (TOML)")->required();
  add_overrides(*cmd, c.overrides, c.fidelity, "Override a scenario key, e.g. --set nic.mtu=1024");
  cmd->add_option("-s,--size", c.args.size, "Message size in bytes (default 65536; latency 2)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 30));
  cmd->add_flag("-a,--all", c.args.all_sizes, "Every size from 2 B to 8 MiB in powers of two");
  cmd->add_option("-n,--iters", c.args.iters, "Iterations (printed; default 5000, latency 1000)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_flag("--report_gbits", c.args.report_gbits, "Bandwidth in Gb/s instead of MiB/s");
  cmd->add_flag("--force", c.force, kForceHelp);
  add_examples(*cmd,
               {"fabricsim perftest ib_write_bw --scenario scenarios/nccl/dgx-a100-x4-roce.toml "
                "-a --report_gbits",
                "fabricsim perftest ib_write_lat --scenario "
                "scenarios/nccl/dgx-a100-x4-roce.toml -s 64"});
}

int run_perftest_command(const PerftestCli& c, std::ostream& out, std::ostream& err) {
  const Scenario s = load_warned(c.scenario, overridden(c.overrides, c.fidelity), err);
  const BuiltCluster cluster(s);
  preflight(s, cluster, c.force);
  out << perftest_text(s, c.args, run_perftest(s, cluster, c.args));
  return kExitOk;
}

// A number above 0 that is finite: CLI11's PositiveNumber lets "nan" and "inf" through.
const CLI::Validator finite_positive(
    [](std::string& text) {
      double v = 0;
      if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v) || v <= 0)
        return fmt::format("expected a finite number above 0, got '{}'", text);
      return std::string();
    },
    "POSITIVE", "finite positive number");

int report_config_error(const ConfigError& e, std::ostream& err) {
  for (const auto& m : e.messages()) err << "fabricsim: error: " << m << '\n';
  return kExitUsage;
}

}  // namespace

int cli_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             bool interactive) {
  CLI::App app{"fabricsim: a discrete-event simulator of GPU server networks", "fabricsim"};
  app.set_version_flag("--version", fmt::format("fabricsim {} (git {})", kVersion, kRevision));
  app.require_subcommand(1);

  ScenarioArgs run_args;
  std::string out_dir;
  std::string format = "text";
  bool quiet = false;
  CLI::App* run = app.add_subcommand("run", "Run a scenario and print its report");
  run_args.add_to(*run);
  run->add_option("--out", out_dir, "Result folder (default: results/<scenario name>/)");
  run->add_option("--format", format, "Report format on stdout")
      ->check(CLI::IsMember({"text", "json"}));
  std::string report_kind;
  run->add_option("--report", report_kind, "Also write a report file: html (OUT/report.html)")
      ->check(CLI::IsMember({"html"}));
  run->add_flag("--quiet,-q", quiet, "Print no report and no progress (results are still written)");
  std::vector<std::string> sweeps;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  run->add_option("--sweep", sweeps, "Sweep a key: KEY=V1,V2,... (repeatable; with [sweep])")
      ->take_last()
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("--jobs,-j", jobs, "Sweep points run at once (default: the cores)")
      ->check(CLI::Range(1u, 1024u));
  bool no_sweep = false;
  std::string trace_file;
  run->add_option("--trace", trace_file,
                  "With a [workload]: write the step timeline as a Chrome/Perfetto trace (JSON)");
  run->add_flag("--no-sweep", no_sweep, "Run the scenario itself, ignoring its [sweep]");
  bool force = false;
  run->add_flag("--force", force, kForceHelp);
  int run_seeds_count = 0;
  run->add_option("--seeds", run_seeds_count,
                  "Run N seeds from the scenario's (seed, seed+1, ...) and report each metric's "
                  "mean, min and max (default: simulation.seeds)")
      ->check(CLI::Range(1, 1000));
  add_examples(*run, {"fabricsim run scenarios/default.toml",
                      "fabricsim run scenarios/default.toml --set switch.buffer=4MiB --stop-time "
                      "1ms --format json",
                      "fabricsim run scenarios/default.toml --sweep switch.buffer=1MiB,2MiB,4MiB "
                      "--out buffers",
                      "fabricsim run scenarios/case-study-32gpu/before.toml --report html --out "
                      "before"});

  ScenarioArgs check_args;
  bool resolved = false;
  CLI::App* check = app.add_subcommand("check", "Validate a scenario without running it");
  check_args.add_to(*check);
  check->add_flag("--resolved", resolved, "Print the scenario as it would run, defaults included");
  check->add_flag("--force", force, kForceHelp);
  add_examples(*check,
               {"fabricsim check scenarios/default.toml",
                "fabricsim check scenarios/fat-tree-256/roce-400g-2to1-rail.toml --resolved"});

  std::string schema_prefix;
  bool schema_json = false;
  CLI::App* schema =
      app.add_subcommand("schema", "Print every scenario key: type, default, range, meaning");
  schema->add_option("prefix", schema_prefix, "Only the keys under this path (e.g. nic.dcqcn)");
  schema->add_flag("--json", schema_json, "As JSON, for tools");
  add_examples(*schema, {"fabricsim schema nic.dcqcn", "fabricsim schema --json"});

  TopoArgs topo_args;
  CLI::App* topo =
      app.add_subcommand("topo", "Build a scenario's cluster and summarise its topology");
  topo_args.scenario.add_to(*topo);
  topo->add_flag("--matrix", topo_args.matrix, "Print the nvidia-smi topo -m matrix of a server");
  topo->add_option("--dot", topo_args.dot, "Write the graph in Graphviz format to FILE");
  topo->add_option("--nccl-xml", topo_args.nccl_xml_dir,
                   "Write one NCCL topology XML per server into DIR");
  topo->add_flag("--json", topo_args.json, "Print the summary as JSON");
  add_examples(*topo, {"fabricsim topo scenarios/topologies/dgx-h100-256-fat-tree.toml",
                       "fabricsim topo scenarios/nccl/dgx-h100.toml --matrix",
                       "fabricsim topo scenarios/topologies/fat-tree-k8.toml --dot fabric.dot"});

  NcclTestsCli nccl_args;
  add_nccl_tests(app, nccl_args);
  PerftestCli perftest_args;
  add_perftest(app, perftest_args);

  std::vector<std::string> compare_files, compare_overrides;
  std::string compare_fidelity;
  CLI::App* compare =
      app.add_subcommand("compare", "Run several scenarios and print their metrics side by side");
  compare->add_option("scenarios", compare_files, "Scenario files (TOML)")->required();
  add_overrides(*compare, compare_overrides, compare_fidelity, "Override a key in every scenario",
                "packet, flow or hybrid for every scenario");
  unsigned compare_jobs = std::max(1u, std::thread::hardware_concurrency());
  compare->add_option("--jobs,-j", compare_jobs, "Scenarios run at once (default: the cores)")
      ->check(CLI::Range(1u, 1024u));
  std::string compare_html, compare_csv;
  compare->add_option("--html", compare_html, "Also write the comparison as an HTML report");
  compare->add_option("--csv", compare_csv,
                      "Also write the metrics in long form (scenario, fidelity, metric, value, "
                      "expected: one row each) to FILE, for notebooks");
  compare->add_flag("--force", force, kForceHelp);
  int compare_seeds = 0;
  compare
      ->add_option("--seeds", compare_seeds,
                   "Run each scenario with N seeds; the table shows means (default: each "
                   "scenario's simulation.seeds)")
      ->check(CLI::Range(1, 1000));
  add_examples(*compare, {"fabricsim compare scenarios/case-study-32gpu/before.toml "
                          "scenarios/case-study-32gpu/after.toml --html case.html --csv case.csv",
                          "fabricsim compare scenarios/fat-tree-256/ib-ndr-full-rail.toml "
                          "scenarios/fat-tree-256/ib-ndr-2to1-rail.toml -j 2"});

  // calibrate, validate, diagnose: one set of arguments (only one subcommand runs).
  CalibrationCli measured;
  const auto measurement_command = [&](const char* name, const char* what) {
    CLI::App* cmd = app.add_subcommand(name, what);
    cmd->add_option("--measurements", measured.measurements,
                    "Folder of measurements (nccl-tests, perftest, nvidia-smi, ethtool outputs)")
        ->required();
    return cmd;
  };
  CLI::App* calibrate_cmd = measurement_command(
      "calibrate", "Fit model parameters to a cluster's measurements; write a calibration overlay");
  calibrate_cmd->add_option("--scenario", measured.scenario, "Scenario of the cluster (TOML)")
      ->required();
  calibrate_cmd->add_option("--out", measured.out, "Overlay to write (extends the scenario)");
  const char* fit_help =
      "Parameters to fit, comma-separated, or 'all' (default: flow.efficiency_nvlink, "
      "flow.efficiency_network, nccl.launch_latency.*, "
      "nccl.step_latency.<proto>_<nvlink|pcie|net>, with perftest rows nic.message_overhead "
      "and nic.message_rate_mpps; also flow.efficiency_pcie)";
  calibrate_cmd->add_option("--fit", measured.fit, fit_help)->delimiter(',');
  // The measurements: nccl-tests output of a cluster (here the model's own, so that the
  // examples run anywhere; validation/collect.sh gathers a real cluster's).
  const char* kMeasure =
      "mkdir -p meas && fabricsim nccl-tests all_reduce_perf --scenario "
      "scenarios/nccl/dgx-h100.toml -b 1M -e 256M -f 4 > meas/all_reduce_perf.txt";
  add_examples(*calibrate_cmd, {kMeasure,
                                "fabricsim calibrate --measurements meas --scenario "
                                "scenarios/nccl/dgx-h100.toml --out calibrated.toml"});
  CLI::App* validate_cmd = measurement_command(
      "validate", "Simulate measured runs; print measured vs simulated and the error");
  validate_cmd
      ->add_option("--scenario", measured.scenario, "Scenario (TOML), e.g. a calibrated one")
      ->required();
  validate_cmd
      ->add_option("--holdout", measured.holdout,
                   "Fraction of each sweep held out: calibrate on the rest, judge on these")
      ->check(CLI::Range(0.0, 0.9));
  validate_cmd
      ->add_option("--max-error", measured.max_error,
                   "Fail (exit 1) when the mean absolute error exceeds this many per cent")
      ->check(finite_positive);
  validate_cmd->add_option("--fit", measured.fit, fit_help)->delimiter(',');
  validate_cmd->add_option("--report", measured.report,
                           "Also write measured vs simulated as a self-contained HTML file");
  add_examples(*validate_cmd,
               {kMeasure,
                "fabricsim validate --measurements meas --scenario "
                "scenarios/nccl/dgx-h100.toml --max-error 5 --report validation.html"});
  validate_cmd
      ->add_option("--fidelity", measured.fidelity,
                   "packet, flow or hybrid (overrides the scenario)")
      ->check(CLI::IsMember({"packet", "flow", "hybrid"}));
  CLI::App* diagnose_cmd = measurement_command(
      "diagnose", "Name the bottleneck layer from a cluster's (or a simulation's) measurements");
  diagnose_cmd->add_option("--scenario", measured.scenario,
                           "Scenario of the cluster, for its NVLink and link rates (optional)");
  add_examples(*diagnose_cmd, {kMeasure,
                               "fabricsim diagnose --measurements meas --scenario "
                               "scenarios/nccl/dgx-h100.toml"});

  CLI::App* man_cmd =
      app.add_subcommand("man", "Print the manual page (roff), generated from every --help");
  add_examples(*man_cmd, {"fabricsim man > fabricsim.1"});
  std::string shell;
  CLI::App* completion_cmd =
      app.add_subcommand("completion", "Print a shell completion script for fabricsim");
  completion_cmd->add_option("shell", shell, "The shell: bash")
      ->required()
      ->check(CLI::IsMember({"bash"}));
  add_examples(*completion_cmd, {"fabricsim completion bash > fabricsim.bash"});

  std::vector<std::string> argv_storage{"fabricsim"};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  if (auto unknown = unknown_command(app, args); unknown || (unknown = unknown_option(app, args))) {
    err << "fabricsim: error: " << *unknown << '\n';
    return kExitUsage;
  }
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitUsage;
  }

  try {
    if (*check) check_args.resolve_env(err);
    if (*run) run_args.resolve_env(err);
    if (*topo) topo_args.scenario.resolve_env(err);
    if (*check) {
      // What `run` would refuse before simulating, `check` refuses: the scenario, its fabric
      // (built), the preflight estimates, and every point of its [sweep].
      const Scenario s = check_args.load(err);
      {
        const BuiltCluster cluster(s);
        preflight(s, cluster, force);
      }
      const auto axes = sweep_axes(check_args.file, {});
      if (!axes.empty())
        for (const Scenario& point :
             sweep_points(check_args.file, check_args.all_overrides(), axes, force)) {
          const BuiltCluster cluster(point);
          preflight(point, cluster, force);
        }
      if (resolved) {
        out << resolved_scenario_toml(s);
      } else {
        out << fmt::format("{}: scenario '{}' is valid\n", check_args.file, s.name);
      }
      return kExitOk;
    }
    if (*schema) {
      if (!schema_prefix.empty() && !is_scenario_path(schema_prefix)) {
        const std::string near = nearest_scenario_key(schema_prefix);
        err << fmt::format("fabricsim: error: no scenario key or table '{}'{}\n", schema_prefix,
                           near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near));
        return kExitUsage;
      }
      out << (schema_json ? scenario_keys_json(schema_prefix)
                          : scenario_keys_markdown(schema_prefix));
      return kExitOk;
    }
    if (*topo) return run_topo(topo_args, out, err);
    if (*man_cmd) {
      out << man_page(app, kVersion);
      return kExitOk;
    }
    if (*completion_cmd) {
      out << bash_completion(app);
      return kExitOk;
    }
    if (*calibrate_cmd) return run_calibrate(measured, out, err);
    if (*validate_cmd) return run_validate(measured, out, err);
    if (*diagnose_cmd) return run_diagnose(measured, out, err);
    if (app.got_subcommand("nccl-tests")) return run_nccl_tests_command(nccl_args, out, err);
    if (app.got_subcommand("perftest")) return run_perftest_command(perftest_args, out, err);
    if (*compare) {
      const LoadOptions options = overridden(compare_overrides, compare_fidelity);
      std::vector<Scenario> scenarios;
      for (const auto& f : compare_files) scenarios.push_back(load_warned(f, options, err));
      for (std::size_t i = 0; i < scenarios.size(); ++i)
        if (!scenarios[i].has_traffic && !scenarios[i].has_workload) {
          err << "fabricsim: error: " << compare_files[i]
              << ": no [traffic] or [workload] to run\n";
          return kExitUsage;
        }
      // A progress line per scenario now and then (the runs go on in parallel).
      std::mutex progress_lock;
      std::vector<std::unique_ptr<ProgressDisplay>> displays(scenarios.size());
      const auto progress = [&](std::size_t i) -> ProgressFn {
        return [&, i](const Progress& p) {
          const std::string phase =
              p.phase.empty() ? scenarios[i].name : scenarios[i].name + ": " + std::string(p.phase);
          Progress named = p;
          named.phase = phase;
          const std::lock_guard lock(progress_lock);
          if (!displays[i])  // from the scenario's own start: it may have waited for a worker
            displays[i] = std::make_unique<ProgressDisplay>(err, false, std::chrono::seconds(10),
                                                            std::chrono::seconds(30));
          displays[i]->update(named);
        };
      };
      const auto [results, spread_notes] =
          run_compare(scenarios, compare_jobs, force, compare_seeds, err, progress);
      out << compare_report(scenarios, results);
      if (!spread_notes.empty()) {
        out << "(values over several seeds are means)\n";
        for (const auto& n : spread_notes) out << "warning: " << n << '\n';
      }
      if (!compare_html.empty())
        write_file_atomically(compare_html, html_report(scenarios, results));
      if (!compare_csv.empty()) write_file_atomically(compare_csv, long_csv(scenarios, results));
      return kExitOk;
    }
    const auto axes = no_sweep ? std::vector<SweepAxis>{} : sweep_axes(run_args.file, sweeps);
    if (!axes.empty()) {
      const std::vector<std::string> base = run_args.all_overrides();
      const Scenario first = run_args.load(err);
      const std::filesystem::path dir =
          out_dir.empty() ? std::filesystem::path("results") / (first.name + "-sweep")
                          : std::filesystem::path(out_dir);
      std::ostringstream discard;
      const auto points = sweep_points(run_args.file, base, axes, force);
      const SweepOutcome outcome = run_sweep(
          points, jobs, force,
          [&](std::size_t i, const Scenario& point, const RunResult& result) {
            write_results(dir / fmt::format("point-{:03}", i), point, result);
          },
          err);
      if (!outcome.reporting) return kExitOk;
      std::vector<std::string> axis_keys;
      for (const auto& a : axes) axis_keys.push_back(a.key);
      return write_sweep_summary(dir, points, axis_keys, outcome, quiet ? discard : out, err);
    }
    if (mpi_rank() > 0) return kExitOk;  // under mpirun without a sweep: rank 0 runs it
    const Scenario s = run_args.load(err);
    if (!trace_file.empty() && !s.has_workload) {
      err << "fabricsim: error: --trace needs a scenario with a [workload]\n";
      return kExitUsage;
    }
    if (!s.has_traffic && !s.has_workload) {
      err << "fabricsim: error: " << run_args.file
          << ": the scenario has no [traffic] or [workload] to run (`fabricsim nccl-tests ... "
             "--scenario "
          << run_args.file << "` runs collectives on it)\n";
      return kExitUsage;
    }
    const BuiltCluster cluster(s);
    preflight(s, cluster, force);
    const std::filesystem::path dir = out_dir.empty() ? std::filesystem::path("results") / s.name
                                                      : std::filesystem::path(out_dir);
    RunResult result;
    double wall_seconds = 0;
    std::optional<SeedsResult> seeds;
    const int seed_count = run_seeds_count > 0 ? run_seeds_count : s.simulation.seeds;
    if (!trace_file.empty() && seed_count > 1) {
      err << "fabricsim: error: --trace records one run; it cannot be combined with " << seed_count
          << " seeds (--seeds or simulation.seeds)\n";
      return kExitUsage;
    }
    try {
      std::optional<ProgressDisplay> progress;
      ProgressFn callback;
      if (!quiet) {
        progress.emplace(err, interactive);
        callback = [&](const Progress& p) { progress->update(p); };
      }
      const auto wall_start = std::chrono::steady_clock::now();
      TrainingTrace trace;
      if (seed_count > 1) {
        seeds = run_seeds(s, cluster, seed_count, run_function(s));
        result = seeds->runs.front();
      } else {
        result = s.has_workload
                     ? run_training(s, cluster, callback, trace_file.empty() ? nullptr : &trace)
                     : run_scenario(s, cluster, callback);
      }
      if (!trace_file.empty()) {
        write_file_atomically(trace_file, chrome_trace(trace));
        if (const std::string notice = trace_cap_notice(trace); !notice.empty())
          err << "fabricsim: note: " << trace_file << ": " << notice << "\n";
      }
      wall_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
      if (progress) progress->finish();
    } catch (const ConfigError&) {
      throw;  // an input error found once the fabric is built (simulation.timeseries): exit 2
    } catch (const std::exception& e) {
      err << "fabricsim: simulation failed: " << e.what() << '\n';
      return kExitFailure;
    }
    write_results(dir, s, result, seeds ? &*seeds : nullptr);
    if (report_kind == "html")
      write_file_atomically(dir / "report.html", html_report({s}, {result}));
    if (!quiet) {
      if (format == "json") {
        out << results_json(s, result);
      } else {
        out << text_report(s, result);
        if (seeds) out << seeds_report(*seeds);
        // Wall-clock numbers go to the report only, never into results.json (determinism).
        std::uint64_t hops = 0;
        for (const auto& [name, value] : result.counters)
          if (name.ends_with(".tx_data_packets")) hops += value;
        out << fmt::format(
            "\n  wall time {:.3f} s, {:.2f} M events/s, {:.2f} M data packet-hops/s\n",
            wall_seconds, static_cast<double>(result.events) / wall_seconds * 1e-6,
            static_cast<double>(hops) / wall_seconds * 1e-6);
        out << fmt::format("  results: {}\n", (dir / "results.json").string());
      }
    }
    return kExitOk;
  } catch (const ConfigError& e) {
    return report_config_error(e, err);
  } catch (const FabricError& e) {
    err << "fabricsim: error: fabric: " << e.what() << '\n';
    return kExitUsage;
  } catch (const validation::ParseError& e) {
    err << "fabricsim: error: " << e.what() << '\n';
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    err << "fabricsim: error: " << e.what() << '\n';
    return kExitUsage;
  } catch (const std::exception& e) {
    err << "fabricsim: error: " << e.what() << '\n';
    return kExitFailure;
  }
}

}  // namespace fabricsim
