#include <gtest/gtest.h>

#include <cmath>

#include "fabric/packet_network.hpp"
#include "models/nccl/collective.hpp"
#include "tests/support/fixtures.hpp"
#include "topo/communicator.hpp"

using namespace fabricsim;
using namespace fabricsim::literals;

namespace {

// The idealised fabric of the closed forms: n hosts on one switch, B = 100 Gb/s per link,
// cables of 1 us (200 m), 300 ns switch latency, a buffer too large to ever fill (no
// congestion loss or pause), and the GPU side free (no step latency, no launch latency,
// unlimited copy rate): only the wire is left. Packets may be as large as a slice (MTU
// `mtu`), so an 8 GB collective is a few thousand packets per rank.
struct Ideal {
  Topology topo;
  Routing routing;
  Simulation sim;
  PacketNetwork net;
  CollectiveEngine engine;
  std::uint32_t comm;
  Ideal(int hosts, Bytes mtu, int channels, NcclConfig cfg = free_nccl(), GpuSpec gpu = free_gpu(),
        Bandwidth rate = 100_Gbps)
      : topo(build_cluster({.servers = 0,
                            .hosts = hosts,
                            .server = {},
                            .fabric = {.shape = StarSpec{},
                                       .link_rate = rate,
                                       .switch_latency = 300_ns,
                                       .host_cable_m = 200}})),
        routing(Routing::compute(topo, 1)),
        net(sim, topo, routing, params(mtu)),
        engine(sim, net, gpu, with_channels(cfg, channels)),
        comm(engine.add_communicator(build_communicator(topo, routing, {}))) {}
  static GpuSpec free_gpu() {
    return {.name = "ideal", .sm_version = 80, .sms = 108, .hbm = {}, .channel = {}};
  }
  static NcclConfig free_nccl() {
    NcclConfig c;
    for (auto& row : c.step_latency_us) row = {0, 0, 0};
    c.launch_latency_us = {0, 0, 0};
    return c;
  }
  static NcclConfig with_channels(NcclConfig c, int channels) {
    c.min_channels = c.max_channels = channels;
    return c;
  }
  static NetworkParams params(Bytes mtu) {
    NetworkParams p;
    p.switch_latency = 300_ns;
    p.buffer.buffer = Bytes(Bytes::rep{1} << 40);
    p.nic.format = {.mtu = mtu, .header = 82_B};
    return p;
  }
  // Runs one collective and returns its time in microseconds (mean over ranks).
  double run(CollOp op, std::uint64_t bytes, Algo algo, Proto proto) {
    const auto id =
        engine.launch(comm, {.op = op, .bytes = bytes, .algo = algo, .proto = proto}, sim.now());
    sim.run();
    EXPECT_TRUE(engine.result(id).done);
    return engine.result(id).mean_us();
  }
};

constexpr double kRate = 100e9 / 8;  // bytes per second
constexpr double kLambda = 2.3e-6;   // two cables and the switch

// Wire time of a message of m payload bytes in MTU packets of 82 B overhead, and the time from
// the sender's last bit to the receiver's: the last packet is serialized again at the switch.
struct SliceTimes {
  double tau, delta;
};
SliceTimes slice_times(double m, double mtu) {
  const double k = std::max(1.0, std::ceil(m / mtu));
  const double last = m - (k - 1) * mtu;
  return {(m + k * 82) / kRate, (last + 82) / kRate + kLambda};
}

// Closed form of the pipelined ring (see docs/collectives.md): per loop, N send steps of s
// slices of tau; a step's first slice waits for the previous step's first slice (tau + delta
// after it started), so steps start every D = max(s tau, tau + delta); the loop ends when the
// last slice of the last send step arrives; loops run back to back.
double ring_closed_form_us(CollOp op, double bytes, int n, double mtu) {
  const double chunk = 2 << 20,
               slice = 1 << 20;  // Simple, 4 MiB buffer: 2 MiB chunks, 1 MiB slices
  const int steps = op == CollOp::kAllReduce ? 2 * (n - 1) : n - 1;
  double total = 0;
  for (double offset = 0; offset < bytes;) {
    const double real = std::max(1.0, std::min(chunk, std::ceil((bytes - offset) / n)));
    const int s = static_cast<int>(std::max(1.0, std::ceil(real / slice)));
    const double m = real / s;  // the sizes used here divide evenly
    const auto [tau, delta] = slice_times(m, mtu);
    const double d = std::max(s * tau, tau + delta);
    total += (steps - 1) * d + (s - 1) * tau + tau + delta;
    offset += real * n;
  }
  return total * 1e6;
}

}  // namespace

