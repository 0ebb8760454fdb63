#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "scenario/scenario.hpp"

using namespace fabricsim;
using namespace fabricsim::literals;

namespace {

const std::string kData = std::string(FABRICSIM_SOURCE_DIR) + "/tests/data/";

std::vector<std::string> errors_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.messages();
  }
  return {};
}

}  // namespace

TEST(Scenario, DefaultScenarioLoadsWithItsValues) {
  const Scenario s = load_scenario(std::string(FABRICSIM_SOURCE_DIR) + "/scenarios/default.toml");
  EXPECT_EQ(s.name, "incast-8to1");
  EXPECT_EQ(s.cluster.hosts, 9u);
  EXPECT_EQ(s.cluster.fabric.link_rate, 100_Gbps);
  EXPECT_EQ(s.network.buffer.buffer, 1_MiB);
  EXPECT_EQ(s.traffic.message_size, 2_MiB);
  EXPECT_EQ(s.simulation.sample_interval, 2_us);
}

TEST(Scenario, ExtendsMergesDeeplyWithTheChildWinning) {
  const Scenario s = load_scenario(kData + "child.toml");
  EXPECT_EQ(s.name, "child");
  EXPECT_EQ(s.seed, 3u);                        // from base
  EXPECT_EQ(s.cluster.hosts, 8u);               // child overrides
  EXPECT_EQ(s.network.buffer.buffer, 256_KiB);  // base value in a table the child also writes
  EXPECT_EQ(s.traffic.pattern, TrafficPattern::kPermutation);
  EXPECT_EQ(s.traffic.messages_per_destination, 2u);
}

TEST(Scenario, SetOverridesAreCheckedLikeTheFile) {
  const Scenario s = load_scenario(
      kData + "child.toml",
      {.overrides = {"fabric.link_rate=400Gbps", "seed=9", "traffic.pattern=\"all-to-all\""}});
  EXPECT_EQ(s.cluster.fabric.link_rate, 400_Gbps);
  EXPECT_EQ(s.seed, 9u);
  EXPECT_EQ(s.traffic.pattern, TrafficPattern::kAllToAll);
  EXPECT_EQ(
      errors_of([] { load_scenario(kData + "child.toml", {.overrides = {"fabric.hosts=two"}}); }),
      std::vector<std::string>{
          "--set 'fabric.hosts=two': fabric.hosts: expected an integer, got a string \"two\""});
  EXPECT_EQ(
      errors_of([] { load_scenario(kData + "child.toml", {.overrides = {"fabric.hots=2"}}); }),
      std::vector<std::string>{
          "--set 'fabric.hots=2': unknown key 'fabric.hots'; did you mean 'hosts'?"});
  EXPECT_EQ(errors_of([] { load_scenario(kData + "child.toml", {.overrides = {"seed"}}); }),
            std::vector<std::string>{"--set 'seed': expected key=value, e.g. --set seed=7"});
  EXPECT_EQ(errors_of([] { load_scenario(kData + "child.toml", {.overrides = {"seed.x=1"}}); }),
            std::vector<std::string>{"--set 'seed.x=1': 'seed' is an integer 3, not a table"});
}

TEST(Scenario, EveryProblemInABrokenFileIsReportedWithItsPosition) {
  const std::string f = kData + "broken.toml";
  EXPECT_EQ(
      errors_of([&] { load_scenario(f); }),
      (std::vector<std::string>{
          f + ":4:12: unknown key 'simulation.stop_tme'; did you mean 'stop_time'?",
          f + ":7:9: fabric.hosts: must be between 2 and 1048576, got 0",
          f + ":8:13: fabric.link_rate: expected a quoted value with its unit, e.g. \"100Gbps\", "
              "got an integer 100",
          f + ":17:11: traffic.pattern: expected one of \"incast\", \"permutation\", "
              "\"all-to-all\", got \"incats\"; did you mean \"incast\"?",
          f + ":16:1: missing required key 'traffic.message_size' (written with its unit, e.g. "
              "\"64KiB\")",
          f + ":11:7: nic.mtu: must be greater than zero, got \"0B\"",
          f + ":14:10: switch.buffer: expected a size such as \"64KiB\" (B, KB, MB, GB, TB, "
              "KiB, MiB, GiB, TiB), got \"12 parsecs\": unknown unit \"parsecs\"",
      }));
}

TEST(Scenario, SyntaxErrorsNameTheLine) {
  const std::string f = kData + "syntax.toml";
  const auto errors = errors_of([&] { load_scenario(f); });
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind(f + ":2:", 0), 0u) << errors[0];
  EXPECT_NE(errors[0].find("invalid TOML"), std::string::npos);
}

