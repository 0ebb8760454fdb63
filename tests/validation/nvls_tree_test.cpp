// NVLSTree AllReduce across servers (NVLink SHARP inside each server, NCCL's trees between the
// servers' heads): the bounds, the traffic per NVLink bundle and per NIC, NCCL's tuner
// formula, and the published multi-server figures of
// validation/reference/nvls-tree-multi-server.toml.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "experiments/nccl_tests.hpp"
#include "experiments/run.hpp"
#include "fabric/fabric.hpp"
#include "models/nccl/nccl.hpp"
#include "scenario/scenario.hpp"
#include "tests/support/collective_run.hpp"
#include "tests/support/published.hpp"

using namespace fabricsim;

namespace {

// Two DGX H100 (8 GPUs, 8 x 400G NDR each) on one InfiniBand switch, plus `extra` TOML.
Scenario two_dgx_h100(const std::string& fidelity, const std::string& extra = "") {
  return load_scenario_text(
      fixtures::one_dgx_h100(extra), "t.toml",
      {.overrides = {fmt::format("fidelity=\"{}\"", fidelity), "server.count=2"}});
}

}  // namespace

TEST(NvlsTree, TwoDgxH100ExceedTheRingBoundAndStayBelowTheNvLinkBound) {
  // N = 16 ranks, H = 8 heads per server (one per NIC). Each GPU's NVLink carries, per loop of
  // H chunks, H + 1 chunks each way (as NVLS on one server: its part of every head's
  // ld_reduce, its own store; every head's store, its own reduction), at the multimem rate
  // R = 18 x 0.85 x 20.6 = 315.2 GB/s each way, so
  //   busbw <= R x H / (H + 1) x 2 (N - 1) / N = 315.2 x 8/9 x 30/16 = 525.3 GB/s.
  // A ring sends 2 (N - 1) / N bytes per byte over every hop, two of its hops per channel
  // cross the network, and 16 channels share 8 NICs: busbw <= 8 NICs x 50 GB/s = 400 GB/s at
  // line rate. The trees send each head's share once each way over its NIC (S / 8 per NIC),
  // which is how busbw, defined from the ring's traffic, exceeds what the NICs could carry.
  // NVLSTree's channels copy at most NCCL's per-channel ceiling (tuning.cc
  // perChMaxNVLSTreeBws, 57.7 GB/s busbw per head on two Hopper servers; nccl.hpp): 8 x 57.7 =
  // 461.6 GB/s, below the NVLink bound, so that is the bound the run approaches.
  const double nvlink_bound = 18 * 0.85 * 20.6 * 8 / 9 * 30 / 16;
  const double channel_bound = 8 * 57.7;
  ASSERT_LT(channel_bound, nvlink_bound);
  const double ring_bound = 8 * 50.0;
  // Flow level at 1 GiB (the fill a few per cent), packet level at 512 MiB (the fill near 10 %;
  // it keeps the test short under the sanitizers).
  for (const auto& [fidelity, bytes] : {std::pair{"flow", 1ull << 30}, {"packet", 1ull << 29}}) {
    const NcclTestsRow row = fixtures::nccl_tests_row(two_dgx_h100(fidelity), bytes);
    EXPECT_EQ(row.algo, Algo::kNvlsTree) << fidelity;
    EXPECT_EQ(row.proto, Proto::kSimple) << fidelity;
    EXPECT_EQ(row.channels, 16) << fidelity;  // NVLS_NCHANNELS_SM90
    EXPECT_GT(row.busbw[0], ring_bound) << fidelity;
    EXPECT_LT(row.busbw[0], channel_bound) << fidelity;
    EXPECT_GT(row.busbw[0], (bytes == 1ull << 30 ? 0.88 : 0.85) * channel_bound) << fidelity;
  }
  // The ring itself stays below its bound, and NCCL_NVLS_ENABLE=0 takes NVLSTree away.
  const NcclTestsRow ring =
      fixtures::nccl_tests_row(two_dgx_h100("flow", "[nccl]\nNCCL_ALGO = \"Ring\"\n"), 1ull << 30);
  EXPECT_EQ(ring.algo, Algo::kRing);
  EXPECT_LT(ring.busbw[0], ring_bound);
  const NcclTestsRow off =
      fixtures::nccl_tests_row(two_dgx_h100("flow", "[nccl]\nNCCL_NVLS_ENABLE = 0\n"), 1ull << 30);
  EXPECT_NE(off.algo, Algo::kNvlsTree);
  EXPECT_NE(off.algo, Algo::kNvls);
}