TEST(Collectives, RingMatchesItsClosedFormFrom8BytesTo8Gigabytes) {
  for (CollOp op : {CollOp::kAllReduce, CollOp::kAllGather, CollOp::kReduceScatter}) {
    for (std::uint64_t bytes = 8; bytes <= (std::uint64_t{8} << 30); bytes *= 8) {
      Ideal f(4, 1_MiB + 82_B, 1);
      const double sim = f.run(op, bytes, Algo::kRing, Proto::kSimple);
      const double closed = ring_closed_form_us(op, static_cast<double>(bytes), 4, (1 << 20) + 82);
      EXPECT_NEAR(sim / closed, 1.0, 0.01) << to_string(op) << " " << bytes << " B: " << sim
                                           << " us simulated, " << closed << " us closed form";
    }
  }
}

TEST(Collectives, TreeMatchesItsClosedFormsInTheLatencyAndBandwidthRegimes) {
  // Four hosts: tree 0 is 0 <- 2 <- {1, 3}, tree 1 its mirror 3 <- 1 <- {2, 0}.
  // One 8-byte chunk on tree 0 alone: the leaves' slices reach 2 one after the other
  // (A = tau + delta, then tau later), 2's sum reaches the root at 2A + tau, the root's result
  // reaches 2 at 3A + tau, and 2 forwards it to its two children over its one link: the last
  // arrives at 4A + 2 tau.
  {
    Ideal f(4, 1_MiB + 82_B, 1);
    const auto id = f.engine.launch(
        f.comm,
        {.op = CollOp::kAllReduce, .bytes = 8, .algo = Algo::kTree, .proto = Proto::kSimple},
        Time::zero());
    f.sim.run();
    const auto [tau, delta] = slice_times(8, (1 << 20) + 82);
    const double a = tau + delta;
    // Within 1 %: the receivers' ACKs (86 B) share the links with the data.
    EXPECT_NEAR(f.engine.result(id).finish().us() / ((4 * a + 2 * tau) * 1e6), 1.0, 0.01);
  }
  // Large S on both trees (two channels, S/2 each): every host is inner node of one tree and
  // leaf of the other; an inner node with two children receives 2 partial sums and 1 result
  // per chunk of its tree, a leaf 1 result of the other: 4 chunks of S/2 / chunk each, so the
  // busiest links carry 2 S: T = 2 S (1 + 82 / chunk) / B, plus a pipeline fill of a few
  // chunks (below 0.1 % from 1 GB on). One tree alone: 3 S / B.
  for (std::uint64_t bytes : {std::uint64_t{1} << 30, std::uint64_t{8} << 30}) {
    const double per_byte = (1 + 82.0 / (512 << 10)) / kRate * 1e6;
    Ideal two(4, 1_MiB + 82_B, 2);
    EXPECT_NEAR(two.run(CollOp::kAllReduce, bytes, Algo::kTree, Proto::kSimple) /
                    (2 * static_cast<double>(bytes) * per_byte),
                1.0, 0.01);
    Ideal one(4, 1_MiB + 82_B, 1);
    EXPECT_NEAR(one.run(CollOp::kAllReduce, bytes, Algo::kTree, Proto::kSimple) /
                    (3 * static_cast<double>(bytes) * per_byte),
                1.0, 0.01);
  }
}

TEST(Collectives, LowLatencyProtocolWinsSmallSimpleWinsLarge) {
  // NCCL's default step latencies and an A100: LL pays 0.6-2.7 us per step where Simple pays
  // 3.4-14 us, but LL puts 2 bytes on the wire per byte of data.
  const auto time = [](Proto proto, std::uint64_t bytes) {
    Ideal f(4, 4_KiB, 2, NcclConfig{}, gpu_preset("a100"));
    return f.run(CollOp::kAllReduce, bytes, Algo::kRing, proto);
  };
  EXPECT_LT(time(Proto::kLL, 8) * 2, time(Proto::kSimple, 8));
  EXPECT_LT(time(Proto::kLL128, 8), time(Proto::kSimple, 8));
  const double ll = time(Proto::kLL, 64 << 20), simple = time(Proto::kSimple, 64 << 20);
  EXPECT_GT(ll / simple, 1.8);  // twice the wire bytes on a wire-bound ring
  EXPECT_LT(time(Proto::kLL128, 64 << 20), ll);
}

