// CollNet AllReduce through SHARP aggregation trees in InfiniBand switches (CollNetDirect and
// CollNetChain): the trees the communicator gets and the switches' limits, the bounds and the
// bytes per NIC at both fidelity levels, and NCCL's tuner rows.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include "experiments/nccl_tests.hpp"
#include "experiments/run.hpp"
#include "fabric/fabric.hpp"
#include "models/nccl/nccl.hpp"
#include "scenario/scenario.hpp"
#include "tests/support/collective_run.hpp"

using namespace fabricsim;

namespace {

// `servers` x `preset` servers on an InfiniBand fabric of `rate` links whose switches
// aggregate, CollNet enabled, with `overrides` (key=value) applied.
Scenario sharp_cluster(const std::string& preset, const std::string& rate, int servers,
                       const std::string& fabric, const std::string& fidelity,
                       std::vector<std::string> overrides = {}) {
  return load_scenario_text(fmt::format(R"(
fidelity = "{}"
[server]
preset = "{}"
count = {}
[fabric]
technology = "infiniband"
link_rate = "{}"
{}
[switch]
sharp = true
[nccl]
NCCL_COLLNET_ENABLE = 1
)",
                                        fidelity, preset, servers, rate, fabric),
                            "t.toml", {.overrides = std::move(overrides)});
}

// DGX A100: 8 GPUs, 8 x 200G HDR NICs each.
Scenario sharp_a100(int servers, const std::string& fabric, const std::string& fidelity,
                    std::vector<std::string> overrides = {}) {
  return sharp_cluster("dgx-a100", "200Gbps", servers, fabric, fidelity, std::move(overrides));
}

// Two leaves of 16 NICs (servers 0 and 1 on leaf0, 2 and 3 on leaf1), 8 spines.
const char* kLeafSpine = "kind = \"leaf-spine\"\nhosts_per_leaf = 16\nspines = 8";
const char* kStar = "kind = \"star\"";
// A three-tier k = 4 fat-tree: 16 hosts, 2 per edge switch.
const char* kFatTree = "kind = \"fat-tree\"\nk = 4";

std::string endpoint_name(const BuiltCluster& c, std::uint32_t e) {
  return c.topology.graph()[c.topology.fabric_endpoint(e)].name;
}

}  // namespace

TEST(CollNet, EachHeadGetsATreeOverItsLeavesRootedAtOneSpine) {
  // 4 x DGX A100 on two leaves: head h of every server is rank 8 s + h (each GPU has a NIC of
  // its own). Its tree joins leaf0's node (servers 0, 1) and leaf1's (servers 2, 3) under
  // spine h mod 8's: three nodes, the root first.
  const Scenario s = sharp_a100(4, kLeafSpine, "flow");
  const BuiltCluster c(s);
  const CommLayout l = build_communicator(c.topology, c.routing, communicator_options(s));
  ASSERT_TRUE(l.sharp_refused.empty()) << l.sharp_refused;
  ASSERT_EQ(l.sharp_trees.size(), 8u);
  for (std::size_t h = 0; h < 8; ++h) {
    const AggregationTree& t = l.sharp_trees[h];
    ASSERT_EQ(t.node.size(), 3u) << h;
    EXPECT_EQ(endpoint_name(c, t.node[0]), fmt::format("spine{}.sharp", h));
    EXPECT_EQ(t.parent, (std::vector<std::int32_t>{-1, 0, 0})) << h;
    ASSERT_EQ(t.attach.size(), 4u);
    EXPECT_EQ(t.attach[0], t.attach[1]);
    EXPECT_EQ(t.attach[2], t.attach[3]);
    EXPECT_EQ(endpoint_name(c, t.node[t.attach[0]]), "leaf0.sharp");
    EXPECT_EQ(endpoint_name(c, t.node[t.attach[2]]), "leaf1.sharp");
  }
  // Rail-optimized, every head h sits on its rail's leaf: one node, no way up.
  const Scenario r = sharp_a100(4, std::string(kLeafSpine) + "\nrail_optimized = true", "flow");
  const BuiltCluster rc(r);
  const CommLayout rl = build_communicator(rc.topology, rc.routing, communicator_options(r));
  ASSERT_EQ(rl.sharp_trees.size(), 8u);
  for (std::size_t h = 0; h < 8; ++h) {
    EXPECT_EQ(rl.sharp_trees[h].node.size(), 1u);
    EXPECT_EQ(endpoint_name(rc, rl.sharp_trees[h].node[0]), fmt::format("leaf{}.sharp", h / 4));
  }
}

