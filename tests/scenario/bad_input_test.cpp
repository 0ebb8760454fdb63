// Bad input gets a clear error (exit 2, the file's position), never a crash, a hang or
// unbounded memory; and what `run` would refuse before simulating, `check` refuses too.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.hpp"
#include "experiments/run.hpp"
#include "scenario/scenario.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_dir.hpp"

using namespace fabricsim;
namespace fs = std::filesystem;

namespace {

using namespace fabricsim::tests;

// The default scenario (an 8-to-1 incast on 9 hosts) with `edits` (from, to) applied.
std::string default_with(const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string text = read(kSource + "/scenarios/default.toml");
  for (const auto& [from, to] : edits) {
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  return text;
}

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tests::temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }
  // `check` and `run` both refuse `file` with exit 2, at `position` ("file:line"), saying
  // `what`.
  void both_refuse(const std::string& file, const std::string& position, const std::string& what,
                   const std::vector<std::string>& extra = {}) {
    for (const char* command : {"check", "run"}) {
      std::vector<std::string> args{command, file, "--quiet", "--out", (dir_ / "out").string()};
      if (std::string(command) == "check") args = {command, file};
      args.insert(args.end(), extra.begin(), extra.end());
      const Outcome o = cli(args);
      EXPECT_EQ(o.code, 2) << command << ": " << o.err;
      EXPECT_NE(o.err.find("fabricsim: error: " + position), std::string::npos)
          << command << ": " << o.err;
      EXPECT_NE(o.err.find(what), std::string::npos) << command << ": " << o.err;
    }
  }
  fs::path dir_;
};

}  // namespace

TEST_F(BadInput, NestingDeeperThan64LevelsIsRefusedBeforeParsing) {
  // 40,000 levels once overflowed the TOML parser's stack (a crash, not an error).
  std::string deep_header = "[a", deep_key = "a", deep_array = "x = ";
  for (int i = 0; i < 40'000; ++i) {
    deep_header += ".a";
    deep_key += ".a";
    deep_array += "[";
  }
  for (const auto& [name, text] :
       std::vector<std::pair<std::string, std::string>>{{"header.toml", "\n" + deep_header + "]\n"},
                                                        {"key.toml", "\n" + deep_key + " = 1\n"},
                                                        {"array.toml", "\n" + deep_array + "\n"}}) {
    const std::string file = write(name, text);
    try {
      load_scenario(file);
      ADD_FAILURE() << name << " loaded";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(file + ":2: nested deeper than 64 levels", 0), 0u)
          << e.what();
    }
  }
  // 60 levels are TOML like any other: parsed, then refused as an unknown key.
  std::string key60 = "a";
  for (int i = 1; i < 60; ++i) key60 += ".a";
  try {
    load_scenario(write("sixty.toml", key60 + " = 1\n"));
    ADD_FAILURE() << "sixty.toml loaded";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'a'"), std::string::npos) << e.what();
  }
}

TEST_F(BadInput, ScenarioNamesThatAreNotOnePlainFolderNameAreRefused) {
  const std::string line = "name = \"incast-8to1\"";
  for (const std::string& bad :
       {std::string("../../etc/x"), std::string("a/b"), std::string("a\\\\b"), std::string("..."),
        std::string("a\\nb"), std::string(201, 'x')}) {
    const std::string file = write("named.toml", default_with({{line, "name = \"" + bad + "\""}}));
    both_refuse(file, file + ":11:8: name:", "without '/'");
  }
  const std::string ok =
      write("ok.toml", default_with({{line, fmt::format("name = \"{}\"", std::string(200, 'x'))}}));
  EXPECT_EQ(cli({"check", ok}).code, 0);
}

TEST_F(BadInput, FilesLargerThanTheInputCapAreRefusedWithoutReadingThem) {
  // /dev/zero never ends: reading it whole once filled memory.
  const std::string zero = write("zero.toml", "extends = \"/dev/zero\"\n");
  both_refuse(zero, zero + ":1:11: extends: /dev/zero: larger than 64 MiB", "scenario file");
  // A 6 GB file among the measurements (sparse: it costs no disk).
  const fs::path measurements = dir_ / "measurements";
  fs::create_directories(measurements);
  std::ofstream(measurements / "all_reduce_perf.txt").close();
  fs::resize_file(measurements / "all_reduce_perf.txt", 6'000'000'000ull);
  const Outcome o = cli({"validate", "--measurements", measurements.string(), "--scenario",
                         kSource + "/tests/data/workload.toml"});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("all_reduce_perf.txt: larger than 64 MiB"), std::string::npos) << o.err;
}

