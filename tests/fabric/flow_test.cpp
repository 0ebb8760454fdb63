#include <fmt/format.h>
#include <gtest/gtest.h>

#include "experiments/run.hpp"
#include "fabric/flow_network.hpp"
#include "models/nccl/collective.hpp"
#include "models/workload/traffic.hpp"
#include "scenario/scenario.hpp"
#include "solver/maxmin.hpp"
#include "tests/support/fixtures.hpp"
#include "topo/communicator.hpp"

using namespace fabricsim;
using namespace fabricsim::literals;

TEST(MaxMin, SingleBottleneckSharesEqually) {
  // Three flows through one link of 30: 30 / 3 = 10 each.
  MaxMinSolver s;
  const auto link = s.add_resource(30);
  std::vector<MaxMinSolver::Var> v;
  for (int i = 0; i < 3; ++i) v.push_back(s.add_variable(std::vector{link}));
  s.solve();
  for (auto x : v) EXPECT_DOUBLE_EQ(s.rate(x), 10);
}

TEST(MaxMin, ParkingLot) {
  // L1 (capacity 1) and L2 (capacity 2) in a row; A crosses both, B only L1, C only L2.
  // L1 is the bottleneck of A and B: 1 / 2 each. C takes what A leaves on L2: 2 - 1/2 = 1.5.
  MaxMinSolver s;
  const auto l1 = s.add_resource(1), l2 = s.add_resource(2);
  const auto a = s.add_variable(std::vector{l1, l2});
  const auto b = s.add_variable(std::vector{l1});
  const auto c = s.add_variable(std::vector{l2});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(b), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(c), 1.5);
}

TEST(MaxMin, MultipleBottlenecks) {
  // L1 (10) carries A and B; L2 (4) carries B, C and D. L2's fair share 4/3 is the smaller:
  // B = C = D = 4/3; A gets the rest of L1: 10 - 4/3 = 26/3.
  MaxMinSolver s;
  const auto l1 = s.add_resource(10), l2 = s.add_resource(4);
  const auto a = s.add_variable(std::vector{l1});
  const auto b = s.add_variable(std::vector{l1, l2});
  const auto c = s.add_variable(std::vector{l2});
  const auto d = s.add_variable(std::vector{l2});
  s.solve();
  EXPECT_NEAR(s.rate(b), 4.0 / 3, 1e-12);
  EXPECT_NEAR(s.rate(c), 4.0 / 3, 1e-12);
  EXPECT_NEAR(s.rate(d), 4.0 / 3, 1e-12);
  EXPECT_NEAR(s.rate(a), 26.0 / 3, 1e-12);
  // A route crossing a link twice uses it twice: on a link of 3, E (twice) and F (once)
  // rise together until 2r + r = 3: r = 1.
  const auto l3 = s.add_resource(3);
  const auto e = s.add_variable(std::vector{l3, l3});
  const auto f = s.add_variable(std::vector{l3});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(e), 1);
  EXPECT_DOUBLE_EQ(s.rate(f), 1);
}

TEST(MaxMin, ChangesResolveOnlyTheComponentTheyTouch) {
  // Two disjoint links with 100 flows each; adding a flow to one re-solves that one's 101
  // flows, not the other's, and leaves the other's rates alone.
  MaxMinSolver s;
  const auto l1 = s.add_resource(100), l2 = s.add_resource(100);
  for (int i = 0; i < 100; ++i) {
    s.add_variable(std::vector{l1});
    s.add_variable(std::vector{l2});
  }
  EXPECT_EQ(s.solve(), 200u);
  std::vector<MaxMinSolver::Var> changed;
  const auto extra = s.add_variable(std::vector{l1});
  EXPECT_EQ(s.solve(&changed), 101u);
  EXPECT_EQ(changed.size(), 101u);
  EXPECT_NEAR(s.rate(extra), 100.0 / 101, 1e-12);
  s.remove_variable(extra);
  changed.clear();
  EXPECT_EQ(s.solve(&changed), 100u);
  EXPECT_DOUBLE_EQ(s.rate(0), 1);
  EXPECT_EQ(s.solve(), 0u);  // nothing changed since
}

