#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.hpp"
#include "experiments/sweep.hpp"
#include "fabricsim/revision.hpp"
#include "fabricsim/version.hpp"
#include "report/html.hpp"
#include "report/trace.hpp"
#include "scenario/schema.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_dir.hpp"

using namespace fabricsim;
namespace fs = std::filesystem;

namespace {

using namespace fabricsim::tests;

}  // namespace

TEST(Cli, VersionAndHelpExitZero) {
  const Outcome v = cli({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out, fmt::format("fabricsim {} (git {})\n", kVersion, kRevision));
  EXPECT_NE(std::string(kRevision), "");
  EXPECT_EQ(cli({"run", "--help"}).code, 0);
  EXPECT_EQ(cli({"check", "--help"}).code, 0);
}

TEST(Cli, BadUsageExitsTwo) {
  EXPECT_EQ(cli({}).code, 2);
  EXPECT_EQ(cli({"frobnicate"}).code, 2);
  EXPECT_EQ(cli({"run"}).code, 2);
  EXPECT_EQ(cli({"run", kSource + "/scenarios/default.toml", "--format", "yaml"}).code, 2);
}

TEST(Cli, CheckAcceptsAValidScenarioAndRejectsABrokenOne) {
  const Outcome ok = cli({"check", kSource + "/scenarios/default.toml"});
  EXPECT_EQ(ok.code, 0);
  EXPECT_NE(ok.out.find("scenario 'incast-8to1' is valid"), std::string::npos);
  const Outcome bad = cli({"check", kSource + "/tests/data/broken.toml"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(bad.err.rfind("fabricsim: error: " + kSource + "/tests/data/broken.toml:", 0), 0u)
      << bad.err;
  const Outcome missing = cli({"run", kSource + "/tests/data/nope.toml"});
  EXPECT_EQ(missing.code, 2);
}

TEST(Cli, CheckResolvedPrintsDefaultsAndOverrides) {
  const Outcome r =
      cli({"check", kSource + "/tests/data/child.toml", "--resolved", "--set", "nic.mtu=1KiB"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("mtu = '1KiB'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("header = '82B'"), std::string::npos) << r.out;  // a default
}

TEST(Cli, CheckResolvedSaysWhereEachValueCameFrom) {
  const Outcome r =
      cli({"check", kSource + "/tests/data/child.toml", "--resolved", "--set", "nic.mtu=1KiB"});
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("mtu = '1KiB'  # --set 'nic.mtu=1KiB'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cnp_priority = 6  # default"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("header = '82B'  # derived"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hosts = 8  # " + kSource + "/tests/data/child.toml:"), std::string::npos)
      << r.out;
  // Schema order: [nic] before its sub-table [nic.dcqcn], every table once.
  EXPECT_LT(r.out.find("[nic]\n"), r.out.find("[nic.dcqcn]\n"));
  EXPECT_EQ(r.out.find("[nic]\n"), r.out.rfind("[nic]\n"));
}

TEST(Cli, SchemaPrintsTheKeysAsMarkdownOrJson) {
  const Outcome md = cli({"schema", "nic.dcqcn"});
  ASSERT_EQ(md.code, 0) << md.err;
  EXPECT_NE(md.out.find("| `nic.dcqcn.variant` | `\"firmware\"`, `\"paper\"` | `\"firmware\"` |"),
            std::string::npos)
      << md.out;
  EXPECT_EQ(md.out.find("`nic.mtu`"), std::string::npos) << "only the keys under the prefix";
  const Outcome js = cli({"schema", "--json"});
  ASSERT_EQ(js.code, 0) << js.err;
  std::size_t rows = 0;
  for (auto at = js.out.find("\"key\" : "); at != std::string::npos;
       at = js.out.find("\"key\" : ", at + 1))
    ++rows;
  EXPECT_EQ(rows, scenario_schema().size());
  EXPECT_EQ(js.out.front(), '[');
  const Outcome bad = cli({"schema", "nic.dcqcm"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("did you mean 'nic.dcqcn"), std::string::npos) << bad.err;
}

TEST(Cli, RunWritesResultsAndSameSeedGivesIdenticalFiles) {
  const fs::path a = temp_dir("a"), b = temp_dir("b"), c = temp_dir("c");
  const std::string scenario = kSource + "/tests/data/golden.toml";
  ASSERT_EQ(cli({"run", scenario, "--out", a.string(), "--quiet"}).code, 0);
  ASSERT_EQ(cli({"run", scenario, "--out", b.string(), "--quiet"}).code, 0);
  ASSERT_EQ(cli({"run", scenario, "--out", c.string(), "--quiet", "--seed", "2"}).code, 0);
  const std::string ra = read(a / "results.json");
  EXPECT_FALSE(ra.empty());
  EXPECT_EQ(ra, read(b / "results.json"));
  EXPECT_EQ(read(a / "timeseries.csv"), read(b / "timeseries.csv"));
  EXPECT_NE(ra, read(c / "results.json"));  // the seed matters (start jitter)
  // No temporary files are left behind.
  for (const auto& e : fs::directory_iterator(a))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();

  // Golden file: any change of model, engine order or output format shows up here. To accept
  // an intended change: FABRICSIM_UPDATE_GOLDEN=1 ctest -R Golden, and review the diff.
  const fs::path golden = kSource + "/tests/data/golden_results.json";
  if (std::getenv("FABRICSIM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden, std::ios::binary) << ra;
  }
  EXPECT_EQ(ra, read(golden)) << "results differ from " << golden;
  for (const auto& d : {a, b, c}) fs::remove_all(d);
}

TEST(Cli, JsonFormatPrintsTheResultsDocument) {
  const fs::path dir = temp_dir("json");
  const Outcome r =
      cli({"run", kSource + "/tests/data/golden.toml", "--out", dir.string(), "--format", "json"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, read(dir / "results.json"));
  fs::remove_all(dir);
}

TEST(Cli, SimulationFailuresExitOne) {
  // A run whose output folder cannot be created fails after simulating: exit 1, one line.
  const fs::path file = temp_dir("file");
  std::ofstream(file) << "x";
  const Outcome r = cli(
      {"run", kSource + "/tests/data/golden.toml", "--out", (file / "sub").string(), "--quiet"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  fs::remove(file);
}

TEST(Cli, TopoSummarisesMatricesDotAndNcclXml) {
  const std::string scenario = kSource + "/scenarios/topologies/case-study-fabric.toml";
  const Outcome text = cli({"topo", scenario});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(
      text.out.find("bisection bandwidth 800 Gb/s one way (50.0% of the 1600 Gb/s full bisection)"),
      std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("total                   869000.00"), std::string::npos) << text.out;
  const Outcome json = cli({"topo", scenario, "--json"});
  EXPECT_NE(json.out.find("\"bisection_gbps\" : 800.0"), std::string::npos) << json.out;
  const Outcome matrix = cli({"topo", scenario, "--matrix"});
  EXPECT_EQ(matrix.out.rfind("\tGPU0\tGPU1", 0), 0u);
  EXPECT_NE(matrix.out.find("GPU0\t X \tNV12"), std::string::npos);

  const fs::path dir = temp_dir("topo");
  ASSERT_EQ(
      cli({"topo", scenario, "--dot", (dir.string() + ".dot"), "--nccl-xml", dir.string()}).code,
      0);
  // Graphviz: a cluster per server with a row per kind, every vertex once, styled by kind, the
  // network links labelled with their rate as people write it.
  const std::string dot = read(dir.string() + ".dot");
  EXPECT_EQ(dot.rfind("graph fabric {\n", 0), 0u);
  for (int server = 0; server < 4; ++server)
    EXPECT_NE(dot.find(fmt::format("subgraph cluster_server{} {{", server)), std::string::npos);
  EXPECT_EQ(dot.find("subgraph cluster_server4 "), std::string::npos);
  EXPECT_NE(dot.find("[label=\"server0.gpu0\",kind=\"gpu\",shape=box"), std::string::npos);
  EXPECT_EQ(dot.find("\"server0.gpu0\""), dot.rfind("\"server0.gpu0\""));
  EXPECT_NE(dot.find("[label=\"100 Gb/s\",rate=\"100 Gb/s\",kind=\"network\""), std::string::npos)
      << dot.substr(dot.find(" -- "), 400);
  EXPECT_EQ(dot.find("Gbps"), std::string::npos);
  EXPECT_NE(dot.find("{ rank=same;"), std::string::npos);
  EXPECT_NE(read(dir / "server3.xml").find("<system version=\"1\">"), std::string::npos);
  fs::remove_all(dir);
  fs::remove(dir.string() + ".dot");
  // No server, no matrix.
  EXPECT_EQ(cli({"topo", kSource + "/scenarios/default.toml", "--matrix"}).code, 2);
}

TEST(Cli, UnbuildableFabricsAreInputErrors) {
  const Outcome r = cli(
      {"check", kSource + "/scenarios/topologies/fat-tree-k8.toml", "--set", "fabric.hosts=200"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "fabricsim: error: fabric: a fat-tree with k = 8 holds 128 hosts but the cluster has "
            "200 endpoints: use fabric.k >= 10\n");
  const Outcome na = cli(
      {"check", kSource + "/scenarios/topologies/fat-tree-k8.toml", "--set", "fabric.spines=2"});
  EXPECT_EQ(na.code, 2);
  EXPECT_EQ(na.err,
            "fabricsim: error: --set 'fabric.spines=2': fabric.spines: does not apply: fabric.kind "
            "is \"fat-tree\"\n");
}

TEST(Cli, RunsOnAnyFabric) {
  const fs::path dir = temp_dir("ft");
  const Outcome r = cli({"run", kSource + "/scenarios/topologies/fat-tree-k8.toml", "--out",
                         dir.string(), "--set", "traffic.message_size=64KiB"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("messages_completed                       128"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(Cli, AServerWrittenOutInTomlGivesItsMatrix) {
  const Outcome m = cli({"topo", kSource + "/scenarios/topologies/custom-server.toml", "--matrix"});
  EXPECT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("GPU0\t X \tNV8\tNV8\tNV8\tPIX\tNODE\t0-31\t0"), std::string::npos) << m.out;
  const Outcome bad = cli({"check", kSource + "/scenarios/topologies/custom-server.toml", "--set",
                           "server.gpu_pcie_switch=[0, 5]"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err,
            "fabricsim: error: --set 'server.gpu_pcie_switch=[0, 5]': server.gpu_pcie_switch: "
            "expected integers between -1 and 1, got an integer 5 in it\n");
}

namespace {

// A parser written from nccl-tests' printf formats (src/util.cu): data rows are
// "%12li  %12li  %8s  %6s  %6s" then twice "  %7s  %6s  %6s  %6s" (time, algbw, busbw,
// #wrong or N/A); the footer carries "# Avg bus bandwidth    : %g".
struct PerfRow {
  std::uint64_t size, count;
  std::string type, redop;
  int root;
  double time[2], algbw[2], busbw[2];
};
struct PerfOutput {
  std::vector<PerfRow> rows;
  double avg_busbw = -1;
  std::vector<std::string> comments;
};

PerfOutput parse_perf(const std::string& text) {
  PerfOutput out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      out.comments.push_back(line);
      const auto at = line.find("Avg bus bandwidth    : ");
      if (at != std::string::npos) out.avg_busbw = std::stod(line.substr(at + 23));
      continue;
    }
    PerfRow r{};
    std::istringstream f(line);
    std::string wrong[2];
    f >> r.size >> r.count >> r.type >> r.redop >> r.root >> r.time[0] >> r.algbw[0] >>
        r.busbw[0] >> wrong[0] >> r.time[1] >> r.algbw[1] >> r.busbw[1] >> wrong[1];
    EXPECT_FALSE(f.fail()) << "unparsable row: " << line;
    EXPECT_EQ(wrong[0], "N/A");
    EXPECT_EQ(line.size(),
              12u + 2 + 12 + 2 + 8 + 2 + 6 + 2 + 6 + 2 * (2 + 7 + 2 + 6 + 2 + 6 + 2 + 5))
        << "row width differs from nccl-tests': " << line;
    out.rows.push_back(r);
  }
  return out;
}

}  // namespace

TEST(NcclTests, OutputHasNcclTestsFormatAndDefinitions) {
  const Outcome o = cli({"nccl-tests", "all_reduce_perf", "-b", "8", "-e", "1M", "-f", "4",
                         "--scenario", kSource + "/tests/data/nccl_star.toml"});
  ASSERT_EQ(o.code, 0) << o.err;
  // Header lines exactly as nccl-tests prints them.
  EXPECT_NE(o.out.find("# Collective test starting: all_reduce_perf\n"), std::string::npos);
  EXPECT_NE(o.out.find("# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 4(factor) warmup "
                       "iters: 1 iters: 20 agg iters: 1 validation: 0 graph: 0 unalign: 0\n"),
            std::string::npos);
  EXPECT_NE(o.out.find("#                                                              "
                       "out-of-place                       in-place          \n"
                       "#       size         count      type   redop    root     time   algbw   "
                       "busbw  #wrong     time   algbw   busbw  #wrong \n"
                       "#        (B)    (elements)                               (us)  (GB/s)  "
                       "(GB/s)             (us)  (GB/s)  (GB/s)         \n"),
            std::string::npos);
  EXPECT_NE(o.out.find("#  Rank  3 Group  0 Pid   1003 on    server3 device  0 [0000:07:00] "),
            std::string::npos);
  EXPECT_NE(o.out.find("# Out of bounds values : 0 OK\n"), std::string::npos);
  EXPECT_NE(o.out.find("# Collective test concluded: all_reduce_perf\n"), std::string::npos);
  const PerfOutput p = parse_perf(o.out);
  ASSERT_EQ(p.rows.size(), 9u);  // 8, 32, ..., 1M
  double sum = 0;
  for (std::size_t i = 0; i < p.rows.size(); ++i) {
    const PerfRow& r = p.rows[i];
    EXPECT_EQ(r.size, 8u << (2 * i));
    EXPECT_EQ(r.count, r.size / 4);
    EXPECT_EQ(r.type, "float");
    EXPECT_EQ(r.redop, "sum");
    EXPECT_EQ(r.root, -1);
    for (int k = 0; k < 2; ++k) {
      // Printed with two decimals: compare within the rounding of what was printed.
      EXPECT_NEAR(r.algbw[k], static_cast<double>(r.size) / 1e3 / r.time[k],
                  0.006 + 1e-3 * r.algbw[k]);
      EXPECT_NEAR(r.busbw[k], r.algbw[k] * 2 * 3 / 4, 0.011 + 1e-3 * r.busbw[k]);
      sum += r.busbw[k];
    }
    if (i > 0) {
      EXPECT_GT(r.time[0], p.rows[i - 1].time[0]);
    }
  }
  EXPECT_NEAR(p.avg_busbw, sum / (2.0 * static_cast<double>(p.rows.size())), 0.01);
  // What the model chose, as comment lines.
  EXPECT_NE(o.out.find("# fabricsim:            8 B AllReduce "), std::string::npos);
}

TEST(NcclTests, EveryBinaryRunsAndSameSeedGivesIdenticalOutput) {
  for (const std::string binary :
       {"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "broadcast_perf",
        "reduce_perf", "alltoall_perf", "sendrecv_perf"}) {
    const std::vector<std::string> args{
        "nccl-tests", binary, "-b", "1K",         "-e",
        "256K",       "-f",   "16", "--scenario", kSource + "/tests/data/nccl_star.toml"};
    const Outcome a = cli(args), b = cli(args);
    ASSERT_EQ(a.code, 0) << binary << ": " << a.err;
    EXPECT_EQ(a.out, b.out) << binary;
    const PerfOutput p = parse_perf(a.out);
    EXPECT_EQ(p.rows.size(), 3u) << binary;
    for (const PerfRow& r : p.rows) EXPECT_GT(r.time[0], 0) << binary;
  }
  const std::string dir = temp_dir("ncclj").string();
  std::filesystem::create_directories(dir);
  const Outcome j = cli({"nccl-tests", "reduce_perf", "-b", "64K", "-e", "64K", "-r", "2", "--json",
                         dir + "/r.json", "--csv", dir + "/r.csv", "--scenario",
                         kSource + "/tests/data/nccl_star.toml"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_NE(j.out.find("   65536         16384     float     sum       2"), std::string::npos)
      << j.out;
  EXPECT_NE(read(dir + "/r.json").find("\"busbw_gbps\""), std::string::npos);
  EXPECT_EQ(read(dir + "/r.csv").rfind("size,count,algorithm,protocol,channels,", 0), 0u);
  fs::remove_all(dir);
}

TEST(NcclTests, BadArgumentsExitTwoWithAMessage) {
  const std::string s = kSource + "/tests/data/nccl_star.toml";
  EXPECT_EQ(cli({"nccl-tests", "all_reduce", "--scenario", s}).code, 2);
  const Outcome size = cli({"nccl-tests", "all_reduce_perf", "-b", "8X", "--scenario", s});
  EXPECT_EQ(size.code, 2);
  EXPECT_NE(size.err.find("'8X' is not a size"), std::string::npos);
  const Outcome type = cli({"nccl-tests", "all_reduce_perf", "-d", "float7", "--scenario", s});
  EXPECT_EQ(type.code, 2);
  EXPECT_NE(type.err.find("unknown data type 'float7'"), std::string::npos);
  const Outcome gpus = cli({"nccl-tests", "all_reduce_perf", "-g", "3", "--scenario", s});
  EXPECT_EQ(gpus.code, 2);
  EXPECT_NE(gpus.err.find("do not fit"), std::string::npos) << gpus.err;
  const Outcome root = cli({"nccl-tests", "broadcast_perf", "-r", "4", "--scenario", s});
  EXPECT_EQ(root.code, 2);
  EXPECT_NE(root.err.find("root 4 is not a rank (0 to 3)"), std::string::npos) << root.err;
  const Outcome traffic = cli({"run", s});
  EXPECT_EQ(traffic.code, 2);
  EXPECT_NE(traffic.err.find("no [traffic]"), std::string::npos) << traffic.err;
}

TEST(Sweep, RunsEveryPointInParallelAndEachEqualsItsSingleRun) {
  const fs::path dir = temp_dir("sweep");
  const Outcome o = cli({"run", kSource + "/tests/data/sweep.toml", "--sweep",
                         "traffic.message_size=128KiB,256KiB", "--out", dir.string(), "-j", "2"});
  ASSERT_EQ(o.code, 0) << o.err;
  // 2 x 2 from [sweep], x 2 from --sweep: 8 points, first axis slowest.
  EXPECT_TRUE(fs::exists(dir / "point-007" / "results.json"));
  EXPECT_FALSE(fs::exists(dir / "point-008"));
  EXPECT_NE(o.out.find("point-005: switch.buffer=2MiB switch.pfc=true traffic.message_size=256KiB"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(read(dir / "summary.txt"), o.out);
  // The long form: a column per swept key, one row per point and metric, each value the one in
  // that point's results.json (both written as the shortest decimal that reads back exactly).
  const std::string csv = read(dir / "summary.csv");
  EXPECT_EQ(csv.rfind("scenario,fidelity,switch.buffer,switch.pfc,traffic.message_size,metric,"
                      "value,expected\n",
                      0),
            0u)
      << csv.substr(0, 200);
  const std::string point5 = read(dir / "point-005" / "results.json");
  const auto at = point5.find("\"aggregate_goodput_gbps\" : ", point5.find("\"metrics\" : {"));
  ASSERT_NE(at, std::string::npos);
  const double goodput = std::stod(point5.substr(at + 27));
  EXPECT_NE(csv.find(fmt::format("switch.buffer=2MiB switch.pfc=true traffic.message_size=256KiB,"
                                 "packet,2MiB,true,256KiB,aggregate_goodput_gbps,{},\n",
                                 goodput)),
            std::string::npos)
      << csv;
  std::size_t rows = 0, metrics = 0;
  for (char c : csv) rows += c == '\n';
  const auto metrics_at = point5.find("\"metrics\" : {");
  const std::string block = point5.substr(metrics_at, point5.find('}', metrics_at) - metrics_at);
  for (auto p = block.find(" : ", 12); p != std::string::npos; p = block.find(" : ", p + 1))
    ++metrics;
  EXPECT_EQ(rows, 1 + 8 * metrics);
  // A point's results are those of the scenario run alone with the same overrides.
  const fs::path single = temp_dir("sweep_single");
  ASSERT_EQ(cli({"run", kSource + "/tests/data/sweep.toml", "--set", "switch.buffer=2MiB", "--set",
                 "switch.pfc=true", "--set", "traffic.message_size=256KiB", "--out",
                 single.string(), "--quiet", "--no-sweep"})
                .code,
            0);
  const std::string a = read(dir / "point-005" / "results.json");
  const std::string b = read(single / "results.json");
  // The scenario name differs (a sweep point is named by its values); the results do not.
  EXPECT_EQ(a.substr(a.find("\"metrics\"")), b.substr(b.find("\"metrics\"")));
  EXPECT_EQ(cli({"run", kSource + "/tests/data/sweep.toml", "--sweep", "switch.pfc"}).code, 2);
  fs::remove_all(dir);
  fs::remove_all(single);
}

TEST(Workload, RunReportsTheCaseMetricsAndWritesAPerfettoTrace) {
  const fs::path dir = temp_dir("workload");
  const Outcome o = cli({"run", kSource + "/tests/data/workload.toml", "--out", dir.string(),
                         "--trace", (dir / "trace.json").string()});
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string results = read(dir / "results.json");
  for (const char* key :
       {"roce_throughput_gbps", "allreduce_ms_per_step", "allreduce_cross_node_ms",
        "pfc_pause_frames", "tokens_per_s", "scaling_efficiency"})
    EXPECT_NE(results.find(std::string("\"") + key + "\""), std::string::npos) << key;
  // Written by TOML++'s JSON formatter: one key or value per line.
  const std::string trace = read(dir / "trace.json");
  const auto has = [&trace](const std::string& s) { return trace.find(s) != std::string::npos; };
  EXPECT_EQ(trace.front(), '{');
  EXPECT_TRUE(has("\"displayTimeUnit\" : \"ms\""));
  EXPECT_TRUE(
      has("\"cat\" : \"compute\",\n\"dur\" : 5000.0,\n\"name\" : \"forward\",\n\"ph\" : \"X\","));
  EXPECT_TRUE(has("\"name\" : \"DP AllReduce bucket 0\""));
  EXPECT_TRUE(has("\"name\" : \"TP AllReduce\""));
  // The collectives' primitives, per GPU, all of them shown.
  EXPECT_TRUE(has("\"name\" : \"GPU 7 primitives\""));
  EXPECT_TRUE(has("\"cat\" : \"collective\""));
  EXPECT_TRUE(has("\"primitives_left_out\" : 0,"));
  EXPECT_EQ(o.err.find("left out"), std::string::npos) << o.err;
  // Network tracks: a process per layer, a thread per link, utilization counters that reach a
  // busy link's full rate while the DP AllReduce runs and never exceed it.
  EXPECT_TRUE(has("\"name\" : \"network: leaf downlink\""));
  EXPECT_TRUE(has("\"name\" : \"switch0.port0\""));
  EXPECT_TRUE(has("\"name\" : \"switch0.port0 utilization\""));
  double peak = 0;
  for (std::size_t at = trace.find("\"utilization\" : "); at != std::string::npos;
       at = trace.find("\"utilization\" : ", at + 1))
    peak = std::max(peak, std::stod(trace.substr(at + 16)));
  EXPECT_GT(peak, 0.9);
  EXPECT_LE(peak, 1.0 + 1e-9);
  // At packet level the links' queues are counters too.
  const Outcome packet =
      cli({"run", kSource + "/tests/data/workload.toml", "--fidelity", "packet", "--out",
           dir.string(), "--quiet", "--trace", (dir / "packet.json").string()});
  ASSERT_EQ(packet.code, 0) << packet.err;
  const std::string packet_trace = read(dir / "packet.json");
  EXPECT_NE(packet_trace.find("\"name\" : \"network: NIC\""), std::string::npos);
  EXPECT_NE(packet_trace.find(" queue\",\n\"ph\" : \"C\""), std::string::npos);
  EXPECT_NE(packet_trace.find("\"bytes\" : "), std::string::npos);
  // --trace is for training steps only, and records one run.
  EXPECT_EQ(
      cli({"run", kSource + "/scenarios/default.toml", "--trace", (dir / "t.json").string()}).code,
      2);
  EXPECT_EQ(cli({"run", kSource + "/tests/data/workload.toml", "--seeds", "2", "--trace",
                 (dir / "t.json").string()})
                .code,
            2);
  fs::remove_all(dir);
}

TEST(HtmlReport, RendersInHeadlessChromiumWithItsCharts) {
  const fs::path dir = temp_dir("html");
  ASSERT_EQ(cli({"run", kSource + "/scenarios/default.toml", "--report", "html", "--out",
                 dir.string(), "--quiet"})
                .code,
            0);
  const fs::path html = dir / "report.html";
  const std::string text = read(html);
  // Self-contained: inline SVG, no scripts, nothing fetched.
  EXPECT_EQ(text.find("<script"), std::string::npos);
  EXPECT_EQ(text.find("http://www.w3.org/2000/svg\" width"),
            text.find("http://www.w3.org/2000/svg\""));
  EXPECT_EQ(text.find("src="), std::string::npos);
  EXPECT_NE(text.find("<table id=\"summary\">"), std::string::npos);
  EXPECT_NE(text.find("switch0.port0.queue_bytes"), std::string::npos);
  EXPECT_NE(text.find("<table class=\"bottlenecks\">"), std::string::npos);
  const char* browser = nullptr;
  for (const char* b : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(b)) browser = b;
  if (browser == nullptr)
    GTEST_SKIP() << "chromium is not installed (make test installs it as root): the report was "
                    "checked as text only";
  const fs::path dom = dir / "dom.html";
  const std::string cmd = fmt::format(
      "timeout 120 {} --headless=new --no-sandbox --disable-gpu --dump-dom file://{} > {} 2> {}",
      browser, fs::absolute(html).string(), dom.string(), (dir / "chromium.log").string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read(dir / "chromium.log");
  const std::string rendered = read(dom);
  // The browser parsed the document and kept both charts with their lines.
  std::size_t charts = 0, lines = 0;
  for (std::size_t at = rendered.find("<svg class=\"chart\""); at != std::string::npos;
       at = rendered.find("<svg class=\"chart\"", at + 1))
    ++charts;
  for (std::size_t at = rendered.find("<polyline class=\"series\""); at != std::string::npos;
       at = rendered.find("<polyline class=\"series\"", at + 1))
    ++lines;
  EXPECT_EQ(charts, 2u) << rendered.substr(0, 500);
  EXPECT_EQ(lines, 2u);
  EXPECT_NE(rendered.find("<td>pfc_pause_frames</td>"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Sweep, MpirunSpreadsThePointsAndGathersTheSameSummary) {
  if (!mpi_enabled())
    GTEST_SKIP() << "built without OpenMPI (libopenmpi-dev; not in sanitizer builds)";
  if (!fs::exists("/usr/bin/mpirun")) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
  const fs::path many = temp_dir("mpi"), one = temp_dir("mpi_one"), log = temp_dir("mpi.log");
  const std::string bin = std::string(FABRICSIM_BINARY_DIR) + "/fabricsim";
  const std::string scenario = kSource + "/tests/data/sweep.toml";
  const std::string cmd = fmt::format(
      "timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 {} run {} --out {} -j 1 "
      "> {} 2>&1",
      bin, scenario, many.string(), log.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read(log);
  fs::remove(log);
  ASSERT_EQ(cli({"run", scenario, "--out", one.string(), "--quiet"}).code, 0);
  EXPECT_EQ(read(many / "summary.txt"), read(one / "summary.txt"));
  for (int i = 0; i < 4; ++i)  // both ranks wrote their points
    EXPECT_TRUE(fs::exists(many / fmt::format("point-{:03}", i) / "results.json")) << i;
  fs::remove_all(many);
  fs::remove_all(one);
}

namespace {

// 16 hosts, 4 per leaf, 4 spines, hash ECMP: a permutation that sends every host across leaves
// collides on uplinks differently per seed (routing hashes with it); with destination-mod-k
// routing the paths and so the results are the same for every seed.
const std::string kEcmpLuck = R"(name = "ecmp-luck"
[simulation]
stop_time = "100ms"
[fabric]
kind = "leaf-spine"
hosts = 16
hosts_per_leaf = 4
spines = 4
link_rate = "100Gbps"
[switch]
buffer = "4MiB"
pfc = true
)";
const std::string kEcmpTraffic = R"(
[traffic]
pattern = "permutation"
shift = 4
message_size = "1MiB"
)";

std::string write_scenario(const fs::path& dir, const std::string& name, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

// Column `column` of the CSV's first data row.
double csv_field(const std::string& csv, std::size_t column) {
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);  // header
  std::getline(lines, line);
  std::istringstream fields(line);
  std::string field;
  for (std::size_t i = 0; i <= column; ++i) std::getline(fields, field, ',');
  return std::stod(field);
}

}  // namespace

TEST(Seeds, RunAndCompareReportTheSpreadAndWarnWhenHashingDecides) {
  const fs::path dir = temp_dir("seeds");
  const std::string hashed = write_scenario(dir, "hash.toml", kEcmpLuck + kEcmpTraffic);
  const Outcome run = cli({"run", hashed, "--seeds", "5", "--out", (dir / "out").string()});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("over 5 seeds (1..5)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("warning: makespan_us varies by"), std::string::npos) << run.out;
  const std::string json = read(dir / "out" / "results.json");
  EXPECT_NE(json.find("\"seeds\""), std::string::npos) << json;
  // dmodk: one path per destination whatever the seed, so every seed gives the same run.
  std::string dmodk = kEcmpLuck + kEcmpTraffic;
  dmodk.insert(dmodk.find("link_rate"), "routing = \"dmodk\"\n");
  const std::string fixed = write_scenario(dir, "dmodk.toml", dmodk);
  const Outcome steady = cli({"run", fixed, "--seeds", "5", "--out", (dir / "o2").string()});
  ASSERT_EQ(steady.code, 0) << steady.err;
  EXPECT_NE(steady.out.find("over 5 seeds"), std::string::npos) << steady.out;
  EXPECT_EQ(steady.out.find("warning:"), std::string::npos) << steady.out;
  const Outcome cmp = cli({"compare", hashed, fixed, "--seeds", "3"});
  ASSERT_EQ(cmp.code, 0) << cmp.err;
  EXPECT_NE(cmp.out.find("(values over several seeds are means)"), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find("warning: ecmp-luck: makespan_us"), std::string::npos) << cmp.out;
  fs::remove_all(dir);
}

TEST(Compare, ScenariosRunInParallelGiveTheTableOfRunningThemOneByOne) {
  // Each scenario is its own simulation, so how many run at once cannot change a number; the
  // columns stay in the order given. Levels that differ get a fidelity row.
  const fs::path dir = temp_dir("compare_jobs");
  std::string dmodk = kEcmpLuck + kEcmpTraffic;
  dmodk.insert(dmodk.find("link_rate"), "routing = \"dmodk\"\n");
  const std::string a = write_scenario(dir, "a.toml", kEcmpLuck + kEcmpTraffic);
  const std::string b = write_scenario(dir, "b.toml", dmodk);
  std::string flow = dmodk;
  flow.insert(0, "fidelity = \"flow\"\n");
  const std::string c = write_scenario(dir, "c.toml", flow);
  const Outcome serial = cli({"compare", a, b, c, "-j", "1"});
  const Outcome parallel =
      cli({"compare", a, b, c, "-j", "3", "--csv", (dir / "compare.csv").string()});
  ASSERT_EQ(serial.code, 0) << serial.err;
  // The long form has each scenario's every metric, at its level, the value the table shows.
  const std::string csv = read(dir / "compare.csv");
  EXPECT_EQ(csv.rfind("scenario,fidelity,metric,value,expected\n", 0), 0u);
  std::size_t flow_rows = 0;
  for (auto at = csv.find(",flow,"); at != std::string::npos; at = csv.find(",flow,", at + 1))
    ++flow_rows;
  EXPECT_GT(flow_rows, 5u);
  EXPECT_NE(csv.find(",packet,messages_total,"), std::string::npos);
  ASSERT_EQ(parallel.code, 0) << parallel.err;
  EXPECT_EQ(serial.out, parallel.out);
  EXPECT_NE(serial.out.find("\nfidelity "), std::string::npos) << serial.out;
  EXPECT_NE(serial.out.find("pfc_paused_tiers"), std::string::npos) << serial.out;
  const Outcome same_level = cli({"compare", a, b, "-j", "2"});
  ASSERT_EQ(same_level.code, 0) << same_level.err;
  EXPECT_EQ(same_level.out.find("\nfidelity "), std::string::npos) << same_level.out;
  fs::remove_all(dir);
}

TEST(Seeds, NcclTestsAveragesTimeOverSeedsAsSeparateRunsWould) {
  const fs::path dir = temp_dir("nccl_seeds");
  const std::string scenario = write_scenario(dir, "hash.toml", kEcmpLuck);
  const std::vector<std::string> base{
      "nccl-tests", "alltoall_perf", "--scenario", scenario, "-b", "1M", "-e", "1M", "--csv", "-"};
  // The mean out-of-place time (CSV column 5) is the mean of the four single-seed runs.
  double sum = 0, lo = 1e300, hi = 0;
  for (int seed = 1; seed <= 4; ++seed) {
    auto args = base;
    args.insert(args.end(), {"--set", fmt::format("seed={}", seed)});
    const Outcome one = cli(args);
    ASSERT_EQ(one.code, 0) << one.err;
    const double t = csv_field(one.out, 5);
    sum += t;
    lo = std::min(lo, t);
    hi = std::max(hi, t);
  }
  EXPECT_GT(hi, lo) << "the seeds should route the all-to-all differently";
  auto args = base;
  args.insert(args.end(), {"--seeds", "4"});
  const Outcome four = cli(args);
  ASSERT_EQ(four.code, 0) << four.err;
  EXPECT_NEAR(csv_field(four.out, 5), sum / 4, 1e-9 * sum);
  auto text_args = std::vector<std::string>(base.begin(), base.end() - 2);
  text_args.insert(text_args.end(), {"--seeds", "4"});
  const Outcome text = cli(text_args);
  EXPECT_NE(text.out.find("# fabricsim: times are means over seeds 1 to 4"), std::string::npos)
      << text.out;
  fs::remove_all(dir);
}

TEST(Cli, MistypedOptionsGetTheNearestOptionOfTheirCommand) {
  const Outcome run = cli({"run", kSource + "/scenarios/default.toml", "--fidelty", "flow"});
  EXPECT_EQ(run.code, 2);
  EXPECT_EQ(run.err,
            "fabricsim: error: run: unknown option '--fidelty'; did you mean '--fidelity'?\n");
  const Outcome nccl = cli({"nccl-tests", "all_reduce_perf", "--scenario",
                            kSource + "/scenarios/nccl/dgx-h100.toml", "--maxbyte=1M"});
  EXPECT_EQ(nccl.code, 2);
  EXPECT_NE(nccl.err.find("unknown option '--maxbyte'; did you mean '--maxbytes'?"),
            std::string::npos)
      << nccl.err;
  // Nothing near: the command's help is named instead.
  const Outcome far = cli({"schema", "--frobnicate-everything"});
  EXPECT_EQ(far.code, 2);
  EXPECT_NE(far.err.find("(see `fabricsim schema --help`)"), std::string::npos) << far.err;
}

TEST(Cli, StopTimeFlagIsTheScenarioKey) {
  const fs::path dir = temp_dir("stop_time");
  const std::string s = kSource + "/scenarios/default.toml";
  ASSERT_EQ(cli({"run", s, "--stop-time", "300us", "--quiet", "--out", (dir / "a").string()}).code,
            0);
  ASSERT_EQ(cli({"run", s, "--set", "simulation.stop_time=300us", "--quiet", "--out",
                 (dir / "b").string()})
                .code,
            0);
  const std::string a = read(dir / "a" / "results.json");
  EXPECT_EQ(a, read(dir / "b" / "results.json"));
  EXPECT_NE(a.find("\"stop_time\""), std::string::npos);
  // The default scenario's incast takes 1.37 ms: stopped at 300 us it has not finished.
  const std::string full = read(dir / "a" / "results.json");
  ASSERT_EQ(cli({"run", s, "--quiet", "--out", (dir / "c").string()}).code, 0);
  EXPECT_NE(full, read(dir / "c" / "results.json"));
  EXPECT_EQ(cli({"run", s, "--stop-time", "soon"}).code, 2);
  fs::remove_all(dir);
}

TEST(Cli, ManPageAndCompletionCoverEveryCommandAndOption) {
  const Outcome man = cli({"man"});
  const Outcome bash = cli({"completion", "bash"});
  ASSERT_EQ(man.code, 0);
  ASSERT_EQ(bash.code, 0);
  EXPECT_EQ(man.out.rfind(".TH FABRICSIM 1", 0), 0u);
  const Outcome help = cli({"--help"});
  std::istringstream in(help.out.substr(help.out.find("Subcommands:")));
  std::string line;
  std::getline(in, line);
  int commands = 0;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) continue;
    ++commands;
    EXPECT_NE(man.out.find(".SS " + (name == "nccl-tests" ? std::string("nccl\\-tests") : name)),
              std::string::npos)
        << name;
    EXPECT_NE(bash.out.find("    " + name + ") opts=\""), std::string::npos) << name;
    // Every option the command's --help lists is in its completion line and in the man page.
    const Outcome sub = cli({name, "--help"});
    const auto opts_at = bash.out.find("    " + name + ") opts=\"");
    const std::string opts = bash.out.substr(opts_at, bash.out.find('\n', opts_at) - opts_at);
    std::istringstream help_lines(sub.out);
    std::string h;
    while (std::getline(help_lines, h)) {
      const auto at = h.find("--");
      if (!h.starts_with("  -") || at == std::string::npos) continue;
      const std::string opt = h.substr(at, h.find_first_of(" ,", at) - at);
      EXPECT_NE(opts.find(" " + opt), std::string::npos) << name << " " << opt;
      std::string roff_opt;
      for (char c : opt) roff_opt += c == '-' ? std::string("\\-") : std::string(1, c);
      EXPECT_NE(man.out.find(roff_opt), std::string::npos) << name << " " << opt;
    }
    const auto examples = sub.out.find("\nExamples:\n  ");
    ASSERT_NE(examples, std::string::npos) << name;
    EXPECT_NE(sub.out.find("fabricsim " + name + " ", examples), std::string::npos) << name;
  }
  EXPECT_GE(commands, 12);
}

TEST(Workload, TimeSeriesAreRecordedAndAPatternMatchingNoGaugeNamesTheNearest) {
  const fs::path dir = temp_dir("workload_series");
  const std::string s = kSource + "/tests/data/workload.toml";
  // At flow level each link has a utilization gauge; the NIC carries the data-parallel ring
  // at its line rate, so it reaches 1, and no link is ever above its capacity.
  const Outcome o =
      cli({"run", s, "--set",
           "simulation.timeseries=[\"server0.mlx5_0.nic.utilization\", "
           "\"server1.gpu3.nvlink_out.utilization\"]",
           "--set", "simulation.sample_interval=100us", "--out", dir.string(), "--quiet"});
  ASSERT_EQ(o.code, 0) << o.err;
  std::istringstream csv(read(dir / "timeseries.csv"));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "time_ps,server0.mlx5_0.nic.utilization,server1.gpu3.nvlink_out.utilization");
  double nic_max = 0, nvlink_max = 0;
  int rows = 0;
  while (std::getline(csv, line)) {
    const auto a = line.find(','), b = line.find(',', a + 1);
    const double nic = std::stod(line.substr(a + 1, b - a - 1)),
                 nvl = std::stod(line.substr(b + 1));
    EXPECT_GE(nic, 0);
    EXPECT_LE(nic, 1 + 1e-9);
    EXPECT_LE(nvl, 1 + 1e-9);
    nic_max = std::max(nic_max, nic);
    nvlink_max = std::max(nvlink_max, nvl);
    ++rows;
  }
  EXPECT_GT(rows, 100);
  EXPECT_NEAR(nic_max, 1.0, 1e-9);
  EXPECT_GT(nvlink_max, 0.0);  // the tensor-parallel AllReduces inside the server
  EXPECT_NE(read(dir / "results.json").find("\"server0.mlx5_0.nic.utilization\""),
            std::string::npos);
  // A typo: an input error (exit 2) naming the gauges nearest to it.
  const Outcome typo =
      cli({"run", s, "--set", "simulation.timeseries=[\"server0.mlx5_0.nic.utilisation\"]", "--set",
           "simulation.sample_interval=100us", "--out", dir.string(), "--quiet"});
  EXPECT_EQ(typo.code, 2);
  EXPECT_NE(typo.err.find("\"server0.mlx5_0.nic.utilisation\" matches no gauge of this flow-level "
                          "run; nearest: server0.mlx5_0.nic.utilization"),
            std::string::npos)
      << typo.err;
  // At packet level the same pattern style selects queues.
  const Outcome packet = cli({"run", kSource + "/scenarios/default.toml", "--set",
                              "simulation.timeseries=[\"switch0.port0.queue_byte\"]", "--quiet",
                              "--out", dir.string()});
  EXPECT_EQ(packet.code, 2);
  EXPECT_NE(packet.err.find("nearest: switch0.port0.queue_bytes"), std::string::npos) << packet.err;
  fs::remove_all(dir);
}

TEST(HtmlReport, NumbersAreWrittenForPeopleNotInScientificNotation) {
  Scenario s;
  s.name = "option";
  s.expected = {{"pause_frames", 79880}};
  RunResult r;
  r.metrics = {{"cost_total", 10465600, ""}, {"pause_frames", 79880, ""},
               {"busbw", 147.23491, "GB/s"}, {"share", 0.879312, ""},
               {"step_ms", 1234.56, "ms"},   {"efficiency", 0.58, ""}};
  const std::string html = html_report({s}, {r});
  EXPECT_NE(html.find("<td>10,465,600</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td>79,880 (79,880)</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>147.2</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>0.8793</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>1,235</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>0.58</td>"), std::string::npos);  // no trailing zeros
  EXPECT_EQ(html.find("e+0"), std::string::npos);
  // A second scenario's cells say how far they are from the first's.
  Scenario t = s;
  t.name = "other";
  RunResult q = r;
  q.metrics[0].value = 10140000;   // cost: -3.1 %
  q.metrics[2].value = 147.23491;  // busbw: the same, no delta
  const std::string two = html_report({s, t}, {r, q});
  EXPECT_NE(two.find("<td>10,140,000 <span class=\"delta\">-3.1 %</span></td>"), std::string::npos)
      << two;
  const auto first_delta = two.find("<span class=\"delta\">");
  EXPECT_EQ(two.find("<span class=\"delta\">", first_delta + 1), std::string::npos);
}

TEST(Trace, ACappedTraceSaysSoAndPfcPausesLieOnTheirLinksTrack) {
  TrainingTrace t;
  t.spans = {{"forward", 0, 0, Time::zero(), Time::from_ps(2'000'000)},
             {"primitive", 0, 4, Time::from_ps(1'000'000), Time::from_ps(500'000)}};
  t.primitive_limit = 1;
  t.primitives_dropped = 41;
  t.interval = Time::from_ps(1'000'000);
  t.times = {Time::zero(), Time::from_ps(1'000'000), Time::from_ps(2'000'000)};
  t.links = {{"leaf uplink", "leaf0.port4", {0, 0.5, 0.5}, {0, 4096, 0}}};
  t.pauses = {
      {"leaf uplink", "leaf0.port4", 3, Time::from_ps(1'200'000), Time::from_ps(1'700'000)}};
  const std::string json = chrome_trace(t);
  const auto has = [&json](const std::string& s) { return json.find(s) != std::string::npos; };
  EXPECT_EQ(trace_cap_notice(t),
            "the trace shows the first 1 collective primitives; 41 more are left out (the step "
            "timeline and the network tracks are complete)");
  EXPECT_TRUE(has("\"name\" : \"" + trace_cap_notice(t) + "\",\n\"ph\" : \"i\""));
  EXPECT_TRUE(has("\"primitives_left_out\" : 41"));
  // The layer is process 1 (after server 0), the link its thread 1; the pause lies on it.
  EXPECT_TRUE(
      has("\"name\" : \"network: leaf uplink\"\n},\n\"name\" : \"process_name\",\n\"ph\" : "
          "\"M\",\n\"pid\" : 1"));
  EXPECT_TRUE(
      has("\"cat\" : \"PFC\",\n\"dur\" : 0.5,\n\"name\" : \"PFC pause (priority 3)\",\n\"ph\" "
          ": \"X\",\n\"pid\" : 1,\n\"tid\" : 1,\n\"ts\" : 1.2"));
  // A counter is written where it changes: utilization 0, 0.5 (not twice); queue 0, 4096, 0.
  std::size_t half = 0;
  for (std::size_t at = json.find("\"utilization\" : 0.5"); at != std::string::npos;
       at = json.find("\"utilization\" : 0.5", at + 1))
    ++half;
  EXPECT_EQ(half, 1u);
  EXPECT_TRUE(has("\"bytes\" : 4096.0"));
  TrainingTrace whole = t;
  whole.primitives_dropped = 0;
  EXPECT_EQ(trace_cap_notice(whole), "");
  EXPECT_EQ(chrome_trace(whole).find("left out ("), std::string::npos);
}
