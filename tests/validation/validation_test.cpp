#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "cli/commands.hpp"
#include "experiments/calibration.hpp"
#include "report/calibration_report.hpp"
#include "tests/support/temp_dir.hpp"
#include "topo/server.hpp"
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

// `fabricsim calibrate` on the folder `dir` against `scenario`: its overlay (dir/calibrated.toml),
// loaded; `log` gets what the command printed.
Scenario calibrate_folder(const std::filesystem::path& dir, const std::string& scenario,
                          std::string& log) {
  const std::string overlay = (dir / "calibrated.toml").string();
  std::ostringstream out, err;
  const int rc = cli_main(
      {"calibrate", "--measurements", dir.string(), "--scenario", scenario, "--out", overlay}, out,
      err);
  log = out.str() + err.str();
  EXPECT_EQ(rc, 0) << log;
  return load_scenario(overlay);
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
  EXPECT_EQ(lat.test, "RDMA_Write Latency Test");
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
  // The server importer's parser (topo/server.hpp) reads the collected matrix.
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

TEST(Parsers, HarnessJsonRoundTripsAndNamesTheLineOfBadInput) {
  bench::Report r;
  r.device = "NVIDIA H200 \"SXM\"";
  r.gpus = 4;
  r.processes = 2;
  r.nccl_version = 22703;
  r.micro = bench::Micro{52.1, 53.4, 1900.5, 2.1, 2.3, 2.6};
  r.collectives = {{"all_reduce", 1024, 12.5, 0.08, 0.14, 0},
                   {"alltoall", 1 << 20, 40.25, 26, 23, 3}};
  const std::string json = bench::to_json(r);
  EXPECT_EQ(harness_json_tool(json), "fabricsim-bench");
  const bench::Report b = parse_bench_json(json, "bench.json");
  EXPECT_EQ(b.device, r.device);
  EXPECT_EQ(b.ranks(), 8);
  EXPECT_EQ(b.nccl_version, 22703);
  ASSERT_TRUE(b.micro.has_value());
  EXPECT_DOUBLE_EQ(b.micro->d2d_gbs, 1900.5);
  EXPECT_DOUBLE_EQ(b.micro->kernel_launch_us, 2.6);
  ASSERT_EQ(b.collectives.size(), 2u);
  EXPECT_EQ(b.collectives[1].op, "alltoall");
  EXPECT_EQ(b.collectives[1].bytes, 1u << 20);
  EXPECT_DOUBLE_EQ(b.collectives[1].time_us, 40.25);
  EXPECT_EQ(b.collectives[1].wrong, 3u);
  // The fixture, in the harness's layout.
  const bench::Report f = parse_bench_json(fixture("fabricsim_bench.json"), "fabricsim_bench.json");
  EXPECT_EQ(f.ranks(), 8);
  ASSERT_EQ(f.collectives.size(), 6u);
  EXPECT_EQ(f.collectives[5].op, "all_gather");
  EXPECT_DOUBLE_EQ(f.micro->h2d_gbs, 24.612);
  EXPECT_DOUBLE_EQ(parse_verbs_bench_json(fixture("fabricsim_verbs_write_bw.json"), "v.json")
                       .rows.at(0)
                       .bw_avg_gbps,
                   96.8412);
  // A missing key names the row's line; a syntax error its own; a truncated file the end.
  std::string missing = json;
  missing.replace(missing.rfind("\"time_us\""), 9, "\"tme_us\"");
  auto [line, what] = parse_error(parse_bench_json, missing);
  EXPECT_EQ(line, 11u) << json;
  EXPECT_NE(what.find("collectives[1]: key 'time_us': missing"), std::string::npos) << what;
  std::string syntax = json;
  syntax.replace(syntax.find("\"gpus\": 4"), 10, "\"gpus\": 4x");
  std::tie(line, what) = parse_error(parse_bench_json, syntax);
  EXPECT_EQ(line, 4u) << what;
  std::tie(line, what) = parse_error(parse_bench_json, json.substr(0, json.size() / 2));
  EXPECT_GT(line, 5u) << what;
  std::tie(line, what) = parse_error(parse_bench_json, std::string(40, '[') + "{\"tool\": 1}");
  EXPECT_NE(what.find("nested deeper"), std::string::npos) << what;
  std::tie(line, what) = parse_error(
      parse_bench_json, "{\"tool\": \"fabricsim-bench\", \"device\": \"x\", \"gpus\": -1}");
  EXPECT_NE(what.find("key 'gpus': '-1' is not an integer"), std::string::npos) << what;
  // The verbs harness's JSON reads as perftest output.
  const auto bw = parse_verbs_bench_json(
      "{\"tool\": \"fabricsim-verbs-bench\", \"test\": \"write_bw\", \"bytes\": 65536, "
      "\"iters\": 5000, \"bw_avg_gbps\": 96.5, \"msg_rate_mpps\": 0.184}\n",
      "v.json");
  EXPECT_FALSE(bw.latency);
  ASSERT_EQ(bw.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(bw.rows[0].bw_avg_gbps, 96.5);
  const std::string lat =
      "{\"tool\": \"fabricsim-verbs-bench\", \"test\": \"write_lat\", \"bytes\": 2, \"iters\": "
      "1000, \"t_min_us\": 1.01, \"t_typical_us\": 1.05, \"t_avg_us\": 1.07, \"t_max_us\": 3.2}";
  EXPECT_EQ(harness_json_tool(lat), "fabricsim-verbs-bench");
  EXPECT_DOUBLE_EQ(parse_verbs_bench_json(lat, "l.json").rows[0].t_typical, 1.05);
  std::string other = lat;
  other.replace(other.find("write_lat"), 9, "read_bw");
  std::tie(line, what) = parse_error(parse_verbs_bench_json, other);
  EXPECT_NE(what.find("\"test\" is 'read_bw', expected"), std::string::npos) << what;
}

TEST(Parsers, SimulationResultsJsonForDiagnosingTheModel) {
  std::ifstream in(std::filesystem::path(FABRICSIM_SOURCE_DIR) / "tests/data/golden_results.json");
  std::ostringstream text;
  text << in.rdbuf();
  ASSERT_TRUE(looks_like_results_json(text.str()));
  EXPECT_FALSE(looks_like_results_json(fixture("fabricsim_bench.json")));
  const SimulationResults r = parse_results_json(text.str(), "results.json");
  EXPECT_EQ(r.status, "completed");
  EXPECT_EQ(r.sim_time_ps, 362405511u);
  ASSERT_EQ(r.bottlenecks.size(), 4u);
  EXPECT_EQ(r.bottlenecks[2].port, "host1.nic");
  EXPECT_DOUBLE_EQ(r.bottlenecks[2].paused_us, 49.541);
  EXPECT_EQ(r.counters.at("switch0.port1.tx_prio3_pause"), 22u);
  EXPECT_DOUBLE_EQ(r.metrics.at("pfc_pause_frames"), 90);
  std::string bad = text.str();
  const std::string counter = "\"host0.cnp_sent\" : 21";
  bad.replace(bad.find(counter), counter.size(), "\"host0.cnp_sent\" : 2.5");
  const auto [line, what] = parse_error(parse_results_json, bad);
  EXPECT_NE(what.find("counter 'host0.cnp_sent': '2.5' is not an integer"), std::string::npos)
      << what;
  EXPECT_EQ(line, static_cast<std::size_t>(
                      std::count(bad.begin(), bad.begin() + bad.find("host0.cnp_sent"), '\n') + 1));
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

TEST(Fit, PriorsShareWhatTheDataCannotTellApartAndYieldWhereTheyCan) {
  // y = a b x: the data fix a b = 12 and nothing else. a's prior is tight (2, sigma 0.05),
  // b's wide (3, sigma 1): b takes the change. The product is as the data say, not as the
  // priors (2 x 3 = 6) would have it.
  std::vector<double> xs, measured;
  for (int k = 1; k <= 8; ++k) {
    xs.push_back(k);
    measured.push_back(12.0 * k);
  }
  const Model model = [&](const std::vector<double>& p) {
    std::vector<double> out;
    for (double x : xs) out.push_back(p[0] * p[1] * x);
    return out;
  };
  const FitResult r =
      fit({{"a", 2, 0.1, 100, 2, 0.05}, {"b", 3, 0.1, 100, 3, 1.0}}, measured, model);
  EXPECT_TRUE(r.converged);
  EXPECT_NEAR(r.values[0] * r.values[1] / 12, 1, 1e-3);
  EXPECT_NEAR(r.values[0] / 2, 1, 0.01);
  EXPECT_NEAR(r.values[1] / 6, 1, 0.01);
  // The posterior's uncertainty: exact data tie ln a + ln b, so b is known as well as a is,
  // through its tight prior (1 / (1/0.05^2 + 1/1^2) ~ 0.05^2 each).
  EXPECT_NEAR(r.rel_std_error[0], 0.05, 0.002);
  EXPECT_NEAR(r.rel_std_error[1], 0.05, 0.002);
  // A prior's median must be a positive number.
  EXPECT_THROW(fit({{"a", 2, 0.1, 100, 0, 0.05}}, measured, model), std::invalid_argument);
}

TEST(Calibration, VerdictRefusesAValueOutsideItsPhysicalRange) {
  // A network at 60 % of its payload rate (a broken fabric, or a model without the mechanism
  // that slows it): the fit follows the data and says the value is not physical.
  const Scenario base =
      load_scenario(std::filesystem::path(FABRICSIM_SOURCE_DIR) / "tests/data/calibration.toml");
  Scenario hidden = base;
  hidden.flow_efficiency.network = 0.6;
  std::vector<Measurement> ms;
  for (std::uint64_t b = 4u << 20; b <= (16u << 20); b *= 4)
    ms.push_back({"gen", "all_reduce_perf", CollOp::kAllReduce, 16, b, 0});
  const auto t = simulate_measurements(hidden, ms);
  for (std::size_t i = 0; i < ms.size(); ++i) ms[i].time_us = t[i];
  const Calibration c = calibrate(base, ms, {"flow.efficiency_network"});
  EXPECT_LT(c.fit.values[0], 0.7);
  ASSERT_FALSE(c.good());
  EXPECT_NE(c.problems().front().find("flow.efficiency_network = 0.6"), std::string::npos)
      << c.problems().front();
  EXPECT_NE(c.problems().front().find("outside its physical range 0.85 to 1"), std::string::npos);
  const std::string table = calibration_table(base, c, ms.size());
  EXPECT_NE(table.find("verdict: NOT GOOD"), std::string::npos) << table;
  EXPECT_NE(table.find("OUTSIDE its physical range"), std::string::npos) << table;
  // Inside its range, the same fit is good.
  hidden.flow_efficiency.network = 0.9;
  const auto t2 = simulate_measurements(hidden, ms);
  for (std::size_t i = 0; i < ms.size(); ++i) ms[i].time_us = t2[i];
  const Calibration ok = calibrate(base, ms, {"flow.efficiency_network"});
  EXPECT_TRUE(ok.good()) << calibration_table(base, ok, ms.size());
  EXPECT_NEAR(ok.fit.values[0], 0.9, 0.9 * 0.01);
}

TEST(Calibration, ClosedLoopRecoversHiddenParametersAndValidatesHeldOutSizes) {
  // Measurements generated by fabricsim itself with hidden parameters (NVLink and network
  // efficiency, LL launch latency) plus +-0.5 % noise, then those three calibrated from the
  // defaults. (The default set also fits the step latencies, which two rank counts do not tell
  // apart from the launch latency: there the priors share the change, and only the held-out
  // error is a fair test; FitOnSmallSizesDoesNotMakeLargeSizesWorse.)
  const Scenario base =
      load_scenario(std::filesystem::path(FABRICSIM_SOURCE_DIR) / "tests/data/calibration.toml");
  Scenario hidden = base;
  const auto params = calibration_parameters();
  const double truth[] = {0.9, 0.88, 9.0};
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
  const Calibration c =
      calibrate(base, fit_rows,
                {"flow.efficiency_nvlink", "flow.efficiency_network", "nccl.launch_latency.ll"});
  EXPECT_TRUE(c.good());
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

TEST(Calibration, FitOnSmallSizesDoesNotMakeLargeSizesWorse) {
  // A hidden truth that differs from the defaults in every class of physical parameter, each
  // inside its physical range: launch latencies, step latencies (which the default set does
  // not fit: the model the fit works with lacks that freedom, as it lacks some shape of any
  // real cluster), NVLink and network efficiency. Calibrated on the sizes up to 64 MiB, the
  // larger sizes must come out no worse than the uncalibrated model predicts them, and every
  // fitted value must stay physical: without priors, the launch latencies absorb the step
  // latencies' share of mid sizes and the efficiencies bend to match them.
  const Scenario base =
      load_scenario(std::filesystem::path(FABRICSIM_SOURCE_DIR) / "tests/data/calibration.toml");
  Scenario hidden = base;
  hidden.nccl.launch_latency_us = {10.5, 18.0, 12.0};
  hidden.nccl.step_latency_us[1][0] *= 1.5;  // LL128 over NVLink
  hidden.nccl.step_latency_us[2][0] *= 1.8;  // Simple over NVLink
  hidden.nccl.step_latency_us[2][2] *= 1.5;  // Simple over the network
  hidden.flow_efficiency.nvlink = 0.92;
  hidden.flow_efficiency.network = 0.9;
  std::vector<Measurement> small, large;
  for (int ranks : {8, 16}) {
    for (std::uint64_t b = 1024; b <= (64u << 20); b *= 8)
      small.push_back({"gen", "all_reduce_perf", CollOp::kAllReduce, ranks, b, 0});
    for (std::uint64_t b : {256u << 20, 1u << 30})
      large.push_back({"gen", "all_reduce_perf", CollOp::kAllReduce, ranks, b, 0});
  }
  const auto truth = [&](std::vector<Measurement>& ms) {
    const auto t = simulate_measurements(hidden, ms);
    for (std::size_t i = 0; i < ms.size(); ++i)
      ms[i].time_us = t[i] * (1 + 0.005 * std::sin(static_cast<double>(i) * 1.7));
  };
  truth(small);
  truth(large);
  const auto mape = [&](const Scenario& s) {
    const auto sim = simulate_measurements(s, large);
    double e = 0;
    for (std::size_t i = 0; i < large.size(); ++i) e += std::abs(sim[i] / large[i].time_us - 1);
    return e / static_cast<double>(large.size());
  };
  const Calibration c = calibrate(base, small);
  Scenario fitted = base;
  for (std::size_t i = 0; i < c.params.size(); ++i) c.params[i].set(fitted, c.fit.values[i]);
  const double before = mape(base), after = mape(fitted);
  EXPECT_LE(after, before) << "large sizes: " << before * 100 << " % uncalibrated, " << after * 100
                           << " % calibrated";
  EXPECT_TRUE(c.good()) << calibration_table(base, c, small.size());
}

TEST(Calibration, StepLatenciesPerLinkClassSeparateWithSeveralRankCounts) {
  // Alpha per link class: sweeps on 2, 4 and 8 GPUs of one server and on both servers give
  // the LL step latency over NVLink and over the network apart from the launch latency.
  const Scenario base =
      load_scenario(std::filesystem::path(FABRICSIM_SOURCE_DIR) / "tests/data/calibration.toml");
  const std::vector<std::string> keys = {"nccl.launch_latency.ll", "nccl.step_latency.ll_nvlink",
                                         "nccl.step_latency.ll_net", "flow.efficiency_network"};
  const auto params = calibration_parameters(keys);
  ASSERT_EQ(params.size(), 4u);
  const double truth[] = {8.0, 0.9, 4.0, 0.88};
  Scenario hidden = base;
  for (std::size_t i = 0; i < params.size(); ++i) params[i].set(hidden, truth[i]);
  std::vector<Measurement> ms;
  for (int ranks : {2, 4, 8, 16})
    for (std::uint64_t b = 8; b <= (64u << 20); b *= 8)
      ms.push_back({"gen", "all_reduce_perf", CollOp::kAllReduce, ranks, b, 0});
  const auto times = simulate_measurements(hidden, ms);
  for (std::size_t i = 0; i < ms.size(); ++i)
    ms[i].time_us = times[i] * (1 + 0.005 * std::sin(static_cast<double>(i) * 1.7));
  const Calibration c = calibrate(base, ms, keys);
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(c.fit.identifiable[i]) << params[i].key;
    EXPECT_NEAR(c.fit.values[i] / truth[i], 1, 0.02) << params[i].key;
  }
  EXPECT_THROW(calibration_parameters({"nccl.step_latency.ll_nvswitch"}), std::invalid_argument);
  EXPECT_EQ(calibration_parameters({"all"}).size(), 17u);
}

TEST(Calibration, PcieStepLatencyAndEfficiencyOnServersWithoutNvlink) {
  // On PCIe-only servers collectives inside a server step over PCIe: sweeps on 2, 4 and 8 GPUs
  // give the LL step latency over PCIe apart from the launch latency, and the PCIe efficiency.
  const Scenario base = load_scenario(std::filesystem::path(FABRICSIM_SOURCE_DIR) /
                                      "tests/data/calibration-pcie.toml");
  const std::vector<std::string> keys = {"nccl.launch_latency.ll", "nccl.step_latency.ll_pcie",
                                         "flow.efficiency_pcie"};
  const auto params = calibration_parameters(keys);
  const double truth[] = {8.0, 1.6, 0.75};
  Scenario hidden = base;
  for (std::size_t i = 0; i < params.size(); ++i) params[i].set(hidden, truth[i]);
  std::vector<Measurement> ms;
  for (int ranks : {2, 4, 8})
    for (std::uint64_t b = 8; b <= (64u << 20); b *= 8)
      ms.push_back({"gen", "all_reduce_perf", CollOp::kAllReduce, ranks, b, 0});
  const auto times = simulate_measurements(hidden, ms);
  for (std::size_t i = 0; i < ms.size(); ++i)
    ms[i].time_us = times[i] * (1 + 0.005 * std::sin(static_cast<double>(i) * 1.7));
  Calibration c = calibrate(base, ms, keys);
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(c.fit.identifiable[i]) << params[i].key;
    EXPECT_NEAR(c.fit.values[i] / truth[i], 1, 0.02) << params[i].key;
  }
  // A direct PCIe estimate the fit refined is written once, as fitted: the overlay loads.
  const auto scenario =
      std::filesystem::path(FABRICSIM_SOURCE_DIR) / "tests/data/calibration-pcie.toml";
  const auto overlay = tests::temp_dir("pcie-overlay.toml");
  c.direct.push_back({"flow.efficiency_pcie", 0.7, "host copies"});
  std::string text = calibration_overlay(c, scenario, overlay, ms.size(), "gen");
  EXPECT_EQ(text.find("# direct"), std::string::npos) << text;
  std::ofstream(overlay) << text;
  EXPECT_NEAR(load_scenario(overlay).flow_efficiency.pcie, 0.75, 0.015);
  // Not identifiable, the direct value stands.
  c.fit.identifiable[2] = false;
  text = calibration_overlay(c, scenario, overlay, ms.size(), "gen");
  std::ofstream(overlay) << text;
  EXPECT_NE(text.find("efficiency_pcie = 0.70000  # direct: host copies"), std::string::npos)
      << text;
  EXPECT_EQ(load_scenario(overlay).flow_efficiency.pcie, 0.7);
  std::filesystem::remove(overlay);
}

TEST(Calibration, NicMessageOverheadAddsToOneWayLatencyAndIsFittedFromPerftest) {
  Scenario s =
      load_scenario(std::filesystem::path(FABRICSIM_SOURCE_DIR) / "tests/data/calibration.toml");
  const BuiltCluster cluster(s);
  // The overhead adds to an RDMA write's one-way time exactly, at both levels.
  for (const Fidelity f : {Fidelity::kFlow, Fidelity::kPacket}) {
    s.fidelity = f;
    s.network.nic.message_overhead = Time::zero();
    const double bare = rdma_message_latency_us(s, cluster, 2);
    s.network.nic.message_overhead = Time::from_ps(1'250'000);
    EXPECT_NEAR(rdma_message_latency_us(s, cluster, 2) - bare, 1.25, 1e-6);
    EXPECT_GT(bare, 0.5);  // PCIe legs, links and the switch
  }
  // ib_write_lat rows (2 B to 64 KiB) beside all_reduce rows: the default set gains the
  // overhead, and a hidden 0.8 us comes back within 2 %.
  s.fidelity = Fidelity::kFlow;
  s.network.nic.message_overhead = Time::zero();
  Scenario hidden = s;
  hidden.network.nic.message_overhead = Time::from_ps(800'000);
  hidden.flow_efficiency.network = 0.88;
  std::vector<Measurement> ms;
  for (std::uint64_t b = 2; b <= (64u << 10); b *= 4)
    ms.push_back({"lat", "ib_write_lat", CollOp::kSendRecv, 2, b, 0});
  for (std::uint64_t b = 1024; b <= (64u << 20); b *= 8)
    ms.push_back({"gen", "all_reduce_perf", CollOp::kAllReduce, 16, b, 0});
  const auto t = simulate_measurements(hidden, ms);
  for (std::size_t i = 0; i < ms.size(); ++i) ms[i].time_us = t[i];
  const Calibration c = calibrate(s, ms);
  ASSERT_EQ(c.params.back().key, "nic.message_overhead");
  EXPECT_TRUE(c.fit.identifiable.back());
  EXPECT_NEAR(c.fit.values.back() / 0.8, 1, 0.02);
  EXPECT_NEAR(c.fit.values[1] / 0.88, 1, 0.02);  // flow.efficiency_network
  EXPECT_EQ(perftest_binary("RDMA_Write Latency Test"), "ib_write_lat");
  EXPECT_EQ(perftest_binary("RDMA_Read Latency Test"), "");
  EXPECT_EQ(perftest_binary("RDMA_Read BW Test"), "");
  EXPECT_EQ(perftest_binary("Send BW Test"), "ib_send_bw");
  EXPECT_EQ(perftest_binary("RDMA_Write BW Test"), "ib_write_bw");
}

TEST(Calibration, NicMessageRateBoundsSmallMessageStreamsAndIsFittedFromPerftestBandwidth) {
  Scenario s =
      load_scenario(std::filesystem::path(FABRICSIM_SOURCE_DIR) / "tests/data/calibration.toml");
  const BuiltCluster cluster(s);
  // At both levels: without a limit a stream of small writes runs at the wire's pace; at
  // 25 Mpps one message takes exactly 40 ns of the engine, which then sets the pace; a large
  // message's stream keeps the link's pace, and a lone message does not wait.
  std::vector<double> free_64;
  for (const Fidelity f : {Fidelity::kFlow, Fidelity::kPacket}) {
    s.fidelity = f;
    s.network.nic.message_rate_mpps = 0;
    const double free_small = rdma_stream_message_us(s, cluster, 64);
    free_64.push_back(free_small);
    const double free_large = rdma_stream_message_us(s, cluster, 1 << 20);
    const double lone = rdma_message_latency_us(s, cluster, 64);
    EXPECT_LT(free_small, 0.02) << static_cast<int>(f);
    s.network.nic.message_rate_mpps = 25;
    EXPECT_NEAR(rdma_stream_message_us(s, cluster, 64), 0.040, 1e-6) << static_cast<int>(f);
    EXPECT_NEAR(rdma_stream_message_us(s, cluster, 1 << 20) / free_large, 1, 1e-3);
    EXPECT_EQ(rdma_message_latency_us(s, cluster, 64), lone);
  }
  // A 64 B write is one packet of 64 + 82 B: the flow level counts its header as the packet
  // level does (not at the full-MTU share).
  EXPECT_NEAR(free_64[0] / free_64[1], 1, 1e-3);
  EXPECT_NEAR(free_64[1], (64 + 82) * 8 / 100e3, 1e-5);
  // ib_write_bw rows (2 B to 8 MiB), generated with a hidden 12 Mpps and network efficiency
  // 0.85 plus 0.5 % noise: the default set gains the rate and both come back within 2 %.
  s.fidelity = Fidelity::kFlow;
  s.network.nic.message_rate_mpps = 0;
  Scenario hidden = s;
  hidden.network.nic.message_rate_mpps = 12;
  hidden.flow_efficiency.network = 0.85;
  std::vector<Measurement> ms;
  for (std::uint64_t b = 2; b <= (8u << 20); b *= 4)
    ms.push_back({"bw", "ib_write_bw", CollOp::kSendRecv, 2, b, 0});
  const auto t = simulate_measurements(hidden, ms);
  for (std::size_t i = 0; i < ms.size(); ++i)
    ms[i].time_us = t[i] * (1 + 0.005 * std::sin(static_cast<double>(i) * 1.3));
  const Calibration c = calibrate(s, ms, {"flow.efficiency_network", "nic.message_rate_mpps"});
  EXPECT_TRUE(c.fit.identifiable[0] && c.fit.identifiable[1]);
  EXPECT_NEAR(c.fit.values[0] / 0.85, 1, 0.02);
  EXPECT_NEAR(c.fit.values[1] / 12, 1, 0.02);
  const auto defaults = calibration_parameters({}, ms);
  EXPECT_EQ(defaults.back().key, "nic.message_rate_mpps");
  EXPECT_TRUE(std::none_of(defaults.begin(), defaults.end(),
                           [](const auto& p) { return p.key == "nic.message_overhead"; }));
}

TEST(Calibration, PerftestBandwidthSweepGivesTheNicMessageRateInTheOverlay) {
  // An `ib_write_bw -a` sweep in perftest's format (constructed: 9.6 Mpps, +-0.4 %, up to
  // 1 KiB, 11,050 MiB/s beyond), with an RDMA read test beside it that is not calibration data.
  const auto dir = tests::temp_dir("perftest-bw");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kData / "ib_write_bw_all_sizes.txt", dir / "ib_write_bw.txt");
  std::string read = fixture("ib_write_bw.txt");
  read.replace(read.find("RDMA_Write BW Test"), 18, "RDMA_Read BW Test");
  std::ofstream(dir / "ib_read_bw.txt") << read;
  const MeasurementSet set = load_measurements(dir);
  ASSERT_EQ(set.collectives.size(), 23u);
  EXPECT_TRUE(set.collectives.front().rdma_stream());
  EXPECT_NEAR(set.collectives.front().time_us, 2 * 8 / (18.37 * 8 * 1.048576), 1e-9);
  EXPECT_EQ(set.rdma_gbps.size(), 2u);  // both are diagnose's evidence
  const std::string scenario = std::string(FABRICSIM_SOURCE_DIR) + "/tests/data/calibration.toml";
  std::string log;
  const Scenario s = calibrate_folder(dir, scenario, log);
  EXPECT_NE(log.find("RDMA_Read BW Test: not calibration data"), std::string::npos) << log;
  EXPECT_NEAR(s.network.nic.message_rate_mpps / 9.6, 1, 0.01) << log;
  // 11,050 MiB/s of payload over the model's 100G RoCE payload rate.
  const double payload_gbps = 100.0 * 4096 / (4096 + 82);
  EXPECT_NEAR(s.flow_efficiency.network, 11050 * 8 * 1.048576 / 1e3 / payload_gbps, 0.01);
  std::filesystem::remove_all(dir);
}

TEST(Perftest, FlowAndPacketLevelAgreeOnALoneWriteOfAnySize) {
  // One write GPU to GPU across two servers: PCIe, NIC, switch, NIC, PCIe. The flow level's
  // store-and-forward latency (full packets before the bottleneck, the short last one after
  // it) and header-true volume give the packet level's time, multiple of the MTU or not.
  Scenario s =
      load_scenario(std::filesystem::path(FABRICSIM_SOURCE_DIR) / "tests/data/calibration.toml");
  const BuiltCluster cluster(s);
  for (const std::uint64_t bytes : {2u, 1000u, 4096u, 5000u, 9000u, 100000u, 1u << 20}) {
    s.fidelity = Fidelity::kFlow;
    const double flow = rdma_message_latency_us(s, cluster, bytes);
    s.fidelity = Fidelity::kPacket;
    const double packet = rdma_message_latency_us(s, cluster, bytes);
    EXPECT_NEAR(flow / packet, 1, 1e-6) << bytes << " B: flow " << flow << ", packet " << packet;
  }
}

TEST(Perftest, SimulatedOutputReadsAsPerftestAndCalibratesBack) {
  const std::string scenario = std::string(FABRICSIM_SOURCE_DIR) + "/tests/data/calibration.toml";
  const std::vector<std::string> hidden = {"--set", "nic.message_rate_mpps=15",
                                           "--set", "nic.message_overhead=0.7us",
                                           "--set", "flow.efficiency_network=0.9"};
  const auto run = [&](std::vector<std::string> args, int rc = 0) {
    args.insert(args.begin(), "perftest");
    args.insert(args.end(), {"--scenario", scenario});
    args.insert(args.end(), hidden.begin(), hidden.end());
    std::ostringstream out, err;
    EXPECT_EQ(cli_main(args, out, err), rc) << err.str();
    return out.str() + err.str();
  };
  // Bandwidth: every size of -a, in perftest's format; 15 Mpps while messages are small, 0.9
  // of the 100G link's payload rate (4096 of every 4178 B) when large.
  const std::string bw = run({"ib_write_bw", "-a"});
  const PerftestOutput o = parse_perftest(bw, "bw.txt");
  EXPECT_EQ(o.test, "RDMA_Write BW Test");
  EXPECT_FALSE(o.latency);
  EXPECT_EQ(o.link_type, "Ethernet");
  EXPECT_EQ(o.mtu, 4096u);
  ASSERT_EQ(o.rows.size(), 23u);
  EXPECT_EQ(o.rows.front().bytes, 2u);
  EXPECT_EQ(o.rows.front().iterations, 5000u);
  EXPECT_NEAR(o.rows.front().msg_rate_mpps, 15, 1e-4);  // 1 / 66,667 ps
  EXPECT_NEAR(o.rows.back().bw_avg_gbps, 0.9 * 100 * 4096 / 4178, 1e-3);
  const PerftestOutput g =
      parse_perftest(run({"ib_send_bw", "-s", "1048576", "--report_gbits"}), "g.txt");
  EXPECT_EQ(g.test, "Send BW Test");
  ASSERT_EQ(g.rows.size(), 1u);
  EXPECT_NEAR(g.rows.front().bw_avg_gbps, 0.9 * 100 * 4096 / 4178, 1e-2);  // Gb/s, 2 decimals
  // Latency: one write, deterministic; 0.7 us of it the NIC's overhead.
  const std::string lat = run({"ib_write_lat", "-n", "200"});
  const PerftestOutput l = parse_perftest(lat, "lat.txt");
  EXPECT_TRUE(l.latency);
  ASSERT_EQ(l.rows.size(), 1u);
  EXPECT_EQ(l.rows.front().iterations, 200u);
  EXPECT_EQ(l.rows.front().t_min, l.rows.front().t_max);
  EXPECT_EQ(l.rows.front().t_stdev, 0);
  EXPECT_GT(l.rows.front().t_typical, 0.7);
  // Both files calibrate back to the hidden values with the default set.
  const auto dir = tests::temp_dir("perftest-sim");
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "ib_write_bw.txt") << bw;
  std::ofstream(dir / "ib_write_lat.txt") << run({"ib_write_lat", "-a"});
  std::string log;
  const Scenario s = calibrate_folder(dir, scenario, log);
  EXPECT_NEAR(s.network.nic.message_rate_mpps / 15, 1, 0.01) << log;
  EXPECT_NEAR(s.network.nic.message_overhead.us() / 0.7, 1, 0.02) << log;
  EXPECT_NEAR(s.flow_efficiency.network / 0.9, 1, 0.01) << log;
  std::filesystem::remove_all(dir);
  // Wrong input: a binary it does not run, a cluster with one server.
  EXPECT_NE(run({"ib_read_bw"}, 2).find("ib_read_bw not in"), std::string::npos);
  std::ostringstream o1, e1;
  EXPECT_EQ(
      cli_main({"perftest", "ib_write_lat", "--scenario", scenario, "--set", "server.count=1"}, o1,
               e1),
      2);
  EXPECT_NE(e1.str().find("two NICs on different servers"), std::string::npos) << e1.str();
}

TEST(Calibration, CommandsWriteALoadableOverlayValidateAndDiagnose) {
  const auto dir = tests::temp_dir("calibration-cli");
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
                               "--set",      "flow.efficiency_network=0.88"};
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
  EXPECT_NE(text.find("verdict: good"), std::string::npos) << text;
  const Scenario s = load_scenario(overlay);
  EXPECT_NEAR(s.flow_efficiency.network, 0.88, 0.88 * 0.02);
  // The calibrated scenario reproduces the measurements; the uncalibrated one does not.
  const std::string html = (dir / "validate.html").string();
  EXPECT_EQ(run({"validate", "--measurements", (dir / "m").string(), "--scenario", overlay,
                 "--max-error", "1", "--report", html},
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
                 "--max-error", "1"},
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
  // Diagnose on the model: a run's results.json (the golden incast) gives its PFC pauses and
  // each layer's busiest link, the busiest layer named.
  const auto sim = dir / "sim";
  ASSERT_EQ(run({"run", std::string(FABRICSIM_SOURCE_DIR) + "/tests/data/golden.toml", "--out",
                 sim.string(), "--quiet"}),
            0);
  ASSERT_EQ(run({"diagnose", "--measurements", sim.string()}, &text), 0);
  EXPECT_NE(text.find("[suspect] network (PFC): 90 PFC pause frames"), std::string::npos) << text;
  EXPECT_NE(text.find("[suspect] model: leaf downlink: busiest link switch0.port0 busy 0.086 ms "
                      "= 67 % of the 0.127 ms run"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[model] model: NIC: busiest link host1.nic busy 0.021 ms = 17 % of the "
                      "0.127 ms run, paused 0.050 ms"),
            std::string::npos)
      << text;
  // A malformed file is an input error naming file and line.
  std::ofstream(dir / "m" / "broken.txt") << "# Collective test starting: all_reduce_perf\n"
                                             "#  size count type redop root time algbw busbw\n"
                                             "  1024 256 float sum\n";
  EXPECT_EQ(
      run({"validate", "--measurements", (dir / "m").string(), "--scenario", scenario}, &text), 2);
  EXPECT_NE(text.find("broken.txt:3:"), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

TEST(Calibration, HarnessJsonCalibratesLikeTextAndGivesPcieAndHbmDirectly) {
  // What fabricsim-bench would write on a DGX A100 (its JSON writer, without a GPU): collective
  // rows simulated with hidden parameters on one GPU and on 8, and the single-GPU figures.
  const auto dir = tests::temp_dir("harness-json");
  std::filesystem::create_directories(dir);
  const std::string scenario = std::string(FABRICSIM_SOURCE_DIR) + "/tests/data/calibration.toml";
  const Scenario base = load_scenario(scenario);
  Scenario hidden = base;
  // NVLink, not the copy engines' HBM, bounds the 8-GPU rows only below ~0.88.
  hidden.flow_efficiency.nvlink = 0.86;
  hidden.gpu.hbm = Bandwidth::from_bps(1'250'000'000'000 * 8);  // 1250 GB/s: d2d copies at 625
  bench::Report one, eight;
  one.device = eight.device = "NVIDIA A100-SXM4-80GB";
  one.gpus = 1;
  eight.gpus = 8;
  one.micro = bench::Micro{24.0, 25.0, 625.0, 2.0, 2.1, 2.4};
  for (bench::Report* r : {&one, &eight}) {
    std::vector<Measurement> ms;
    for (std::uint64_t b = 1024; b <= (64u << 20); b *= 8)
      ms.push_back({"gen", "all_reduce_perf", CollOp::kAllReduce, r->ranks(), b, 0});
    const auto t = simulate_measurements(hidden, ms);
    for (std::size_t i = 0; i < ms.size(); ++i)
      r->collectives.push_back({"all_reduce", ms[i].bytes, t[i], 0, 0, 0});
  }
  eight.collectives.push_back({"all_reduce", 128u << 20, 1.0, 0, 0, 12});  // wrong results
  std::ofstream(dir / "one.json") << bench::to_json(one);
  std::ofstream(dir / "eight.json") << bench::to_json(eight);
  const MeasurementSet set = load_measurements(dir);
  EXPECT_EQ(set.collectives.size(), 2u * 6);  // the row with wrong results is left out
  ASSERT_EQ(set.micro.size(), 1u);
  std::string log;
  const Scenario s = calibrate_folder(dir, scenario, log);
  EXPECT_NE(log.find("collectives[6]: skipped: 12 wrong result elements"), std::string::npos)
      << log;
  EXPECT_NEAR(static_cast<double>(s.gpu.hbm.bps()) / 8e9, 1250, 0.5);
  // Gen4 x16: 31.5 GB/s of payload; the copies reach 24.5 on average.
  EXPECT_NEAR(s.flow_efficiency.pcie, 24.5 / 31.5077, 1e-3);
  // Six sizes per series: the NVLink efficiency and the Simple step latency over NVLink share
  // the 4 and 32 MiB rows, so the efficiency comes back within a few percent, not exactly.
  EXPECT_NEAR(s.flow_efficiency.nvlink, 0.86, 0.86 * 0.04) << log;
  EXPECT_NE(log.find("nccl.gpu_hbm"), std::string::npos) << log;
  std::ostringstream out, err;
  EXPECT_EQ(cli_main({"calibrate", "--measurements", dir.string(), "--scenario", scenario, "--fit",
                      "flow.efficiency_nvlink,nope"},
                     out, err),
            2);
  EXPECT_NE(err.str().find("--fit: unknown parameter 'nope'"), std::string::npos) << err.str();
  // Diagnose: those host copies are 78 % of the PCIe path; a host at a third of it is suspect.
  std::ostringstream diag;
  ASSERT_EQ(
      cli_main({"diagnose", "--measurements", dir.string(), "--scenario", scenario}, diag, err), 0);
  EXPECT_NE(diag.str().find("[ok] PCIe (host <-> GPU): host copies h2d 24.0, d2h 25.0 GB/s = 78 %"),
            std::string::npos)
      << diag.str();
  const auto slow = dir / "slow";
  std::filesystem::create_directories(slow);
  one.micro->h2d_gbs = 10;
  one.micro->d2h_gbs = 11;
  std::ofstream(slow / "one.json") << bench::to_json(one);
  diag.str("");
  ASSERT_EQ(
      cli_main({"diagnose", "--measurements", slow.string(), "--scenario", scenario}, diag, err),
      0);
  EXPECT_NE(diag.str().find("bottleneck: PCIe (host <-> GPU)\nnext: check the negotiated PCIe"),
            std::string::npos)
      << diag.str();
  // The same rows as nccl-tests text beside the JSON (the harness's --out-dir) are read once.
  std::ofstream(dir / "all_reduce_perf.txt") << fixture("nccl_tests_2.19_all_reduce.txt");
  const MeasurementSet both = load_measurements(dir);
  std::size_t from_text = 0, eight_ranks = 0;
  for (const auto& m : both.collectives) {
    from_text += m.source.find(".txt:") != std::string::npos;
    eight_ranks += m.ranks == 8;
  }
  EXPECT_EQ(eight_ranks, from_text);  // the fixture is an 8-rank sweep: the JSON's 8 are dropped
  EXPECT_GT(from_text, 0u);
  std::filesystem::remove_all(dir);
}

namespace {
// Runs a shell command; returns its exit status and output (captured in a file of this
// process's own: ctest runs the harness tests in parallel processes).
[[maybe_unused]] std::pair<int, std::string> shell(const std::string& cmd) {
  const auto out = tests::temp_dir("bench-out.txt");
  const int status = std::system((cmd + " > " + out.string() + " 2>&1").c_str());
  std::ifstream in(out);
  std::ostringstream s;
  s << in.rdbuf();
  in.close();
  std::filesystem::remove(out);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, s.str()};
}

// `cmd` exits with `code` and says `what`.
[[maybe_unused]] void expect_exit(const std::string& cmd, int code, const std::string& what) {
  const auto [rc, text] = shell(cmd);
  EXPECT_EQ(rc, code) << cmd;
  EXPECT_NE(text.find(what), std::string::npos) << cmd << ": " << text;
}
}  // namespace

#ifdef FABRICSIM_BENCH_BINARY

TEST(Harness, RejectsBadArgumentsWithoutAGpu) {
  const std::string bin = FABRICSIM_BENCH_BINARY;
  expect_exit(bin + " --bogus", 2, "unknown option '--bogus'");
  expect_exit(bin + " -f 1", 2, "need -f >= 2");
  expect_exit(bin + " -b 1x", 2, "bad size '1x'");
#if FABRICSIM_BENCH_MPI
  // Under mpirun every process says which it is, and the failing one ends the job.
  const auto [probe_rc, probe] = shell(bin + " --probe");
  if (probe_rc == 2 && std::filesystem::exists("/usr/bin/mpirun")) {
    const auto [rc, text] =
        shell("timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 " + bin + " --probe");
    EXPECT_NE(rc, 0) << text;
    EXPECT_NE(text.find("of 2): no CUDA device"), std::string::npos) << text;
  }
#endif
}

TEST(Harness, OneGpuRunProducesMeasurementsThatCalibrateAccepts) {
  const std::string bin = FABRICSIM_BENCH_BINARY;
  const auto [probe_rc, probe] = shell(bin + " --probe");
  if (probe_rc == 2) GTEST_SKIP() << "no GPU on this machine: " << probe;
  ASSERT_EQ(probe_rc, 0) << probe;
  const auto dir = tests::temp_dir("bench-run");
  std::filesystem::create_directories(dir / "text");
  std::filesystem::create_directories(dir / "json");
  const auto [rc, text] =
      shell(bin + " -g 1 --op all -b 8 -e 1M -f 32 --micro --out-dir " + (dir / "text").string() +
            " --json " + (dir / "json" / "bench.json").string());
  ASSERT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("# micro: h2d"), std::string::npos) << text;
  // The nccl-tests-format text and the JSON each give the 7 operations x 4 sizes.
  EXPECT_EQ(load_measurements(dir / "text").collectives.size(), 7u * 4);
  const MeasurementSet set = load_measurements(dir / "json");
  EXPECT_EQ(set.collectives.size(), 7u * 4);
  EXPECT_EQ(set.micro.size(), 1u);
  const std::string scenario = std::string(FABRICSIM_SOURCE_DIR) + "/tests/data/calibration.toml";
  std::ostringstream out, err;
  EXPECT_EQ(cli_main({"calibrate", "--measurements", (dir / "json").string(), "--scenario",
                      scenario, "--out", (dir / "calibrated.toml").string()},
                     out, err),
            0)
      << out.str() << err.str();
  EXPECT_NO_THROW(load_scenario(dir / "calibrated.toml"));
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
  expect_exit(bin + " --client", 2, "needs a value");
  expect_exit(bin + " --server --client h", 2, "exactly one of --server and --client");
  expect_exit(bin + " --server -s 0", 2, "'0' is not a valid number");
  // Against a device that does not exist (or, on a machine without RDMA, any device).
  expect_exit(bin + " --client 127.0.0.1 --dev no_such_device0", 2, "no RDMA device");
}
#endif