namespace {

struct StarNet {
  Topology topo;
  Routing routing;
  NetworkParams params;
  StarNet(int hosts)
      : topo(build_cluster({.servers = 0,
                            .hosts = hosts,
                            .server = {},
                            .fabric = {.shape = StarSpec{},
                                       .link_rate = 100_Gbps,
                                       .switch_latency = 300_ns,
                                       .host_cable_m = 200}})),
        routing(Routing::compute(topo, 1)) {
    params.switch_latency = 300_ns;
    params.buffer.buffer = 64_MiB;
    params.buffer.pfc = true;
    params.nic.format = {.mtu = 4096_B, .header = 82_B};
  }
};

// When each message completes on backend Net.
template <class Net>
std::vector<Time> finish_times(const Topology& topo, const Routing& routing,
                               const NetworkParams& params, const std::vector<Message>& msgs) {
  Simulation sim(1);
  Net net(sim, topo, routing, params);
  net.messages().assign(msgs);
  net.start_messages();
  sim.run();
  std::vector<Time> out;
  for (const Message& m : net.messages()) out.push_back(m.finish);
  return out;
}

}  // namespace

TEST(FlowLevel, AnUncongestedMessageFinishesWhenThePacketModelSaysAndIncastSharesFairly) {
  StarNet star(5);
  // One 1 MiB message on an idle path: 256 packets serialized at the sender, the last one
  // once more at the switch, 2 x 1 us cables and the switch's 300 ns (88.19968 us, see
  // StarModel.OneMessageOnAnIdlePathTakesTheHandComputedTime).
  const std::vector<Message> one{{.src = 0, .dst = 1, .size = 1_MiB, .start = Time::zero()}};
  const Time flow = finish_times<FlowNetwork>(star.topo, star.routing, star.params, one)[0];
  const Time packet = finish_times<PacketNetwork>(star.topo, star.routing, star.params, one)[0];
  EXPECT_EQ(packet.ps(), 88'199'680);
  EXPECT_NEAR(flow.us(), packet.us(), 0.01);
  // Four senders to one receiver: max-min gives each a quarter of the receiver's link; all
  // finish together at 4x one message's serialization (plus the path latency).
  std::vector<Message> incast;
  for (std::uint32_t s = 1; s <= 4; ++s)
    incast.push_back({.src = s, .dst = 0, .size = 4_MiB, .start = Time::zero()});
  const auto f = finish_times<FlowNetwork>(star.topo, star.routing, star.params, incast);
  const auto p = finish_times<PacketNetwork>(star.topo, star.routing, star.params, incast);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(f[i], f[0]);
    EXPECT_NEAR(f[i].us() / p[i].us(), 1.0, 0.05) << i;
  }
  EXPECT_NEAR(f[0].us(), 4 * 4 * 1048576.0 * 4178 / 4096 / 12.5e3 + 2.3 + 0.334, 0.01);
}