TEST(CollNet, ASwitchsTreeLimitTakesCollNetAway) {
  // A Quantum HDR switch runs one streaming-aggregation tree at a time (switch.sharp_trees =
  // 1): leaf0 would carry every head's tree, so the second tree finds no room, the
  // communicator gets no CollNet and the tuner goes back to NCCL's other algorithms.
  const Scenario s = sharp_a100(4, kLeafSpine, "flow", {"switch.sharp_trees=1"});
  const BuiltCluster c(s);
  const CommLayout l = build_communicator(c.topology, c.routing, communicator_options(s));
  EXPECT_NE(l.sharp_refused.find("switch leaf0 would hold 2 streaming-aggregation trees"),
            std::string::npos)
      << l.sharp_refused;
  const NcclTestsRow row = fixtures::nccl_tests_row(s, 256 << 20);
  EXPECT_NE(row.algo, Algo::kCollNetDirect);
  EXPECT_NE(row.algo, Algo::kCollNetChain);
  // Quantum-2 and later (the default, one tree per port): with one cable from each leaf to the
  // one spine (16:1), all eight trees would share it.
  const Scenario o = sharp_a100(4,
                                "kind = \"leaf-spine\"\nhosts_per_leaf = 16\nspines = 1\n"
                                "oversubscription = 16",
                                "flow");
  const BuiltCluster oc(o);
  const CommLayout ol = build_communicator(oc.topology, oc.routing, communicator_options(o));
  EXPECT_NE(ol.sharp_refused.find("would share the 1 link(s) from leaf0 to spine0"),
            std::string::npos)
      << ol.sharp_refused;
  // A k = 4 fat-tree (2 hosts per edge switch, 2 aggregation switches per pod, 4 cores, each
  // core on one aggregation switch per pod): two heads share each edge switch, so their trees
  // must leave it on different cables. The roots are chosen so that they do: every cable
  // between switches carries at most one tree.
  const Scenario f = sharp_a100(2, kFatTree, "flow");
  const BuiltCluster fc(f);
  const CommLayout fl = build_communicator(fc.topology, fc.routing, communicator_options(f));
  EXPECT_TRUE(fl.sharp_refused.empty()) << fl.sharp_refused;
  ASSERT_EQ(fl.sharp_trees.size(), 8u);
  std::map<std::pair<std::uint32_t, std::uint32_t>, int> cables;
  for (const AggregationTree& t : fl.sharp_trees) {
    EXPECT_EQ(t.node.size(), 5u);  // a core, an aggregation and an edge switch in each pod
    for (std::size_t i = 0; i < t.node.size(); ++i)
      if (t.parent[i] >= 0) ++cables[{t.node[i], t.node[static_cast<std::size_t>(t.parent[i])]}];
  }
  for (const auto& [cable, trees] : cables)
    EXPECT_EQ(trees, 1) << endpoint_name(fc, cable.first) << " -> "
                        << endpoint_name(fc, cable.second);
}