TEST(Scenario, MissingFilesAndExtendsCyclesAreErrors) {
  EXPECT_EQ(errors_of([&] { load_scenario(kData + "nope.toml"); }),
            std::vector<std::string>{
                kData + "nope.toml: cannot read the scenario file (missing or unreadable)"});
  const auto cycle = errors_of([&] { load_scenario(kData + "cycle_a.toml"); });
  ASSERT_EQ(cycle.size(), 1u);
  EXPECT_NE(cycle[0].find("'extends' makes a cycle: cycle_a.toml -> cycle_b.toml -> cycle_a.toml"),
            std::string::npos)
      << cycle[0];
}

TEST(Scenario, MissingRequiredKeysAreNamed) {
  const auto errors =
      errors_of([] { load_scenario_text("[fabric]\nhosts = 2\n[traffic]\n", "mem.toml"); });
  EXPECT_EQ(errors, (std::vector<std::string>{
                        "mem.toml:1:1: missing required key 'fabric.link_rate' (written with its "
                        "unit, e.g. \"100Gbps\")",
                        "mem.toml:3:1: missing required key 'traffic.message_size' (written with "
                        "its unit, e.g. \"64KiB\")",
                    }));
}

TEST(Scenario, RegressionInputsGiveCleanErrorsOrValidScenarios) {
  // Inputs that once crashed or stressed the loader (fuzzer finds go here as files): each must
  // load or fail with ConfigError, nothing else.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(FABRICSIM_SOURCE_DIR) +
                                                           "/tests/regressions")) {
    ++files;
    try {
      load_scenario(e.path());
    } catch (const ConfigError& err) {
      EXPECT_FALSE(err.messages().empty()) << e.path();
      for (const auto& m : err.messages()) EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
  EXPECT_GE(files, 3);
}

TEST(Scenario, NcclTableSetsTheEnvironmentAndATopologyFileMakesRingsLeafAware) {
  const std::string base = "[fabric]\nhosts = 4\nlink_rate = \"100Gbps\"\n";
  const Scenario plain = load_scenario_text(base, "n.toml");
  EXPECT_EQ(plain.nccl.server_order, ServerOrder::kHostfile);
  EXPECT_EQ(plain.nccl.algos.rows, default_algo_enable().rows);
  EXPECT_EQ(plain.nccl.buffsize, Bytes(4 << 20));
  // NCCL's IB defaults (src/transport/net_ib/connect.cc: NCCL_IB_TIMEOUT 20, NCCL_IB_RETRY_CNT
  // 7), the same from a scenario and from the struct a model is built with in code (the struct
  // once said 14).
  EXPECT_EQ(plain.network.nic.ib_timeout, 20);
  EXPECT_EQ(RdmaConfig{}.ib_timeout, 20);
  EXPECT_EQ(plain.network.nic.ib_retry_cnt, RdmaConfig{}.ib_retry_cnt);
  const Scenario s = load_scenario_text(
      base +
          "[nccl]\nNCCL_ALGO = \"Tree\"\nNCCL_PROTO = \"LL128\"\nNCCL_BUFFSIZE = 1048576\n"
          "NCCL_IB_TIMEOUT = 22\nNCCL_NET_GDR_LEVEL = \"LOC\"\nNCCL_TOPO_FILE = \"" +
          std::string(FABRICSIM_SOURCE_DIR) + "/tests/data/topo/dgx-h100-nccl-topo.xml\"\n",
      "n.toml");
  EXPECT_EQ(s.nccl.algos.at(CollOp::kAllReduce, static_cast<int>(Algo::kTree)), 1);
  EXPECT_EQ(s.nccl.algos.at(CollOp::kAllReduce, static_cast<int>(Algo::kRing)), 0);
  EXPECT_EQ(s.nccl.protos.at(CollOp::kAllGather, static_cast<int>(Proto::kLL128)), 1);
  EXPECT_EQ(s.nccl.protos.at(CollOp::kAllGather, static_cast<int>(Proto::kSimple)), 0);
  EXPECT_EQ(s.nccl.buffsize, Bytes(1 << 20));
  EXPECT_EQ(s.network.nic.ib_timeout, 22);
  EXPECT_FALSE(s.network.host.gpudirect);
  EXPECT_EQ(s.nccl.server_order, ServerOrder::kLeaf);
  const auto errors = errors_of([&] {
    load_scenario_text(base + "[nccl]\nNCCL_PROTO = \"LL64\"\nNCCL_TOPO_FILE = \"" +
                           std::string(FABRICSIM_SOURCE_DIR) + "/tests/data/topo/truncated.txt\"\n",
                       "n.toml");
  });
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("NCCL_PROTO"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("NCCL_TOPO_FILE"), std::string::npos) << errors[1];
}

namespace {

// A scratch folder of scenario files for one test.
struct ScenarioFiles {
  std::filesystem::path dir;
  explicit ScenarioFiles(const std::string& name)
      : dir(std::filesystem::temp_directory_path() /
            ("fabricsim_scenario_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~ScenarioFiles() { std::filesystem::remove_all(dir); }
  std::string write(const std::string& file, const std::string& text) const {
    std::ofstream(dir / file) << text;
    return (dir / file).string();
  }
};

}  // namespace

TEST(Scenario, ExtendsTakesAListAppliedInOrderWithTheFileItselfLast) {
  const ScenarioFiles f("extends_list");
  f.write("fabric.toml",
          "[fabric]\nhosts = 4\nlink_rate = \"100Gbps\"\n[switch]\nbuffer = \"2MiB\"\n");
  f.write("bigger.toml", "[fabric]\nhosts = 6\n[nic]\nmtu = \"1KiB\"\n");
  f.write("traffic.toml", "[traffic]\npattern = \"permutation\"\nmessage_size = \"64KiB\"\n");
  const std::string child =
      f.write("child.toml",
              "extends = [\"fabric.toml\", \"bigger.toml\", \"traffic.toml\"]\nname = \"listed\"\n"
              "[nic]\nmtu = \"2KiB\"\n");
  const Scenario s = load_scenario(child);
  EXPECT_EQ(s.name, "listed");
  EXPECT_EQ(s.cluster.hosts, 6u);                   // bigger.toml over fabric.toml
  EXPECT_EQ(s.cluster.fabric.link_rate, 100_Gbps);  // only fabric.toml sets it
  EXPECT_EQ(s.network.buffer.buffer, 2_MiB);        // only fabric.toml
  EXPECT_EQ(s.traffic.message_size, 64_KiB);        // traffic.toml
  EXPECT_EQ(s.network.nic.format.mtu, 2_KiB);       // the file itself last
  // The other order: fabric.toml's 4 hosts win over bigger.toml's 6.
  const std::string reversed =
      f.write("reversed.toml", "extends = [\"bigger.toml\", \"fabric.toml\", \"traffic.toml\"]\n");
  EXPECT_EQ(load_scenario(reversed).cluster.hosts, 4u);
  // A list element that is not a file name, and a missing one, are errors at that element.
  const std::string bad = f.write("bad.toml", "extends = [\"fabric.toml\", 7]\n");
  const auto errors = errors_of([&] { load_scenario(bad); });
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind(bad + ":1:27: extends: expected a file name", 0), 0u) << errors[0];
  const std::string missing = f.write("missing.toml", "extends = [\"fabric.toml\", \"no.toml\"]\n");
  const auto gone = errors_of([&] { load_scenario(missing); });
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].rfind(missing + ":1:27: extends: ", 0), 0u) << gone[0];
  // A cycle through a list is still a cycle.
  f.write("loop.toml", "extends = [\"fabric.toml\", \"loop2.toml\"]\n");
  f.write("loop2.toml", "extends = \"loop.toml\"\n");
  const auto cycle = errors_of([&] { load_scenario((f.dir / "loop.toml").string()); });
  ASSERT_EQ(cycle.size(), 1u);
  EXPECT_NE(cycle[0].find("makes a cycle"), std::string::npos) << cycle[0];
}