namespace {

// 4 x DGX A100 on a full-bisection leaf-spine, its routes, the communicator over its 32 GPUs,
// and the DGX network parameters with destination-mod-k routing (no ECMP collisions). Built in
// place: the routing refers to the topology.
struct DgxA100x4 {
  Topology topo = build_cluster(fixtures::dgx_a100_x4());
  Routing routing = Routing::compute(topo, 1);
  CommLayout layout = build_communicator(topo, routing, {});
  NetworkParams mod_k = [] {
    NetworkParams p = fixtures::dgx_network(32_MiB);
    p.path_selection = PathSelection::kDestModK;
    return p;
  }();
};

// Runs `messages` at both fidelities; returns (packet, flow) completion times per message, us.
std::pair<std::vector<double>, std::vector<double>> both_fidelities(
    const Topology& topo, const Routing& routing, const NetworkParams& params,
    const std::vector<Message>& messages) {
  const auto fct = [&](const std::vector<Time>& finish) {
    std::vector<double> out;
    for (std::size_t i = 0; i < finish.size(); ++i)
      out.push_back((finish[i] - messages[i].start).us());
    return out;
  };
  return {fct(finish_times<PacketNetwork>(topo, routing, params, messages)),
          fct(finish_times<FlowNetwork>(topo, routing, params, messages))};
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

TEST(FlowLevel, PermutationOnAFullBisectionFatTreeMatchesPacketLevelWithin5Percent) {
  // 16 hosts on a k = 4 fat-tree, ECMP, every host sends to host + 5: the flows that share an
  // uplink by hash share it in both models.
  const Topology topo = build_cluster(
      {.servers = 0,
       .hosts = 16,
       .server = {},
       .fabric = {.shape = FatTreeSpec{.k = 4}, .link_rate = 100_Gbps, .switch_latency = 300_ns}});
  const Routing routing = Routing::compute(topo, 1);
  NetworkParams p;
  p.switch_latency = 300_ns;
  p.buffer.buffer = 1_GiB;  // lossless by size: nothing is dropped, nothing paused
  p.nic.format = {.mtu = 4096_B, .header = 82_B};
  for (Bytes size : {1_MiB, 4_MiB, 16_MiB}) {
    Simulation rng_only(1);
    const auto msgs = generate_messages(
        {.pattern = TrafficPattern::kPermutation, .message_size = size, .shift = 5}, 16,
        rng_only.rng());
    const auto [packet, flow] = both_fidelities(topo, routing, p, msgs);
    EXPECT_NEAR(mean(flow) / mean(packet), 1.0, 0.05) << to_string(size);
    EXPECT_NEAR(*std::max_element(flow.begin(), flow.end()) /
                    *std::max_element(packet.begin(), packet.end()),
                1.0, 0.05)
        << to_string(size);
  }
}

TEST(FlowLevel, RingAllReduceOn4DgxA100MatchesPacketLevelWithin5Percent) {
  // 4 x DGX A100, full-bisection leaf-spine with destination-mod-k routing (no ECMP
  // collisions), ring / Simple on two channels: NVLink, PCIe, NICs and switches together.
  // 32 MiB moves 512 KiB slices; 4 MiB 64 KiB ones. (With 16 channels many small in-server
  // transfers overlap and the fluid model, which finishes them all together, runs up to ~10 %
  // slow: docs/fidelity.md.)
  const DgxA100x4 dgx;
  const Topology& topo = dgx.topo;
  const Routing& routing = dgx.routing;
  const NetworkParams& p = dgx.mod_k;
  const CommLayout& layout = dgx.layout;
  const auto time = [&](auto& net, Simulation& sim, std::uint64_t bytes) {
    NcclConfig cfg;
    cfg.max_channels = 2;
    CollectiveEngine engine(sim, net, gpu_preset("a100"), cfg);
    const auto comm = engine.add_communicator(layout);
    const auto id = engine.launch(
        comm,
        {.op = CollOp::kAllReduce, .bytes = bytes, .algo = Algo::kRing, .proto = Proto::kSimple},
        Time::zero());
    sim.run();
    EXPECT_TRUE(engine.result(id).done);
    return engine.result(id).mean_us();
  };
  for (std::uint64_t bytes : {4 << 20, 32 << 20}) {
    Simulation a(1), b(1);
    PacketNetwork packet(a, topo, routing, p);
    FlowNetwork flow(b, topo, routing, p);
    const double tp = time(packet, a, bytes), tf = time(flow, b, bytes);
    EXPECT_NEAR(tf / tp, 1.0, 0.05) << bytes << " B: packet " << tp << " us, flow " << tf;
  }
}

TEST(FlowLevel, StreamedCollectivesMatchPrimitiveExecutionWithin5Percent) {
  // The same collectives on the same flow-level fabric, run primitive by primitive and as one
  // pipeline per channel (per sender for AllToAll): 4 x DGX A100 with destination-mod-k routing,
  // NCCL's 16 channels, sizes where streaming is the default (>= 64 MiB).
  const DgxA100x4 dgx;
  const Topology& topo = dgx.topo;
  const Routing& routing = dgx.routing;
  const NetworkParams& p = dgx.mod_k;
  const CommLayout& layout = dgx.layout;
  struct Case {
    CollOp op;
    std::optional<Algo> algo;
    std::uint64_t bytes;
  };
  const Case cases[] = {{CollOp::kAllReduce, Algo::kRing, 256 << 20},
                        {CollOp::kAllReduce, Algo::kTree, 256 << 20},
                        {CollOp::kAllGather, std::nullopt, 256 << 20},
                        {CollOp::kReduceScatter, std::nullopt, 256 << 20},
                        {CollOp::kBroadcast, std::nullopt, 1 << 30},
                        {CollOp::kAllToAll, std::nullopt, 64 << 20}};
  for (const Case& c : cases) {
    double us[2];
    std::size_t messages[2];
    for (int streamed = 0; streamed < 2; ++streamed) {
      Simulation sim(1);
      FlowNetwork net(sim, topo, routing, p);
      CollectiveEngine engine(
          sim, net, gpu_preset("a100"), {},
          {.granularity = streamed != 0 ? Granularity::kStreams : Granularity::kSlices});
      const auto comm = engine.add_communicator(layout);
      const auto id = engine.launch(
          comm, {.op = c.op, .bytes = c.bytes, .algo = c.algo, .proto = Proto::kSimple},
          Time::zero());
      sim.run();
      ASSERT_TRUE(engine.result(id).done);
      EXPECT_EQ(engine.result(id).streamed, streamed != 0);
      us[streamed] = engine.result(id).mean_us();
      messages[streamed] = net.messages().size();
    }
    const std::string what = fmt::format("{} {} B", to_string(c.op), c.bytes);
    EXPECT_NEAR(us[1] / us[0], 1.0, 0.05)
        << what << ": slices " << us[0] << " us, streams " << us[1];
    EXPECT_LT(messages[1] * 10, messages[0]) << what;  // the point: far fewer flows
  }
}

TEST(FlowLevel, AutoGranularityStreamsOnlyLargeCollectives) {
  const DgxA100x4 dgx;
  const Topology& topo = dgx.topo;
  const Routing& routing = dgx.routing;
  const CommLayout& layout = dgx.layout;
  const auto streamed = [&](std::uint64_t bytes, std::uint64_t above) {
    Simulation sim(1);
    FlowNetwork net(sim, topo, routing, fixtures::dgx_network(32_MiB));
    CollectiveEngine engine(sim, net, gpu_preset("a100"), {},
                            {.granularity = Granularity::kAuto, .stream_above = above});
    const auto id = engine.launch(engine.add_communicator(layout),
                                  {.op = CollOp::kAllReduce, .bytes = bytes}, Time::zero());
    sim.run();
    return engine.result(id).streamed;
  };
  EXPECT_FALSE(streamed(1 << 20, 50'000));
  EXPECT_TRUE(streamed(1 << 30, 50'000));
  EXPECT_FALSE(streamed(1 << 30, UINT64_MAX));
  // The packet level has no pipelines: always primitive by primitive.
  Simulation sim(1);
  PacketNetwork packet(sim, topo, routing, fixtures::dgx_network(32_MiB));
  CollectiveEngine engine(sim, packet, gpu_preset("a100"), {},
                          {.granularity = Granularity::kStreams});
  const auto id = engine.launch(engine.add_communicator(layout),
                                {.op = CollOp::kAllReduce, .bytes = 1 << 16}, Time::zero());
  sim.run();
  EXPECT_FALSE(engine.result(id).streamed);
}

// One Fabric interface: the flow level names its counters and bottleneck ports as the packet
// level does, and on an incast (tests/data/golden.toml: 4 hosts to 1 at 100 Gb/s, PFC on,
// ECN and DCQCN off so that both levels drain it at line rate) the bytes agree: data
// directions exactly (full packets), so reports, diagnose and the bottleneck summary read
// either level the same way.
TEST(FlowLevel, CountsUnderThePacketLevelsNames) {
  const auto load = [](const std::string& fidelity) {
    return load_scenario(std::string(FABRICSIM_SOURCE_DIR) + "/tests/data/golden.toml",
                         {.overrides = {"fidelity=\"" + fidelity + "\"", "switch.ecn=false",
                                        "nic.dcqcn.enabled=false", "simulation.timeseries=[]"}});
  };
  const Scenario ps = load("packet"), fs = load("flow");
  const BuiltCluster pc(ps), fc(fs);
  const RunResult packet = run_scenario(ps, pc), flow = run_scenario(fs, fc);
  const std::map<std::string, std::uint64_t> at_packet(packet.counters.begin(),
                                                       packet.counters.end());
  ASSERT_FALSE(flow.counters.empty());
  std::size_t compared = 0;
  for (const auto& [name, value] : flow.counters) {
    ASSERT_TRUE(at_packet.contains(name)) << name << " is a flow-level name only";
    // Data directions (the packet level also counts ACK bytes going back, the flow level not).
    if (value > 0) {
      EXPECT_EQ(value, at_packet.at(name)) << name;
      ++compared;
    }
  }
  EXPECT_GE(compared, 6u);  // four senders' NIC ports, the receiver's switch port, its NIC
  ASSERT_FALSE(flow.bottlenecks.empty());
  for (const auto& l : flow.bottlenecks)
    EXPECT_TRUE(at_packet.contains(l.port + ".tx_bytes")) << l.port;
  // The busiest link is the same, at nearly the same utilisation.
  EXPECT_EQ(flow.bottlenecks.front().port, packet.bottlenecks.front().port);
  EXPECT_NEAR(flow.bottlenecks.front().utilization, packet.bottlenecks.front().utilization, 0.05);
}
