#include <gtest/gtest.h>

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
