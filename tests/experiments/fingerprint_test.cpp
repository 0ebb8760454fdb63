// Event-stream fingerprints (Simulation::fingerprint) of one run of each kind: packet and flow
// traffic, collectives at both levels, a training step. A change to which events run, when or
// in what order changes them, so a refactor that must keep behaviour (issue 16) shows here
// first. To accept an intended change: FABRICSIM_UPDATE_GOLDEN=1 ctest -R Fingerprint, and say
// why in the commit.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "experiments/nccl_tests.hpp"
#include "experiments/run.hpp"
#include "experiments/training.hpp"
#include "scenario/scenario.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_dir.hpp"

using namespace fabricsim;

namespace {

// golden.toml records a packet-level queue; at flow level the same port's utilization gauge.
const std::string kFlowSeries = "simulation.timeseries=[\"switch0.port0.utilization\"]";

const std::string kSource = FABRICSIM_SOURCE_DIR;
const std::string kGolden = kSource + "/tests/data/fingerprints.txt";

Scenario load(const std::string& file, std::vector<std::string> overrides = {}) {
  return load_scenario(kSource + "/" + file, {.overrides = std::move(overrides)});
}

std::uint64_t traffic(const Scenario& s) {
  const BuiltCluster c(s);
  return run_scenario(s, c).fingerprint;
}

std::uint64_t collectives(const Scenario& s) {
  const BuiltCluster c(s);
  NcclTestsArgs a;
  a.min_bytes = 1 << 20;
  a.max_bytes = 4 << 20;
  a.step_factor = 4;
  return run_nccl_tests(s, c, a).fingerprint;
}

std::uint64_t training(const Scenario& s) {
  const BuiltCluster c(s);
  return run_training(s, c).fingerprint;
}

// name -> fingerprint of every run kind.
std::map<std::string, std::uint64_t> fingerprints() {
  return {
      {"traffic-packet", traffic(load("tests/data/golden.toml"))},
      {"traffic-flow", traffic(load("tests/data/golden.toml", {"fidelity=\"flow\"", kFlowSeries}))},
      {"nccl-packet", collectives(load("tests/data/nccl_star.toml"))},
      {"nccl-flow-dgx", collectives(load("tests/data/workload.toml"))},
      {"training-flow", training(load("tests/data/workload.toml"))},
  };
}

}  // namespace

TEST(Fingerprint, EveryKindOfRunKeepsItsEventStream) {
  const auto now = fingerprints();
  std::string text;
  for (const auto& [name, fp] : now) text += fmt::format("{} {:016x}\n", name, fp);
  if (std::getenv("FABRICSIM_UPDATE_GOLDEN") != nullptr) std::ofstream(kGolden) << text;
  std::ifstream in(kGolden);
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(text, golden.str()) << "event streams differ from " << kGolden;
  for (const auto& [name, fp] : now) EXPECT_NE(fp, 0u) << name << " ran no event";
  // Deterministic in one process too, and sensitive: another seed moves the start jitter.
  EXPECT_EQ(traffic(load("tests/data/golden.toml")), now.at("traffic-packet"));
  EXPECT_NE(traffic(load("tests/data/golden.toml", {"seed=2"})), now.at("traffic-packet"));
}

namespace {

// What a user reads from each kind of run, through the command line: results.json of packet
// (tests/data/golden_results.json, Cli.RunWritesResults...) and flow traffic and of a training
// step, and nccl-tests' output at both levels. Fingerprints pin the event order; these pin
// every printed number and name.
struct GoldenRun {
  std::string file;  // under tests/data/golden/
  std::vector<std::string> args;
  bool results_json;  // the output is results.json in --out (else stdout)
};

std::vector<GoldenRun> golden_runs() {
  const std::string nccl = "--scenario";
  return {
      {"traffic-flow.json",
       {"run", kSource + "/tests/data/golden.toml", "--set", "fidelity=\"flow\"", "--set",
        kFlowSeries},
       true},
      {"training-flow.json", {"run", kSource + "/tests/data/workload.toml"}, true},
      {"nccl-packet.txt",
       {"nccl-tests", "all_reduce_perf", "-b", "1M", "-e", "4M", "-f", "4", nccl,
        kSource + "/tests/data/nccl_star.toml"},
       false},
      {"nccl-flow-dgx.txt",
       {"nccl-tests", "all_reduce_perf", "-b", "1M", "-e", "4M", "-f", "4", nccl,
        kSource + "/tests/data/workload.toml"},
       false},
  };
}

}  // namespace

TEST(Golden, EveryKindOfRunKeepsItsResults) {
  using fabricsim::tests::cli;
  using fabricsim::tests::read;
  for (const GoldenRun& g : golden_runs()) {
    const std::filesystem::path out = fabricsim::tests::temp_dir("golden");
    std::vector<std::string> args = g.args;
    if (g.results_json) args.insert(args.end(), {"--out", out.string(), "--quiet"});
    const auto r = cli(args);
    ASSERT_EQ(r.code, 0) << g.file << ": " << r.err;
    const std::string text = g.results_json ? read(out / "results.json") : r.out;
    const std::string file = kSource + "/tests/data/golden/" + g.file;
    if (std::getenv("FABRICSIM_UPDATE_GOLDEN") != nullptr)
      std::ofstream(file, std::ios::binary) << text;
    EXPECT_EQ(text, read(file)) << "output differs from " << file;
    std::filesystem::remove_all(out);
  }
}
