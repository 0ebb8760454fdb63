#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.hpp"
#include "fabricsim/version.hpp"

using namespace fabricsim;
namespace fs = std::filesystem;

namespace {

const std::string kSource = FABRICSIM_SOURCE_DIR;

struct Outcome {
  int code;
  std::string out, err;
};

Outcome cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = cli_main(args, out, err);
  return {code, out.str(), err.str()};
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path temp_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("fabricsim_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

}  // namespace

TEST(Cli, VersionAndHelpExitZero) {
  const Outcome v = cli({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out, std::string("fabricsim ") + kVersion + "\n");
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
  EXPECT_NE(read(dir.string() + ".dot").find("server0.gpu0"), std::string::npos);
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