TEST(CollNet, DirectExceedsTheRingBoundAndStaysBelowTheNvLinkBound) {
  // N = 32 ranks on 4 x DGX A100, H = 8 heads per server. Direct: per loop of H chunks every
  // GPU scatters 7 to the other heads and, as a head, sends its result to the other 7, so
  // each GPU's NVLink (12 x 25 = 300 GB/s each way, of which the payload share p carries
  // data) carries 14 chunks per 8 of data:
  //   algbw <= 300 p x 8 / 14 (137.1 GB/s at p = 0.8);
  // a head's NIC carries its chunk once each way (8 x 25 = 200 GB/s per server), so the NICs
  // allow more. busbw = algbw x 2 (N - 1) / N. A ring sends 2 (N - 1) / N bytes per byte over
  // two network hops per channel through 8 NICs: busbw <= 8 x 25 = 200 GB/s. Both fidelity
  // levels (packet level at 128 MiB, where the fill is a few per cent, to keep the test short).
  const double nvlink_alg = 300.0 * fixtures::nvlink_payload_share() * 8 / 14;
  const double ring_bus = 8 * 25.0;
  double flow_alg = 0;
  for (const auto& [fidelity, bytes] : {std::pair{"flow", 1ull << 30}, {"packet", 1ull << 27}}) {
    const NcclTestsRow row = fixtures::nccl_tests_row(sharp_a100(4, kLeafSpine, fidelity), bytes);
    EXPECT_EQ(row.algo, Algo::kCollNetDirect) << fidelity;  // the tuner's choice
    EXPECT_EQ(row.proto, Proto::kSimple) << fidelity;
    EXPECT_GT(row.busbw[0], 1.2 * ring_bus) << fidelity;  // bound: 2 x 31/32 x 137 = 266
    EXPECT_LT(row.algbw[0], nvlink_alg) << fidelity;
    EXPECT_GT(row.algbw[0], 0.85 * nvlink_alg) << fidelity;
    if (bytes == 1ull << 30) flow_alg = row.algbw[0];
    if (bytes == 1ull << 27) {
      EXPECT_NEAR(row.algbw[0], flow_alg, 0.06 * flow_alg);
    }
  }
  // Without CollNet the same cluster stays below the ring's bound.
  const NcclTestsRow ring = fixtures::nccl_tests_row(
      sharp_a100(4, kLeafSpine, "flow", {"nccl.NCCL_COLLNET_ENABLE=0"}), 1ull << 30);
  EXPECT_EQ(ring.algo, Algo::kRing);
  EXPECT_LT(ring.busbw[0], ring_bus);
}

TEST(CollNet, ChainReachesItsNvLinkBoundAndAgreesAcrossLevels) {
  // Chain on 2 x DGX A100 (one switch): channel c reduces up a chain of the server's 8 GPUs to
  // head c mod 8 and broadcasts back down, so every GPU sends each byte of a channel once up
  // and once down: in the 6 of 8 channels where a GPU is inside its chain it sends each byte
  // up and down, as a head only down, at the bottom only up, so its NVLink carries
  // (6 x 2 + 1 + 1) / 8 S = 1.75 S each way: algbw <= 300 p / 1.75 (137 GB/s at the payload
  // share p = 0.8); the heads' NICs carry S / 8 each way. Flow and packet level agree within 3 % at
  // 256 MiB.
  const double bound = 300.0 * fixtures::nvlink_payload_share() / 1.75;
  std::vector<double> alg;
  for (const char* fidelity : {"flow", "packet"}) {
    const NcclTestsRow row = fixtures::nccl_tests_row(
        sharp_a100(2, kStar, fidelity, {"nccl.NCCL_ALGO=\"CollNetChain\""}), 1ull << 28);
    EXPECT_EQ(row.algo, Algo::kCollNetChain) << fidelity;
    EXPECT_LT(row.algbw[0], bound) << fidelity;
    EXPECT_GT(row.algbw[0], 0.85 * bound) << fidelity;
    alg.push_back(row.algbw[0]);
  }
  EXPECT_NEAR(alg[1], alg[0], 0.03 * alg[0]);
}

TEST(CollNet, EveryNicCarriesItsHeadsShareOnceEachWay) {
  // With S bytes per GPU, Direct sends each head's 1/8 of its server's sum up its tree and
  // receives the result once: every NIC sends S / 8 and every switch port towards a NIC
  // carries S / 8, on the star, the leaf-spine and the three-tier fat-tree alike (a ring would put
  // 2 (N - 1) / N x S / 8 x 2 = S / 2 x 31/32 through each NIC each way: twice and more).
  const std::uint64_t bytes = 256ull << 20;
  for (const char* fabric : {kStar, kLeafSpine, kFatTree}) {
    const Scenario s = sharp_a100(fabric == kLeafSpine ? 4 : 2, fabric, "flow");
    const BuiltCluster c(s);
    const auto run = fixtures::run_collective(s, c, {.op = CollOp::kAllReduce, .bytes = bytes});
    ASSERT_TRUE(run.result.done);
    ASSERT_EQ(run.result.algo, Algo::kCollNetDirect);
    int nics = 0, downlinks = 0;
    run.fabric->for_each_link([&](const Fabric::Link& l) {
      const double b = static_cast<double>(l.bytes);
      if (l.layer != "NIC" && l.layer != "leaf downlink") return;
      if (l.name.find(".sharp") != std::string::npos) return;  // a node's internal port
      ++(l.layer == "NIC" ? nics : downlinks);
      EXPECT_NEAR(b, bytes / 8.0, 0.01 * bytes) << fabric << " " << l.name;
    });
    EXPECT_EQ(nics, fabric == kLeafSpine ? 32 : 16);
    EXPECT_EQ(downlinks, nics);
  }
}

