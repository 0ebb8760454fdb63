#include "cli/commands.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <sstream>

#include "cli/experiment.hpp"
#include "cli/output.hpp"
#include "fabricsim/version.hpp"
#include "loader/scenario.hpp"
#include "topologies/nccl_xml.hpp"

namespace fabricsim {
namespace {

struct ScenarioArgs {
  std::string file;
  std::vector<std::string> overrides;
  std::optional<std::uint64_t> seed;

  void add_to(CLI::App& cmd) {
    cmd.add_option("scenario", file, "Scenario file (TOML)")->required();
    cmd.add_option("--set", overrides, "Override a scenario key, e.g. --set fabric.hosts=16")
        ->take_last()
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd.add_option("--seed", seed, "Random seed (overrides the scenario's 'seed')");
  }
  Scenario load() const {
    LoadOptions options{.overrides = overrides};
    if (seed) options.overrides.push_back(fmt::format("seed={}", *seed));
    return load_scenario(file, options);
  }
};

// Progress on a terminal: simulated time, wall time, events/s and ETA, at most twice a second,
// starting after the first second of wall time.
class ProgressDisplay {
 public:
  ProgressDisplay(std::ostream& err, Time stop) : err_(err), stop_(stop) {}
  void update(Time now, std::uint64_t events) {
    const auto wall = clock::now() - start_;
    if (wall < std::chrono::seconds(1) || clock::now() - last_ < std::chrono::milliseconds(500))
      return;
    last_ = clock::now();
    const double secs = std::chrono::duration<double>(wall).count();
    std::string eta;
    if (stop_ != Time::max() && now > Time::zero())
      eta = fmt::format(", ETA <= {:.0f}s", secs * ((stop_ - now) / now));
    err_ << fmt::format("\r  simulated {} | wall {:.1f}s | {:.2f}M events/s{}   ", to_string(now),
                        secs, static_cast<double>(events) / secs * 1e-6, eta)
         << std::flush;
    shown_ = true;
  }
  void finish() {
    if (shown_) err_ << "\r" << std::string(78, ' ') << "\r" << std::flush;
  }

 private:
  using clock = std::chrono::steady_clock;
  std::ostream& err_;
  Time stop_;
  clock::time_point start_ = clock::now();
  clock::time_point last_ = start_;
  bool shown_ = false;
};

struct TopoArgs {
  ScenarioArgs scenario;
  bool matrix = false;
  bool json = false;
  std::string dot;
  std::string nccl_xml_dir;
};

int run_topo(const TopoArgs& args, std::ostream& out, std::ostream& err) {
  const Scenario s = args.scenario.load();
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

int report_config_error(const ConfigError& e, std::ostream& err) {
  for (const auto& m : e.messages()) err << "fabricsim: error: " << m << '\n';
  return kExitUsage;
}

}  // namespace

int cli_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             bool interactive) {
  CLI::App app{"fabricsim: a discrete-event simulator of GPU server networks", "fabricsim"};
  app.set_version_flag("--version", std::string("fabricsim ") + kVersion);
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
  run->add_flag("--quiet,-q", quiet, "Print no report and no progress (results are still written)");

  ScenarioArgs check_args;
  bool resolved = false;
  CLI::App* check = app.add_subcommand("check", "Validate a scenario without running it");
  check_args.add_to(*check);
  check->add_flag("--resolved", resolved, "Print the scenario as it would run, defaults included");

  TopoArgs topo_args;
  CLI::App* topo =
      app.add_subcommand("topo", "Build a scenario's cluster and summarise its topology");
  topo_args.scenario.add_to(*topo);
  topo->add_flag("--matrix", topo_args.matrix, "Print the nvidia-smi topo -m matrix of a server");
  topo->add_option("--dot", topo_args.dot, "Write the graph in Graphviz format to FILE");
  topo->add_option("--nccl-xml", topo_args.nccl_xml_dir,
                   "Write one NCCL topology XML per server into DIR");
  topo->add_flag("--json", topo_args.json, "Print the summary as JSON");

  std::vector<std::string> argv_storage{"fabricsim"};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitUsage;
  }

  try {
    if (*check) {
      const Scenario s = check_args.load();
      const BuiltCluster cluster(s);  // the fabric must be buildable too
      if (resolved) {
        out << toml::toml_formatter(s.resolved) << '\n';
      } else {
        out << fmt::format("{}: scenario '{}' is valid\n", check_args.file, s.name);
      }
      return kExitOk;
    }
    if (*topo) return run_topo(topo_args, out, err);
    const Scenario s = run_args.load();
    const BuiltCluster cluster(s);
    const std::filesystem::path dir = out_dir.empty() ? std::filesystem::path("results") / s.name
                                                      : std::filesystem::path(out_dir);
    RunResult result;
    double wall_seconds = 0;
    try {
      std::optional<ProgressDisplay> progress;
      Simulation::ProgressFn callback;
      if (interactive && !quiet) {
        progress.emplace(err, s.simulation.stop_time);
        callback = [&](Time now, std::uint64_t events) { progress->update(now, events); };
      }
      const auto wall_start = std::chrono::steady_clock::now();
      result = run_scenario(s, cluster, callback);
      wall_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
      if (progress) progress->finish();
    } catch (const std::exception& e) {
      err << "fabricsim: simulation failed: " << e.what() << '\n';
      return kExitFailure;
    }
    write_results(dir, s, result);
    if (!quiet) {
      if (format == "json") {
        out << results_json(s, result);
      } else {
        out << text_report(s, result);
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
  } catch (const std::exception& e) {
    err << "fabricsim: error: " << e.what() << '\n';
    return kExitFailure;
  }
}

}  // namespace fabricsim