TEST(Collectives, BufferSizeAndChannelsChangeLargeMessageTimeAsTheStepStructureImplies) {
  // NCCL_BUFFSIZE 256 KiB: 64 KiB slices instead of 1 MiB. Each primitive costs its thread
  // block the GPU-side step latency (3.4 us) plus the copy at 20 GB/s: 64 KiB per 6.68 us =
  // 9.81 GB/s, below the link's 12.25 GB/s of payload (4096 of 4178 wire bytes at 100 Gb/s);
  // with 1 MiB slices the block moves 18.8 GB/s and the link is the limit. Expected ratio
  // 12.25 / 9.81 = 1.25.
  const auto with_buffer = [](Bytes buffsize) {
    NcclConfig cfg;
    cfg.buffsize = buffsize;
    Ideal f(4, 4_KiB, 2, cfg, gpu_preset("a100"));
    return f.run(CollOp::kAllReduce, 64 << 20, Algo::kRing, Proto::kSimple);
  };
  const double small = with_buffer(256_KiB), large = with_buffer(4_MiB);
  EXPECT_NEAR(small / large, 1.25, 0.08) << small << " us vs " << large << " us";
  // At 400 Gb/s one channel (one thread block: 14 us + 1 MiB at 20 GB/s per slice, about
  // 16 GB/s) cannot fill the 50 GB/s link; two channels double the rate, four fill the link.
  const auto with_channels = [](int channels) {
    Ideal f(4, 4_KiB, channels, NcclConfig{}, gpu_preset("a100"), 400_Gbps);
    return f.run(CollOp::kAllReduce, 256 << 20, Algo::kRing, Proto::kSimple);
  };
  const double one = with_channels(1), two = with_channels(2), four = with_channels(4);
  EXPECT_NEAR(one / two, 2.0, 0.2) << one << " us vs " << two << " us";
  EXPECT_LT(four, two * 0.9);
}

TEST(Collectives, BusBandwidthFollowsNcclTestsDefinitions) {
  // nccl-tests: algbw = S / t; busbw = algbw x 2(n-1)/n (AllReduce), (n-1)/n (AllGather,
  // ReduceScatter, AllToAll, with S = count x n x size), 1 (Broadcast, Reduce, SendRecv).
  const int n = 8;
  const std::uint64_t requested = 1 << 30;  // -b/-e value, bytes
  const double t_us = 10'000;
  struct Case {
    CollOp op;
    std::uint64_t size, count, bytes;
    double factor;
  };
  const Case cases[] = {
      {CollOp::kAllReduce, requested, requested / 4, requested, 2.0 * 7 / 8},
      {CollOp::kAllGather, requested, requested / 4 / n, requested, 7.0 / 8},
      {CollOp::kReduceScatter, requested, requested / 4 / n, requested, 7.0 / 8},
      {CollOp::kAllToAll, requested, requested / 4 / n, requested, 7.0 / 8},
      {CollOp::kBroadcast, requested, requested / 4, requested, 1},
      {CollOp::kReduce, requested, requested / 4, requested, 1},
      {CollOp::kSendRecv, requested, requested / 4, requested, 1},
  };
  for (const Case& c : cases) {
    const TestCounts counts = test_counts(c.op, requested, 4, n);
    EXPECT_EQ(counts.size_column, c.size) << to_string(c.op);
    EXPECT_EQ(counts.count_column, c.count) << to_string(c.op);
    EXPECT_EQ(counts.bytes, c.bytes) << to_string(c.op);
    EXPECT_DOUBLE_EQ(algbw_gbps(counts.bytes, t_us), 1073741824.0 / 1e9 / 1e-2);
    EXPECT_DOUBLE_EQ(bus_factor(c.op, n), c.factor) << to_string(c.op);
  }
  // A size that does not divide: nccl-tests rounds the per-rank count down.
  const TestCounts odd = test_counts(CollOp::kAllGather, 1000, 4, 8);
  EXPECT_EQ(odd.count_column, 31u);         // 250 elements / 8 ranks
  EXPECT_EQ(odd.size_column, 31u * 8 * 4);  // what every rank receives
}

namespace {

// 4 x DGX A100 on two leaves (servers 0, 1 under leaf 0; 2, 3 under leaf 1) and one spine.
struct Dgx4 {
  Topology topo;
  Routing routing;
  Dgx4() : topo(build_cluster(fixtures::dgx_a100_x4())), routing(Routing::compute(topo, 1)) {}
  int nic_index(std::uint32_t endpoint) const {
    return topo.graph()[topo.endpoints()[endpoint]].index;
  }
};

}  // namespace