TEST(CollNet, TunerFollowsNcclsFormulas) {
  // DGX A100 (NVLink 12 x 20 GB/s in NCCL's figures = 240, NIC 25 GB/s), 8 heads, 8 GPUs per
  // server. Direct's graph: bwInter the largest inter speed step <= 25 that fits,
  // 24 (speedArrayInter), each GPU needing (1 + 7/7) x s of NVLink; pass 2 raises bwIntra while
  // below 2 x 24 and 2 s <= 240: 28, 30, 48. Chain's: 2 x 8 x s <= 240, so s <= 15: 15.
  EXPECT_DOUBLE_EQ(collnet_graph_bw(240, 8, 8, 25, 80, true), 48.0);
  EXPECT_DOUBLE_EQ(collnet_graph_bw(240, 8, 8, 25, 80, false), 15.0);
  TunerInput in{
      .op = CollOp::kAllReduce, .bytes = 512ull << 20, .nranks = 32, .nnodes = 4, .sm_version = 80};
  in.collnet_heads = 8;
  in.collnet_direct_bw_gbs = 48;
  in.collnet_chain_bw_gbs = 15;
  // Direct: busBw = 8 x 48 = 384, GPU/NIC factor 1, algBw 192; latency
  // 2 (3.7 + 7 x 0.4) + 31 = 44 us. Chain: algBw 8 x 15 / 2 = 60; latency 2 x 7 x 2.8 + 30.
  const double s = static_cast<double>(in.bytes);
  EXPECT_NEAR(tuner_time_us(in, Algo::kCollNetDirect, Proto::kSimple), 44 + s / (1000 * 192), 1e-6);
  EXPECT_NEAR(tuner_time_us(in, Algo::kCollNetChain, Proto::kSimple), 69.2 + s / (1000 * 60), 1e-6);
  EXPECT_EQ(tuner_time_us(in, Algo::kCollNetDirect, Proto::kLL128), HUGE_VAL);  // Simple only
  // Four GPUs per NIC (ppn 8, 2 heads): f = 4 - 3/2 = 2.5; on Hopper x 0.85.
  in.collnet_heads = 2;
  in.sm_version = 90;
  EXPECT_NEAR(tuner_time_us(in, Algo::kCollNetDirect, Proto::kSimple),
              44 + s / (1000 * 2 * 48 / 2.5 * 0.85 / 2), 1e-6);
  // NVLS across servers (4 x DGX H100, NVLS graph bwIntra 40 and bwInter 48, nvls_tree_test):
  // min(40 x 0.85 x 7/8 x 2 = 59.5, 48) x 8 heads = 384 busBw, algBw 384 x 32 / 62; latency
  // 25 + 18 us. It needs CollNet.
  in.nvls_efficiency = 0.85;
  in.nvls_tree_heads = 8;
  in.nvls_tree_bw_intra_gbs = 40;
  in.nvls_tree_bw_inter_gbs = 48;
  EXPECT_NEAR(tuner_time_us(in, Algo::kNvls, Proto::kSimple), 43 + s / (1000 * 384 * 32 / 62.0),
              1e-6);
  // Off without CollNet, and for other operations.
  in.collnet_heads = 0;
  EXPECT_EQ(tuner_time_us(in, Algo::kCollNetDirect, Proto::kSimple), HUGE_VAL);
  EXPECT_EQ(tuner_time_us(in, Algo::kNvls, Proto::kSimple), HUGE_VAL);
  in.collnet_heads = 8;
  in.op = CollOp::kAllGather;
  EXPECT_EQ(tuner_time_us(in, Algo::kCollNetChain, Proto::kSimple), HUGE_VAL);
}

