#include <gtest/gtest.h>

#include <thread>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.hpp"
#include "experiments/training.hpp"
#include "report/progress_display.hpp"
#include "scenario/scenario.hpp"

using namespace fabricsim;

namespace {

// Two DGX A100 (8 GPUs and 8 NICs each) on one 100G switch, at flow level (fast).
std::string two_servers(const std::string& workload) {
  return R"(
fidelity = "flow"
[server]
preset = "dgx-a100"
count = 2
[fabric]
kind = "star"
link_rate = "100Gbps"
[workload]
tokens_per_step = 1000
forward_time = "10ms"
backward_time = "20ms"
optimizer_time = "1ms"
)" + workload;
}

double metric(const RunResult& r, const std::string& name) {
  for (const auto& m : r.metrics)
    if (m.name == name) return m.value;
  ADD_FAILURE() << "no metric " << name;
  return 0;
}

RunResult train(const std::string& text) {
  const Scenario s = load_scenario_text(text, "w.toml");
  const BuiltCluster cluster(s);
  return run_training(s, cluster);
}

}  // namespace

TEST(Workload, ComputeAloneSetsTheStepAndTokensPerSecond) {
  // No gradients, no TP: a step is forward + backward + optimizer = 31 ms on both the cluster
  // and one server; 1000 tokens per 31 ms; scaling is perfect.
  const RunResult r = train(two_servers(""));
  EXPECT_NEAR(metric(r, "step_time_ms"), 31.0, 1e-6);
  EXPECT_NEAR(metric(r, "tokens_per_s"), 1000 / 0.031, 1e-6);
  EXPECT_NEAR(metric(r, "scaling_efficiency"), 1.0, 1e-9);
  EXPECT_NEAR(metric(r, "single_server_tokens_per_s"), 500 / 0.031, 1e-6);
}

TEST(Workload, GradientBucketsOverlapTheBackwardPassAndStragglersSlowTheStep) {
  // One bucket: the DP AllReduce starts after the backward pass and is fully exposed.
  const RunResult exposed = train(two_servers("gradient_bytes = \"64MiB\"\nbuckets = 1\n"));
  const double ar = metric(exposed, "allreduce_cross_node_ms");
  // A 2-rank ring moves 64 MiB per GPU through its NICs: GPU i uses the two NICs on its PCIe
  // switch, which it shares with the other GPU of that switch and its DP group, so one NIC's
  // 12.5 GB/s per group: 5.4 ms of wire time plus the pipeline's latencies.
  EXPECT_GT(ar, 5.0);
  EXPECT_LT(ar, 6.5);
  EXPECT_NEAR(metric(exposed, "step_time_ms"), 31.0 + ar, 0.01);
  EXPECT_NEAR(metric(exposed, "exposed_comm_ms"), ar, 0.01);
  EXPECT_LT(metric(exposed, "scaling_efficiency"), 1.0);
  // Four buckets: three of them are reduced while backward still runs, so the step is about
  // compute + the last bucket's AllReduce (a quarter of the bytes, ar / 4, plus its fixed
  // latencies, which a 16 MiB collective does not hide).
  const RunResult overlapped = train(two_servers("gradient_bytes = \"64MiB\"\nbuckets = 4\n"));
  EXPECT_NEAR(metric(overlapped, "step_time_ms"), 31.0 + ar / 4, 0.1 * ar);
  EXPECT_GT(metric(overlapped, "overlapped_comm_ms"), 5.0);
  // One GPU at half speed holds back its server, and through the DP AllReduce the other one.
  const RunResult slow =
      train(two_servers("gradient_bytes = \"64MiB\"\nbuckets = 1\nslow_gpus = [3]\n"
                        "slow_gpu_speed = 0.5\n"));
  EXPECT_NEAR(metric(slow, "step_time_ms"), 62.0 + ar, 0.05);
}