TEST(Collectives, RingsCrossEachServerBoundaryOnceOnOneRail) {
  const Dgx4 c;
  const CommLayout l = build_communicator(c.topo, c.routing, {});
  ASSERT_EQ(l.ranks.size(), 32u);
  EXPECT_EQ(l.channels.size(), 16u);  // two per NIC
  for (std::size_t ch = 0; ch < l.channels.size(); ++ch) {
    const CommChannel& k = l.channels[ch];
    int crossings = 0;
    for (std::size_t i = 0; i < k.ring.size(); ++i) {
      const auto a = k.ring[i], b = k.ring[(i + 1) % k.ring.size()];
      if (l.ranks[a].server == l.ranks[b].server) continue;
      ++crossings;
      // Out of one server and into the next through the same NIC index: one rail.
      EXPECT_EQ(c.nic_index(k.nic[a]), static_cast<int>(ch % 8)) << "channel " << ch;
      EXPECT_EQ(c.nic_index(k.nic[b]), static_cast<int>(ch % 8)) << "channel " << ch;
      // The ring enters at the GPU nearest that NIC (GPU i sits with NIC i on a DGX A100).
      EXPECT_EQ(l.ranks[b].gpu % 8, ch % 8) << "channel " << ch;
    }
    EXPECT_EQ(crossings, 4) << "channel " << ch;
  }
}

TEST(Collectives, DoubleBinaryTreeMatchesNccl) {
  // ncclGetBtree for 4 ranks: 0 <- 2 <- {1, 3}; the second tree mirrors it: 3 <- 1 <- {2, 0}.
  EXPECT_EQ(nccl_btree(4, 0).down1, 2);
  EXPECT_EQ(nccl_btree(4, 2).up, 0);
  EXPECT_EQ(nccl_btree(4, 2).down0, 1);
  EXPECT_EQ(nccl_btree(4, 2).down1, 3);
  EXPECT_EQ(nccl_btree(4, 1).up, 2);
  EXPECT_EQ(nccl_dtree(4, 3).up, -1);
  EXPECT_EQ(nccl_dtree(4, 1).up, 3);
  EXPECT_EQ(nccl_dtree(4, 0).up, 1);
  // Every rank is a leaf in one tree at most once: inner in one, leaf in the other (even n).
  for (int n : {2, 4, 8, 16, 6}) {
    for (int r = 0; r < n; ++r) {
      const auto a = nccl_btree(n, r), b = nccl_dtree(n, r);
      const bool leaf_a = a.down0 < 0 && a.down1 < 0, leaf_b = b.down0 < 0 && b.down1 < 0;
      EXPECT_FALSE(!leaf_a && !leaf_b && n > 2) << n << " " << r;
    }
  }
}

TEST(Collectives, LeafOrderedRingsHalveTheSpineTrafficOfAnAlternatingHostfile) {
  // The case study's fix 3: a hostfile alternating leaves (0, 2, 1, 3) makes every ring
  // cross the spine 4 times; the leaf order (0, 1, 2, 3) twice. The spine's port counters show
  // it.
  const auto spine_bytes = [](ServerOrder order, std::vector<int> list) {
    Dgx4 c;
    Simulation sim(1);
    PacketNetwork net(sim, c.topo, c.routing, fixtures::dgx_network(64_MiB));
    NcclConfig cfg;
    CollectiveEngine engine(sim, net, gpu_preset("a100"), cfg);
    CommunicatorOptions o;
    o.server_order = order;
    o.server_list = std::move(list);
    const auto comm = engine.add_communicator(build_communicator(c.topo, c.routing, o));
    const auto id = engine.launch(
        comm,
        {.op = CollOp::kAllReduce, .bytes = 8 << 20, .algo = Algo::kRing, .proto = Proto::kSimple},
        Time::zero());
    sim.run();
    EXPECT_TRUE(engine.result(id).done);
    std::uint64_t bytes = 0;
    for (std::size_t s = 0; s < net.switch_count(); ++s) {
      if (c.topo.graph()[c.routing.switch_vertex(s)].tier != 2) continue;
      for (std::size_t i = 0; i < net.network_switch(s).port_count(); ++i)
        bytes += net.network_switch(s).port(i).tx_bytes();
    }
    return static_cast<double>(bytes);
  };
  const double alternating = spine_bytes(ServerOrder::kList, {0, 2, 1, 3});
  const double leaf = spine_bytes(ServerOrder::kLeaf, {});
  EXPECT_GT(leaf, 0);
  EXPECT_NEAR(alternating / leaf, 2.0, 0.05);
}