TEST(CollNet, ChunkFollowsEnqueue) {
  // enqueue.cc: Direct from a 512 KiB step, halved while fewer than 128 loops of
  // concurrent x chunk (down to 128 KiB), then fewer than 16 (64 KiB, 32 KiB).
  EXPECT_EQ(collnet_chunk_bytes(1ull << 30, 16 * 8, 512 << 10, 2, true), 128u << 10);
  EXPECT_EQ(collnet_chunk_bytes(64ull << 30, 16 * 8, 512 << 10, 2, true), 512u << 10);
  EXPECT_EQ(collnet_chunk_bytes(1u << 20, 16 * 8, 512 << 10, 2, true), 32u << 10);
  // Chain: from min(256 KiB, step), depth = GPUs per server.
  EXPECT_EQ(collnet_chunk_bytes(64ull << 30, 16, 512 << 10, 8, false), 256u << 10);
  EXPECT_EQ(collnet_chunk_bytes(1ull << 30, 16, 512 << 10, 8, false), 128u << 10);
  EXPECT_EQ(collnet_chunk_bytes(64ull << 20, 16, 512 << 10, 8, false), 64u << 10);
}

TEST(CollNet, NvlsAcrossServersSendsEachHeadsShareThroughItsTree) {
  // NCCL's NVLS algorithm across servers (it needs CollNet): NVLS inside each DGX H100 through
  // its 8 heads, each head's reduced chunk into its SHARP tree and the result back. Per loop of
  // H = 8 chunks a GPU's NVLink carries H + 1 each way at the multimem rate
  // R = 18 x 0.85 x 20.6 = 315.2 GB/s, so algbw <= R x 8 / 9 = 280.2 GB/s, as on one server;
  // each NIC carries S / 8 each way (8 x 50 GB/s per server allows 400). NVLSTree instead caps
  // every head at NCCL's 45.5 GB/s busbw on four servers or more (8 x 45.5 = 364), and a
  // ring's busbw is at most the NICs' 8 x 50 = 400 GB/s.
  const double alg_bound = 18 * 0.85 * 20.6 * 8 / 9;
  const double nvls_tree_cap = 8 * 45.5;
  const std::string leaf_spine = std::string(kLeafSpine);
  const NcclTestsRow row = fixtures::nccl_tests_row(
      sharp_cluster("dgx-h100", "400Gbps", 4, leaf_spine, "flow"), 1ull << 30);
  EXPECT_EQ(row.algo, Algo::kNvls);  // NCCL's tuner: NVLS beats NVLSTree on 4 servers
  EXPECT_LT(row.algbw[0], alg_bound);
  EXPECT_GT(row.algbw[0], 0.9 * alg_bound);
  EXPECT_GT(row.busbw[0], 1.15 * std::max(nvls_tree_cap, 8 * 50.0));
  const NcclTestsRow off = fixtures::nccl_tests_row(
      sharp_cluster("dgx-h100", "400Gbps", 4, leaf_spine, "flow", {"nccl.NCCL_COLLNET_ENABLE=0"}),
      1ull << 30);
  // Without CollNet there is no NVLS across servers; NVLSTree or a ring (at most the NICs'
  // 8 x 50 = 400 GB/s busbw) stays below both bounds.
  EXPECT_NE(off.algo, Algo::kNvls);
  EXPECT_LT(off.busbw[0], std::max(nvls_tree_cap, 8 * 50.0));
  // Two servers on one switch, named with NCCL_ALGO (there NCCL's tuner prefers NVLSTree):
  // both levels agree, and every NIC carries S / 8 each way.
  const std::uint64_t bytes = 256ull << 20;
  std::vector<double> alg;
  for (const char* fidelity : {"flow", "packet"}) {
    const Scenario s =
        sharp_cluster("dgx-h100", "400Gbps", 2, kStar, fidelity, {"nccl.NCCL_ALGO=\"NVLS\""});
    const BuiltCluster c(s);
    const auto run = fixtures::run_collective(s, c, {.op = CollOp::kAllReduce, .bytes = bytes});
    ASSERT_TRUE(run.result.done);
    ASSERT_EQ(run.result.algo, Algo::kNvls);
    alg.push_back(static_cast<double>(bytes) / 1e3 /
                  (run.result.finish() - run.result.start).seconds() / 1e6);
    if (std::string_view(fidelity) != "flow") continue;
    int nics = 0;
    run.fabric->for_each_link([&](const Fabric::Link& l) {
      if (l.layer != "NIC") return;
      ++nics;
      EXPECT_NEAR(static_cast<double>(l.bytes), bytes / 8.0, 0.01 * bytes) << l.name;
    });
    EXPECT_EQ(nics, 16);
  }
  EXPECT_NEAR(alg[1], alg[0], 0.04 * alg[0]);  // issue 18's flow-vs-packet bound is 5 %
}
