#include <gtest/gtest.h>

#include <sys/wait.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "cli/calibration.hpp"
#include "cli/commands.hpp"
#include "topologies/server.hpp"
#include "validation/fit.hpp"
#include "validation/parsers.hpp"

using namespace fabricsim;
using namespace fabricsim::validation;

namespace {

const std::filesystem::path kData =
    std::filesystem::path(FABRICSIM_SOURCE_DIR) / "tests/data/validation";

std::string fixture(const std::string& name) {
  std::ifstream in(kData / name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The error of `f` on `text`: its line number and message.
template <class F>
std::pair<std::size_t, std::string> parse_error(F f, const std::string& text) {
  try {
    f(text, std::string("in.txt"));
  } catch (const ParseError& e) {
    return {e.line(), e.what()};
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return {0, ""};
}

}  // namespace

TEST(Parsers, NcclTestsNewFormatWithRootNaAndAverage) {
  const auto o = parse_nccl_tests(fixture("nccl_tests_2.19_all_reduce.txt"), "f");
  EXPECT_EQ(o.binary, "all_reduce_perf");
  EXPECT_EQ(o.ranks, 8);
  EXPECT_EQ(o.devices.front(), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmup_iters, 1);
  ASSERT_EQ(o.rows.size(), 5u);
  EXPECT_EQ(o.rows[1].bytes, 2097152u);
  EXPECT_EQ(o.rows[1].root, -1);
  EXPECT_DOUBLE_EQ(o.rows[1].time_us[0], 113.2);
  EXPECT_DOUBLE_EQ(o.rows[1].busbw[1], 22.46);
  EXPECT_EQ(o.rows[1].wrong[0], 0u);
  EXPECT_FALSE(o.rows[3].wrong[0].has_value());  // N/A
  EXPECT_EQ(o.rows[4].bytes, 8589934592u);
  EXPECT_DOUBLE_EQ(*o.avg_busbw, 114.919);
}

TEST(Parsers, NcclTestsOldFormatMultiProcessWithInterleavedNcclLines) {
  const auto o = parse_nccl_tests(fixture("nccl_tests_2.13_all_gather_multiproc.txt"), "f");
  EXPECT_EQ(o.binary, "");  // old versions print no "Collective test starting"
  EXPECT_EQ(o.ranks, 4);
  EXPECT_EQ(o.warmup_iters, 5);
  ASSERT_EQ(o.rows.size(), 3u);
  EXPECT_EQ(o.rows[2].redop, "none");
  EXPECT_DOUBLE_EQ(o.rows[2].time_us[1], 5853.2);
  EXPECT_EQ(o.rows[0].wrong[0], 0u);  // "0e+00" in the old error column
}

TEST(Parsers, NcclTestsTruncatedOrMalformedNamesTheLine) {
  const auto [line, what] = parse_error(parse_nccl_tests, fixture("nccl_tests_truncated.txt"));
  EXPECT_EQ(line, 21u);
  EXPECT_NE(what.find("in.txt:21: expected 13 columns"), std::string::npos) << what;
  std::string bad = fixture("nccl_tests_2.19_all_reduce.txt");
  bad.replace(bad.find("113.2"), 5, "11x.2");
  const auto [l2, w2] = parse_error(parse_nccl_tests, bad);
  EXPECT_EQ(l2, 19u);
  EXPECT_NE(w2.find("time '11x.2' is not a number"), std::string::npos) << w2;
  // Only the preamble: no rows.
  const std::string head = fixture("nccl_tests_2.19_all_reduce.txt").substr(0, 1300);
  EXPECT_NE(parse_error(parse_nccl_tests, head).second.find("no result rows"), std::string::npos);
  EXPECT_NE(parse_error(parse_nccl_tests, "hello\n").second.find("no column header"),
            std::string::npos);
}

TEST(Parsers, PerftestBandwidthInMiBAndGbitsAndLatency) {
  const auto bw = parse_perftest(fixture("ib_write_bw.txt"), "f");
  EXPECT_FALSE(bw.latency);
  EXPECT_EQ(bw.link_type, "Ethernet");
  EXPECT_EQ(bw.mtu, 4096u);
  ASSERT_EQ(bw.rows.size(), 2u);
  EXPECT_NEAR(bw.rows[1].bw_avg_gbps, 11069.88 * 1048576 * 8 / 1e9, 1e-9);  // 92.86 Gb/s
  const auto gb = parse_perftest(fixture("ib_write_bw_gbits.txt"), "f");
  EXPECT_DOUBLE_EQ(gb.rows[0].bw_avg_gbps, 391.87);
  const auto lat = parse_perftest(fixture("ib_write_lat.txt"), "f");
  EXPECT_TRUE(lat.latency);
  ASSERT_EQ(lat.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(lat.rows[0].t_typical, 1.04);
  EXPECT_DOUBLE_EQ(lat.rows[0].p999, 4.22);
  std::string cut = fixture("ib_write_bw.txt");
  cut = cut.substr(0, cut.find("11069.88"));
  const auto [line, what] = parse_error(parse_perftest, cut);
  EXPECT_EQ(line, 23u);
  EXPECT_NE(what.find("expected 5 columns"), std::string::npos) << what;
}

TEST(Parsers, NvidiaSmiTopoFixtureReadsWithTheServerImporter) {
  // The server importer's parser (topologies/server.hpp) reads the collected matrix.
  const std::string text = fixture("nvidia_smi_topo.txt");
  EXPECT_TRUE(looks_like_nvidia_smi_topo(text));
  const TopoMatrix t = parse_topo_matrix(text);
  ASSERT_EQ(t.devices.size(), 6u);
  EXPECT_EQ(t.relation[0][1], "NV12");
  EXPECT_EQ(t.relation[0][3], "PXB");
  EXPECT_EQ(t.cpu_affinity[2], "16-31,144-159");
  EXPECT_EQ(t.nic_names[1], "mlx5_1");
  std::string bad = text;
  bad.replace(bad.find("NV12\tNV12\t X"), 4, "QQ12");
  try {
    parse_topo_matrix(bad);
    ADD_FAILURE() << "accepted QQ12";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("line 4: unknown relation \"QQ12\""), std::string::npos)
        << e.what();
  }
}

TEST(Parsers, EthtoolCountersAndNcclDebugLog) {
  const auto e = parse_ethtool_stats(fixture("ethtool_mlx5_0.txt"), "f");
  EXPECT_EQ(e.pause_frames(), 1523u + 20117u);
  EXPECT_EQ(e.ecn_marked(), 88123u);
  EXPECT_EQ(e.cnp(), 4410u + 3920u);
  const auto [line, what] = parse_error(
      parse_ethtool_stats, "NIC statistics:\n     rx_packets: 12\n     tx_packets: lots\n");
  EXPECT_EQ(line, 3u);
  EXPECT_NE(what.find("tx_packets"), std::string::npos);

  const auto l = parse_nccl_debug_log(fixture("nccl_debug.log"), "f");
  EXPECT_EQ(l.version, "2.19.3");
  ASSERT_EQ(l.rings.size(), 2u);
  EXPECT_EQ(l.rings.at(1), (std::vector<int>{0, 3, 2, 1, 5, 6, 7, 4}));
  EXPECT_EQ(l.trees.size(), 1u);
  EXPECT_EQ(l.coll_channels, 16);
  EXPECT_EQ(l.p2p_channels, 16);
  EXPECT_EQ(l.transports.at("0[0] -> 1[1]"), "P2P/CUMEM/read");
  ASSERT_EQ(l.choices.size(), 1u);
  EXPECT_EQ(l.choices[0].algo, 1);
  EXPECT_EQ(l.choices[0].proto, 2);
  EXPECT_EQ(l.choices[0].bytes, 1048576u);
  EXPECT_EQ(parse_error(parse_nccl_debug_log, "x NCCL INFO Channel 00/16 :  0 1 q\n").first, 1u);
  EXPECT_NE(parse_error(parse_nccl_debug_log, "plain text\n").second.find("NCCL_DEBUG=INFO"),
            std::string::npos);
}

TEST(Fit, RecoversLatencyAndBandwidthDespiteNoiseAndAnOutlier) {
  // t(S) = alpha + S / beta with alpha = 12 us, beta = 40 GB/s (40e3 B/us), +-1 % noise from
  // a fixed sequence, and one measurement disturbed 3x (another job on the link).
  std::vector<double> sizes, measured;
  for (int k = 0; k < 24; ++k) {
    const double s = std::pow(2.0, k + 6);
    const double noise = 1 + 0.01 * std::sin(k * 2.3);
    sizes.push_back(s);
    measured.push_back((12 + s / 40e3) * noise * (k == 17 ? 3 : 1));
  }
  const Model model = [&](const std::vector<double>& p) {
    std::vector<double> out;
    for (double s : sizes) out.push_back(p[0] + s / p[1] + 0 * p[2]);  // p[2]: no effect
    return out;
  };
  const FitResult r = fit(
      {{"alpha", 5, 0.1, 1e3}, {"beta", 10e3, 1e2, 1e6}, {"unused", 1, 0.1, 10}}, measured, model);
  EXPECT_TRUE(r.converged);
  EXPECT_NEAR(r.values[0] / 12, 1, 0.02);
  EXPECT_NEAR(r.values[1] / 40e3, 1, 0.02);
  EXPECT_FALSE(r.identifiable[2]);
  EXPECT_EQ(r.values[2], 1);
  EXPECT_LT(r.weights[17], 0.1);  // the outlier counts little
  EXPECT_GT(r.rel_std_error[0], 0);
}

TEST(Calibration, ClosedLoopRecoversHiddenParametersAndValidatesHeldOutSizes) {
  // Measurements generated by fabricsim itself with hidden parameters (NVLink and network
  // efficiency, LL launch latency) plus +-0.5 % noise, then calibrated from the defaults.
  const Scenario base =
      load_scenario(std::filesystem::path(FABRICSIM_SOURCE_DIR) / "tests/data/calibration.toml");
  Scenario hidden = base;
  const auto params = calibration_parameters();
  const double truth[] = {0.9, 0.8, 9.0};
  for (int i = 0; i < 3; ++i) params[static_cast<std::size_t>(i)].set(hidden, truth[i]);
  std::vector<Measurement> ms;
  for (int ranks : {8, 16})
    for (std::uint64_t b = 8; b <= (256u << 20); b *= 4)
      ms.push_back({"gen", "all_reduce_perf", CollOp::kAllReduce, ranks, b, 0});
  const auto times = simulate_measurements(hidden, ms);
  for (std::size_t i = 0; i < ms.size(); ++i)
    ms[i].time_us = times[i] * (1 + 0.005 * std::sin(static_cast<double>(i) * 1.7));
  // Every fourth size of each sweep held out.
  std::vector<Measurement> fit_rows, held;
  for (std::size_t i = 0; i < ms.size(); ++i) (i % 4 == 1 ? held : fit_rows).push_back(ms[i]);
  const Calibration c = calibrate(base, fit_rows);
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(c.fit.values[static_cast<std::size_t>(i)] / truth[i], 1, 0.02)
        << c.params[static_cast<std::size_t>(i)].key;
  Scenario fitted = base;
  for (std::size_t i = 0; i < c.params.size(); ++i) c.params[i].set(fitted, c.fit.values[i]);
  const auto sim = simulate_measurements(fitted, held);
  double mape = 0;
  for (std::size_t i = 0; i < held.size(); ++i) mape += std::abs(sim[i] / held[i].time_us - 1);
  mape /= static_cast<double>(held.size());
  EXPECT_LT(mape, 0.03);
}

TEST(Calibration, CommandsWriteALoadableOverlayValidateAndDiagnose) {
  const auto dir = std::filesystem::temp_directory_path() / "fabricsim-calibration-cli";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "m");
  const std::string scenario = std::string(FABRICSIM_SOURCE_DIR) + "/tests/data/calibration.toml";
  const auto run = [](std::vector<std::string> args, std::string* text = nullptr) {
    std::ostringstream out, err;
    const int rc = cli_main(args, out, err);
    if (text) *text = out.str() + err.str();
    return rc;
  };
  // "Measurements": the simulator's own nccl-tests output, as a cluster's would be collected.
  for (const auto& [name, extra] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"ar16.txt", {}}, {"ar8.txt", {"-g", "8", "--np", "1"}}}) {
    std::vector<std::string> a{"nccl-tests", "all_reduce_perf",
                               "-b",         "1K",
                               "-e",         "64M",
                               "-f",         "8",
                               "--scenario", scenario,
                               "--set",      "flow.efficiency_network=0.7"};
    a.insert(a.end(), extra.begin(), extra.end());
    std::string text;
    ASSERT_EQ(run(a, &text), 0) << text;
    std::ofstream(dir / "m" / name) << text.substr(0, text.find("# fabricsim:"));
  }
  std::filesystem::copy_file(kData / "ethtool_mlx5_0.txt", dir / "m" / "ethtool_mlx5_0.txt");
  std::string text;
  const std::string overlay = (dir / "calibrated.toml").string();
  ASSERT_EQ(run({"calibrate", "--measurements", (dir / "m").string(), "--scenario", scenario,
                 "--out", overlay},
                &text),
            0)
      << text;
  EXPECT_NE(text.find("flow.efficiency_network"), std::string::npos);
  const Scenario s = load_scenario(overlay);
  EXPECT_NEAR(s.flow_efficiency.network, 0.7, 0.7 * 0.02);
  // The calibrated scenario reproduces the measurements; the uncalibrated one does not.
  const std::string html = (dir / "validate.html").string();
  EXPECT_EQ(run({"validate", "--measurements", (dir / "m").string(), "--scenario", overlay,
                 "--max-error", "2", "--report", html},
                &text),
            0)
      << text;
  std::ifstream report_file(html);
  std::ostringstream report;
  report << report_file.rdbuf();
  // Two series (8 and 16 ranks), measured and simulated curves each, and the rows.
  std::size_t curves = 0;
  for (auto at = report.str().find("<polyline"); at != std::string::npos;
       at = report.str().find("<polyline", at + 1))
    ++curves;
  EXPECT_EQ(curves, 4u);
  EXPECT_NE(report.str().find("all_reduce_perf, 16 ranks"), std::string::npos);
  EXPECT_NE(report.str().find("<table id=\"rows\">"), std::string::npos);
  EXPECT_EQ(run({"validate", "--measurements", (dir / "m").string(), "--scenario", scenario,
                 "--max-error", "2"},
                &text),
            1)
      << text;
  EXPECT_NE(text.find("validation failed"), std::string::npos);
  // Diagnose: the PFC pauses of the ethtool counters name the network.
  ASSERT_EQ(
      run({"diagnose", "--measurements", (dir / "m").string(), "--scenario", scenario}, &text), 0);
  EXPECT_NE(text.find("[suspect] network (PFC): 21640 PFC pause frames"), std::string::npos)
      << text;
  EXPECT_NE(text.find("% of the NVLink peak 300 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("bottleneck: "), std::string::npos) << text;
  // A malformed file is an input error naming file and line.
  std::ofstream(dir / "m" / "broken.txt") << "# Collective test starting: all_reduce_perf\n"
                                             "#  size count type redop root time algbw busbw\n"
                                             "  1024 256 float sum\n";
  EXPECT_EQ(
      run({"validate", "--measurements", (dir / "m").string(), "--scenario", scenario}, &text), 2);
  EXPECT_NE(text.find("broken.txt:3:"), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

namespace {
// Runs a shell command; returns its exit status and output.
[[maybe_unused]] std::pair<int, std::string> shell(const std::string& cmd) {
  const auto out = std::filesystem::temp_directory_path() / "fabricsim-bench-out.txt";
  const int status = std::system((cmd + " > " + out.string() + " 2>&1").c_str());
  std::ifstream in(out);
  std::ostringstream s;
  s << in.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, s.str()};
}
}  // namespace

#ifdef FABRICSIM_BENCH_BINARY

TEST(Harness, RejectsBadArgumentsWithoutAGpu) {
  const std::string bin = FABRICSIM_BENCH_BINARY;
  auto [rc, text] = shell(bin + " --bogus");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(text.find("unknown option '--bogus'"), std::string::npos) << text;
  std::tie(rc, text) = shell(bin + " -f 1");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(text.find("need -f >= 2"), std::string::npos) << text;
  std::tie(rc, text) = shell(bin + " -b 1x");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(text.find("bad size '1x'"), std::string::npos) << text;
}

TEST(Harness, OneGpuRunProducesMeasurementsThatCalibrateAccepts) {
  const std::string bin = FABRICSIM_BENCH_BINARY;
  const auto [probe_rc, probe] = shell(bin + " --probe");
  if (probe_rc == 2) GTEST_SKIP() << "no GPU on this machine: " << probe;
  ASSERT_EQ(probe_rc, 0) << probe;
  const auto dir = std::filesystem::temp_directory_path() / "fabricsim-bench-run";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto [rc, text] = shell(bin + " -g 1 --op all -b 8 -e 1M -f 32 --micro --out-dir " +
                                dir.string() + " --json " + (dir / "bench.json").string());
  ASSERT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("# micro: h2d"), std::string::npos) << text;
  const MeasurementSet set = load_measurements(dir);
  EXPECT_EQ(set.collectives.size(), 7u * 4);  // 7 operations x 4 sizes
  const Scenario s =
      load_scenario(std::filesystem::path(FABRICSIM_SOURCE_DIR) / "tests/data/calibration.toml");
  const Calibration c = calibrate(s, set.collectives);
  EXPECT_EQ(c.fit.values.size(), c.params.size());
  std::filesystem::remove_all(dir);
}
#else
TEST(Harness, OneGpuRunProducesMeasurementsThatCalibrateAccepts) {
  GTEST_SKIP() << "the harness is not built here: no CUDA Toolkit with nvcc and NCCL was found";
}
#endif

#ifdef FABRICSIM_VERBS_BINARY
TEST(Harness, VerbsBenchRejectsBadArgumentsAndNamesAMissingDevice) {
  const std::string bin = FABRICSIM_VERBS_BINARY;
  auto [rc, text] = shell(bin + " --client");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(text.find("needs a value"), std::string::npos) << text;
  std::tie(rc, text) = shell(bin + " --server --client h");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(text.find("exactly one of --server and --client"), std::string::npos) << text;
  std::tie(rc, text) = shell(bin + " --server -s 0");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(text.find("'0' is not a valid number"), std::string::npos) << text;
  // Against a device that does not exist (or, on a machine without RDMA, any device).
  std::tie(rc, text) = shell(bin + " --client 127.0.0.1 --dev no_such_device0");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(text.find("no RDMA device"), std::string::npos) << text;
}
#endif