TEST(Collectives, OverlappingComputeLosesTheSmsAndBandwidthTheCollectiveTakes) {
  const GpuSpec a100 = gpu_preset("a100");
  // 16 channels take 16 of 108 SMs: a compute-bound kernel runs 108/92 = 1.174x longer.
  EXPECT_NEAR(compute_slowdown(a100, 16, Bandwidth{}, false), 108.0 / 92, 1e-12);
  // A collective streaming 3 x 100 GB/s through HBM leaves a memory-bound kernel 1739 of
  // 2039 GB/s.
  EXPECT_NEAR(compute_slowdown(a100, 16, Bandwidth::from_bps(300'000'000'000LL * 8), true),
              2039.0 / 1739, 1e-9);
  EXPECT_EQ(gpu_preset("h200").sms, 132);
  EXPECT_THROW(gpu_preset("v100"), std::invalid_argument);
}

TEST(Collectives, RingGraphOnNvSwitchServersFollowsNcclsSearch) {
  // search.cc on one server through NVSwitches, nvlink_gbs = links x NCCL's per-link figure:
  // at speed s floor(nvlink_gbs / s) rings fit; pass 1 keeps the most channels x speed while
  // the next speed step is above 0.49 x the best, DupChannels doubles and halves at >= 25 GB/s
  // (not on sm > 80 below 50 GB/s with more than 4 channels), pass 2 raises the speed.
  //   DGX H100, 18 x 20.6 = 370.8: 60 -> 6 (360), 50 -> 7, 40 -> 9, 30 -> 12 (all <= 360),
  //     stop at 24 (0.4 x 60); dup: 12 x 30; 40 fits only 9: stays 12 x 30.
  //   H800, 8 x 20.6 = 164.8: 60 -> 2, 50 -> 3, 40 -> 4 (160), 30 -> 5, 24 -> 6, 20 -> 8
  //     (160, not more), stop at 15; dup (4 channels, not more than 4): 8 x 20.
  //   DGX A100, 12 x 20 = 240 (sm 80 steps): 40 -> 6 = 240 uses the whole link; dup: 12 x 20.
  //   DGX B200, 18 x 40.1 = 721.8: 90 -> 8 (720), nothing more; dup: 16 x 45.
  struct Case {
    double nvlink_gbs;
    int sm;
    int channels;
    double bw;
  };
  for (const Case c : {Case{18 * 20.6, 90, 12, 30.0}, Case{8 * 20.6, 90, 8, 20.0},
                       Case{12 * 20.0, 80, 12, 20.0}, Case{18 * 40.1, 100, 16, 45.0}}) {
    const RingGraph g = nvswitch_ring_graph(c.nvlink_gbs, c.sm);
    EXPECT_EQ(g.channels, c.channels) << c.nvlink_gbs;
    EXPECT_DOUBLE_EQ(g.bw_gbs, c.bw) << c.nvlink_gbs;
  }
  // A slow switch link: 4 x 20.6 = 82.4: 60 -> 1, 50 -> 1, 40 -> 2 (80), 30 -> 2, 24 -> 3,
  // 20 -> 4 (80), stop at 15 (0.375 x 40); dup (2 channels): 4 x 20.
  const RingGraph slow = nvswitch_ring_graph(4 * 20.6, 90);
  EXPECT_EQ(slow.channels, 4);
  EXPECT_DOUBLE_EQ(slow.bw_gbs, 20.0);
}

TEST(Collectives, FinishedRunsKeepTheirResultButNotTheirPlan) {
  // A training step launches tens of thousands of collectives one after another: each
  // finished one must give its plan's storage back (a run kept its vectors' capacity once,
  // 2.4 GB for the 256-GPU step of bench/train70b-256.toml).
  Ideal f(4, 4_KiB, 2);
  for (int i = 0; i < 3; ++i) {
    const auto id = f.engine.launch(
        f.comm,
        {.op = CollOp::kAllReduce, .bytes = 1 << 20, .algo = Algo::kRing, .proto = Proto::kSimple},
        f.sim.now());
    EXPECT_GT(f.engine.retained_plan_bytes(), 0u);  // the running one's
    f.sim.run();
    EXPECT_TRUE(f.engine.result(id).done);
    EXPECT_EQ(f.engine.retained_plan_bytes(), 0u);
  }
}