TEST_F(BadInput, SizesPastTheirLimitsAreRefusedWithTheEstimateUnlessForced) {
  // Sampling every 1 ps up to stop_time 10 ms: 10^10 samples per gauge.
  const std::string ts =
      write("ts.toml", default_with({{"sample_interval = \"2us\"", "sample_interval = \"1ps\""},
                                     {"timeseries = [\"switch0.port0.queue_bytes\", "
                                      "\"switch0.buffer_bytes\"]",
                                      "timeseries = [\"*\"]"}}));
  both_refuse(ts, ts + ":17:19: simulation.sample_interval:", "10000000000 samples per gauge");
  // All-to-all on 1,000 hosts, 10^6 messages each way: 999 x 1000 x 10^6 ~ 10^12 messages.
  const std::string msgs =
      write("msgs.toml", default_with({{"hosts = 9", "hosts = 1000"},
                                       {"buffer = \"1MiB\"", "buffer = \"1GiB\""},
                                       {"pattern = \"incast\"", "pattern = \"all-to-all\""},
                                       {"messages = 1", "messages = 1000000"}}));
  both_refuse(msgs, msgs + ":38:12: traffic.messages:", "999000000000 messages (1000 hosts)");
  EXPECT_EQ(cli({"check", msgs, "--force"}).code, 0);  // the estimate is the only objection
  const Outcome cmp = cli({"compare", msgs});
  EXPECT_EQ(cmp.code, 2);
  EXPECT_NE(cmp.err.find("traffic.messages:"), std::string::npos) << cmp.err;
  // 250 x 250 sweep points.
  std::string seeds, counts;
  for (int i = 1; i <= 250; ++i) {
    seeds += fmt::format("{}{}", i > 1 ? ", " : "", i);
    counts += fmt::format("{}{}", i > 1 ? ", " : "", i);
  }
  const std::string sweep = write(
      "sweep.toml", default_with({}) + fmt::format("\n[sweep]\nseed = [{}]\n\"traffic.messages\" = "
                                                   "[{}]\n",
                                                   seeds, counts));
  both_refuse(sweep, sweep + ":42:8: sweep: 62500 points", "--force");
}

TEST_F(BadInput, CheckRefusesWhatRunWouldRefuseAtTheScenariosOwnPosition) {
  // A [workload] trains GPUs: without a [server] run once failed only after starting.
  const std::string workload = read(kSource + "/tests/data/workload.toml");
  const std::string no_server = write(
      "no_server.toml", default_with({}) + "\n" + workload.substr(workload.find("[workload]")));
  both_refuse(no_server, no_server + ":41:1: workload:", "needs a [server]");
  // A 70,000-port star with a 32 MiB buffer: reserved 2 x 70,000 x 4 KiB = 573 MB alone.
  const std::string buffer = write(
      "buffer.toml",
      default_with({{"hosts = 9", "hosts = 70000"}, {"buffer = \"1MiB\"", "buffer = \"32MiB\""}}));
  both_refuse(buffer,
              buffer + ":32:10: switch.buffer:", "smaller than the reserved (140000 x 4KiB)");
  // A typo in a [sweep] key is the scenario's, not a command-line --set's, and is found in the
  // schema before any point loads.
  const std::string typo =
      write("typo.toml", default_with({}) + "\n[sweep]\n\"fabric.hostz\" = [9, 10]\n");
  both_refuse(typo, typo + ":42:18: sweep: 'fabric.hostz' is not a scenario key",
              "did you mean 'fabric.hosts'?");
}

TEST_F(BadInput, SprayingAtFlowLevelIsRefusedInsteadOfCollidingEveryFlow) {
  // The flow level routes a flow on one path; "spray" once put every flow on the same one.
  const std::string file = write(
      "spray.toml", default_with({{"kind = \"star\"", "kind = \"star\"\nrouting = \"spray\""}}));
  both_refuse(file, file + ":22:11: fabric.routing:", "needs fidelity = \"packet\"",
              {"--fidelity", "flow"});
  EXPECT_EQ(cli({"check", file}).code, 0);  // at packet level it sprays
}