TEST(Workload, TensorParallelAllReducesRunInsideTheServerAndCount) {
  const RunResult r = train(two_servers("tp_bytes = \"64MiB\"\ntp_collectives = 8\n"));
  EXPECT_GT(metric(r, "allreduce_ms_per_step"), 0.1);
  EXPECT_EQ(metric(r, "allreduce_cross_node_ms"), 0);
  EXPECT_EQ(metric(r, "collectives_per_step"), 16);  // 8 per server
  EXPECT_NEAR(metric(r, "step_time_ms"), 31.0 + metric(r, "allreduce_ms_per_step"), 0.01);
}

TEST(Workload, CaseStudyScenariosLoadAndStateTheirCaseValues) {
  const std::string dir = std::string(FABRICSIM_SOURCE_DIR) + "/scenarios/case-study-32gpu/";
  for (const char* f : {"before.toml", "after.toml", "fix-1-roce.toml", "fix-2-nccl-env.toml",
                        "fix-3-topology.toml", "fix-4-gpudirect.toml"}) {
    const Scenario s = load_scenario(dir + f);
    EXPECT_TRUE(s.has_workload) << f;
    EXPECT_EQ(s.cluster.servers, 4) << f;
  }
  const Scenario before = load_scenario(dir + "before.toml");
  const Scenario after = load_scenario(dir + "after.toml");
  // after = before + the four fixes, nothing else: compare the resolved scenarios key by key.
  EXPECT_EQ(before.network.nic.congestion, &kNoCongestionControl);
  EXPECT_EQ(after.network.nic.congestion, &kDcqcnFirmware);
  EXPECT_FALSE(before.network.host.gpudirect);
  EXPECT_TRUE(after.network.host.gpudirect);
  EXPECT_EQ(before.nccl.server_order, ServerOrder::kList);
  EXPECT_EQ(after.nccl.server_order, ServerOrder::kLeaf);
  EXPECT_EQ(after.nccl.buffsize, Bytes(4 << 20));
  EXPECT_EQ(after.network.nic.ib_timeout, 22);
  EXPECT_EQ(before.workload.gradient_bytes, after.workload.gradient_bytes);
  EXPECT_EQ(before.workload.forward, after.workload.forward);
  EXPECT_FALSE(before.notes.empty());
}

TEST(Workload, PipelineStagesRunOneForwardOneBackwardWithTheBubbleOfTheSchedule) {
  // Two stages of one server, 4 micro-batches of f = 2.5 ms forward and b = 5 ms backward,
  // sends free: 1F1B takes (M + P - 1)(f + b) + O = 5 x 7.5 + 1 = 38.5 ms. Stage 0 waits
  // 5 ms for micro-batch 0's gradients and 2.5 ms for the last; stage 1 2.5 ms for the first
  // activations: a bubble of 5 ms per server on average.
  const RunResult r = train(two_servers("pipeline_stages = 2\nmicro_batches = 4\n"));
  EXPECT_NEAR(metric(r, "step_time_ms"), 38.5, 1e-6);
  EXPECT_NEAR(metric(r, "pipeline_bubble_ms"), 5.0, 1e-6);
  EXPECT_EQ(metric(r, "pp_send_ms"), 0);
  // One server alone runs its 31 ms of compute without a bubble.
  EXPECT_NEAR(metric(r, "scaling_efficiency"), 31.0 / 38.5, 1e-6);
  // More micro-batches shrink the bubble's share: (8 + 1) x 3.75 + 1 = 34.75 ms.
  const RunResult more = train(two_servers("pipeline_stages = 2\nmicro_batches = 8\n"));
  EXPECT_NEAR(metric(more, "step_time_ms"), 34.75, 1e-6);
  // Activations cost network time: 8 GPUs each send 16 MiB per micro-batch to their peer,
  // each through its own 100G NIC (about 1.4 ms), once each way per micro-batch.
  const RunResult sends =
      train(two_servers("pipeline_stages = 2\nmicro_batches = 4\npp_bytes = \"16MiB\"\n"));
  EXPECT_NEAR(metric(sends, "pp_send_ms"), 8 * 16.0 * 1.048576 / 12.5, 0.8);
  EXPECT_GT(metric(sends, "step_time_ms"), 38.5 + 2 * 1.3);
  EXPECT_EQ(metric(sends, "collectives_per_step"), 8);  // 4 micro-batches, each way
}