TEST(NvlsTree, EachNvLinkCarriesOnePlusOneOverHAndEachNicOneOverHBytesPerByte) {
  // With S bytes per GPU: every GPU is a head here (8 NICs), so each NVLink bundle carries
  // S (1 + 1/8) each way; each head's share S / 8 goes up the tree and its result comes down,
  // so every NIC, and every switch port towards one, carries S / 8 each way whether its
  // server is the tree's root or its child on a channel.
  const std::uint64_t bytes = 256ull << 20;
  const Scenario s = two_dgx_h100("flow");
  const BuiltCluster c(s);
  const auto run = fixtures::run_collective(s, c, {.op = CollOp::kAllReduce, .bytes = bytes});
  ASSERT_TRUE(run.result.done);
  ASSERT_EQ(run.result.algo, Algo::kNvlsTree);
  int nvlink = 0, nic = 0, downlink = 0;
  run.fabric->for_each_link([&](const Fabric::Link& l) {
    const double b = static_cast<double>(l.bytes);
    if (l.layer == "NVLink") {
      ++nvlink;
      EXPECT_NEAR(b, 1.125 * bytes, 0.01 * bytes) << l.name;
    } else if (l.layer == "NIC" || l.layer == "leaf downlink") {
      ++(l.layer == "NIC" ? nic : downlink);
      EXPECT_NEAR(b, bytes / 8.0, 0.01 * bytes) << l.name;
    }
  });
  EXPECT_EQ(nvlink, 32);  // 16 GPUs, out and in
  EXPECT_EQ(nic, 16);
  EXPECT_EQ(downlink, 16);
}

TEST(NvlsTree, TunerTimeFollowsNcclsFormula) {
  // tuning.cc for 2 x DGX H100: the NVLS graph's bwIntra is the largest inter-node speed step
  // (search.cc sm90SpeedArrayInter) with 9 x bw <= 18 x 20.6 = 370.8 GB/s: 40; bwInter the
  // largest step <= the NIC's 50 GB/s and below 2 x 40: 48. Per channel
  //   min(40 x 0.85 x 7/8 x 2 = 59.5, 48 x 2 = 96, perChMaxNVLSTreeBw 57.7) = 57.7,
  // busBw = 8 x 57.7 = 461.6, algBw = 461.6 x 16 / 30 = 246.19 GB/s; latency 25 + 2 x 20.9.
  const NvlsTreeGraphBw bw = nvls_tree_graph_bw(18 * 20.6, 8, 50.0, 90);
  EXPECT_DOUBLE_EQ(bw.intra, 40.0);
  EXPECT_DOUBLE_EQ(bw.inter, 48.0);
  TunerInput in{.op = CollOp::kAllReduce,
                .bytes = 1ull << 30,
                .nranks = 16,
                .nnodes = 2,
                .sm_version = 90,
                .nvls_efficiency = 0.85};
  in.nvls_tree_heads = 8;
  in.nvls_tree_bw_intra_gbs = bw.intra;
  in.nvls_tree_bw_inter_gbs = bw.inter;
  const double alg = 8 * 57.7 * 16 / 30.0;
  EXPECT_NEAR(tuner_time_us(in, Algo::kNvlsTree, Proto::kSimple),
              66.8 + static_cast<double>(1ull << 30) / (1000 * alg), 0.01);
  EXPECT_EQ(tuner_time_us(in, Algo::kNvlsTree, Proto::kLL128), HUGE_VAL);  // Simple only
  in.nnodes = 4;  // more servers: bwInter x 1 and the 4-node cap 45.5 (min(59.5, 48, 45.5))
  in.nranks = 32;
  EXPECT_NEAR(tuner_time_us(in, Algo::kNvlsTree, Proto::kSimple),
              25 + 4 * 20.9 + static_cast<double>(1ull << 30) / (1000 * 8 * 45.5 * 32 / 62.0),
              0.01);
}

TEST(NvlsTree, PublishedTwoServerFiguresAreReproducedWithinTenPerCent) {
  // validation/reference/nvls-tree-multi-server.toml: figures with their sources, nothing
  // fitted to them; the default presets (with each point's overrides) must come within 10 %.
  fixtures::expect_published_points("nvls-tree-multi-server.toml", Algo::kNvlsTree, 0.10);
}