TEST_F(BadInput, APermutationThatMapsEveryHostToItselfIsRefused) {
  // shift 9 on 9 hosts: host h sends to (h + 9) mod 9 = h, so nothing would run.
  const std::string file =
      write("perm.toml",
            default_with({{"pattern = \"incast\"", "pattern = \"permutation\"\nshift = 18"}}));
  both_refuse(file, file + ":37:9: traffic.shift:", "every host would send to itself");
  const std::string one =
      write("perm1.toml",
            default_with({{"pattern = \"incast\"", "pattern = \"permutation\"\nshift = 10"}}));
  EXPECT_EQ(cli({"check", one}).code, 0);  // 10 mod 9 = 1: a real permutation
}

TEST_F(BadInput, FlagsOutOfRangeNameTheFlagAndUnknownCommandsGetASuggestion) {
  const std::string scenario = kSource + "/scenarios/default.toml";
  const Outcome nan = cli(
      {"validate", "--measurements", dir_.string(), "--scenario", scenario, "--max-error", "nan"});
  EXPECT_EQ(nan.code, 2);
  EXPECT_NE(nan.err.find("--max-error: expected a finite number above 0, got 'nan'"),
            std::string::npos)
      << nan.err;
  const Outcome step = cli({"nccl-tests", "all_reduce_perf", "--scenario",
                            kSource + "/tests/data/workload.toml", "-f", "-2"});
  EXPECT_EQ(step.code, 2);
  EXPECT_NE(step.err.find("--stepfactor: Value -2 not in range 1"), std::string::npos) << step.err;
  const Outcome seed = cli({"check", scenario, "--seed", "-1"});
  EXPECT_EQ(seed.code, 2);
  EXPECT_NE(seed.err.find("--seed: Value -1 not in range 0"), std::string::npos) << seed.err;
  const Outcome typo = cli({"rnu", scenario});
  EXPECT_EQ(typo.code, 2);
  EXPECT_EQ(typo.err, "fabricsim: error: unknown command 'rnu'; did you mean 'run'?\n");
}

TEST_F(BadInput, ASweepWithAFailedPointWritesNoCompleteSummary) {
  // Point 2 (shift 9 on 9 hosts) fails its preflight; points 1 and 3 run.
  const std::string file =
      write("sweep.toml", default_with({{"pattern = \"incast\"", "pattern = \"permutation\""},
                                        {"message_size = \"2MiB\"", "message_size = \"64KiB\""}}) +
                              "\n[sweep]\n\"traffic.shift\" = [1, 9, 2]\n");
  const fs::path out = dir_ / "sweep-out";
  fs::create_directories(out);
  std::ofstream(out / "summary.txt") << "an older complete summary\n";
  const Outcome o = cli({"run", file, "--out", out.string(), "-j", "1"});
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("point 1 (traffic.shift=9) failed"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(out / "summary.txt"));
  const std::string partial = read(out / "summary-incomplete.txt");
  EXPECT_EQ(partial.rfind("INCOMPLETE", 0), 0u) << partial;
  EXPECT_NE(partial.find("point-001: traffic.shift=9 (FAILED"), std::string::npos) << partial;
  EXPECT_TRUE(fs::exists(out / "point-000" / "results.json"));
  EXPECT_TRUE(fs::exists(out / "point-002" / "results.json"));
}

TEST_F(BadInput, AFailedWriteSaysWhyAndAFailedReportExitsNonZero) {
  const std::string scenario = kSource + "/scenarios/default.toml";
  // Results under a regular file: the error carries the system's reason.
  const std::string file = write("plain-file", "x");
  const Outcome o = cli({"run", scenario, "--quiet", "--out", file + "/results"});
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find("Not a directory"), std::string::npos) << o.err;
  // The report to a full device (/dev/full: every write fails with ENOSPC), and to a closed
  // standard output: the binary exits 1 and says why.
  const std::string bin = std::string(FABRICSIM_BINARY_DIR) + "/fabricsim";
  const fs::path log = dir_ / "log";
  const auto status = [&](const std::string& redirect) {
    const int s = std::system(
        fmt::format("{} check {} {} 2>{}", bin, scenario, redirect, log.string()).c_str());
    return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  };
  EXPECT_EQ(status(">/dev/full"), 1);
  EXPECT_NE(read(log).find("cannot write to standard output: No space left on device"),
            std::string::npos)
      << read(log);
  EXPECT_EQ(status(">&-"), 1);
  EXPECT_NE(read(log).find("standard output is closed"), std::string::npos) << read(log);
  EXPECT_EQ(status(">/dev/null"), 0);
}