TEST(Workload, SequenceShapeDerivesTokensAndStageActivations) {
  const Scenario s = load_scenario_text(
      two_servers("").replace(two_servers("").find("tokens_per_step = 1000\n"), 23, "") +
          "pipeline_stages = 2\nmicro_batches = 4\nmicro_batch_size = 2\n"
          "sequence_length = 2048\nhidden_size = 4096\n",
      "w.toml");
  EXPECT_EQ(s.workload.tokens_per_step, 4u * 2 * 2048);  // one replica
  EXPECT_EQ(s.workload.pp_bytes, 2048u * 2 * 4096 * 2 / 8);
  try {
    load_scenario_text(two_servers("pipeline_stages = 3\n"), "w.toml");
    ADD_FAILURE() << "3 stages on 2 servers accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline_stages"), std::string::npos) << e.what();
  }
}

TEST(Workload, ProgressCountsWorkDoneAndEndsAtOne) {
  // Two steps of TP AllReduces: the reports' fraction of the plans' actions done stays in
  // 0..1 and never goes back, and the last report, after the run, says all of it.
  const std::string text = two_servers("tp_bytes = \"64MiB\"\ntp_collectives = 64\nsteps = 2\n");
  const Scenario s = load_scenario_text(text, "w.toml");
  const BuiltCluster cluster(s);
  std::vector<double> done;
  run_training(s, cluster, [&](const Progress& p) { done.push_back(p.done); });
  for (std::size_t i = 1; i < done.size(); ++i) EXPECT_GE(done[i], done[i - 1]);
  for (const double d : done) {
    EXPECT_GE(d, 0.0);
    EXPECT_LE(d, 1.0);
  }
  ASSERT_FALSE(done.empty());
  EXPECT_EQ(done.back(), 1.0);
}

TEST(Workload, ProgressDisplayWritesLogLinesWithTheTimeLeftFromWorkDone) {
  // Off a terminal: plain lines. 25 % of the work after t seconds leaves 3 t.
  std::ostringstream log;
  ProgressDisplay d(log, false, std::chrono::milliseconds(0), std::chrono::milliseconds(0));
  d.update({.now = Time::from_ps(5'000'000'000), .events = 1000, .done = 0.25});
  d.finish();
  const std::string line = log.str();
  EXPECT_TRUE(line.starts_with("progress: simulated 5ms")) << line;
  EXPECT_NE(line.find("25.0 % done, ETA"), std::string::npos) << line;
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\r'), std::string::npos);
  // Unknown work: no ETA at all (never one from stop_time).
  std::ostringstream unknown;
  ProgressDisplay u(unknown, false, std::chrono::milliseconds(0), std::chrono::milliseconds(0));
  u.update({.now = Time::from_ps(1), .events = 1, .done = -1});
  EXPECT_EQ(unknown.str().find("ETA"), std::string::npos) << unknown.str();
  // A run of several simulations names each phase, and a new phase's ETA is its own: just
  // started, half done, so about as long again as it has run (not the whole run's time).
  std::ostringstream phased;
  ProgressDisplay p(phased, false, std::chrono::milliseconds(0), std::chrono::milliseconds(0));
  p.update({.now = Time::from_ps(1), .events = 1, .done = 0.9, .phase = "training step"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  p.update({.now = Time::from_ps(1), .events = 1, .done = 0.5, .phase = "study: x 1GiB"});
  const std::string text = phased.str();
  EXPECT_NE(text.find("progress: [training step] simulated"), std::string::npos) << text;
  EXPECT_NE(text.find("progress: [study: x 1GiB] simulated"), std::string::npos) << text;
  EXPECT_NE(text.find("50.0 % done, ETA 0 s"), std::string::npos) << text;
}