TEST(Scenario, ATokenCountSetByHandThatContradictsTheShapeIsAWarning) {
  const ScenarioFiles f("tokens");
  const std::string base =
      "name = \"w\"\nfidelity = \"flow\"\n[server]\npreset = \"dgx-a100\"\ncount = 2\n[fabric]\n"
      "kind = \"star\"\nlink_rate = \"100Gbps\"\n[workload]\nforward_time = \"10ms\"\n"
      "backward_time = \"20ms\"\ngradient_bytes = \"32MiB\"\nsequence_length = 2048\n"
      "micro_batches = 4\n";
  // 4 micro-batches x 1 sequence x 2048 tokens x 2 replicas = 16,384 tokens per step.
  EXPECT_EQ(load_scenario(f.write("derived.toml", base)).workload.tokens_per_step, 16384u);
  EXPECT_TRUE(load_scenario(f.write("derived.toml", base)).warnings.empty());
  EXPECT_TRUE(
      load_scenario(f.write("agrees.toml", base + "tokens_per_step = 16384\n")).warnings.empty());
  const std::string file = f.write("contradicts.toml", base + "tokens_per_step = 1000\n");
  const Scenario s = load_scenario(file);
  EXPECT_EQ(s.workload.tokens_per_step, 1000u);  // what the user wrote is used
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], file +
                               ":15:19: workload.tokens_per_step: 1000 set by hand contradicts "
                               "the shape: micro_batches × micro_batch_size × sequence_length × "
                               "data-parallel replicas = 4 × 1 × 2048 × 2 = 16384; the value set "
                               "by hand is used");
}
