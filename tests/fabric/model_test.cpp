#include <gtest/gtest.h>

#include "fabric/packet_network.hpp"
#include "models/workload/traffic.hpp"

using namespace fabricsim;
using namespace fabricsim::literals;

namespace {

// A star of `hosts` hosts at 100 Gb/s whose cables take 1 us (200 m at 5 ns/m), 300 ns switch.
struct Star {
  Topology topo;
  Routing routing;
  Simulation sim;
  PacketNetwork net;
  Star(int hosts, Bytes buffer, FabricShape shape = StarSpec{})
      : topo(build_cluster({.servers = 0,
                            .hosts = hosts,
                            .server = {},
                            .fabric = {.shape = shape,
                                       .link_rate = 100_Gbps,
                                       .switch_latency = 300_ns,
                                       .host_cable_m = 200,
                                       .fabric_cable_m = 200}})),
        routing(Routing::compute(topo, 1)),
        net(sim, topo, routing, params(buffer)) {}
  static NetworkParams params(Bytes buffer) {
    NetworkParams p;
    p.switch_latency = 300_ns;
    p.buffer.buffer = buffer;
    p.buffer.reserved = 4_KiB;
    p.nic.format = {.mtu = 4096_B, .header = 82_B};
    return p;
  }
};

}  // namespace

TEST(StarModel, OneMessageOnAnIdlePathTakesTheHandComputedTime) {
  // 1 MiB in 4 KiB packets = 256 packets of 4178 wire bytes; 4178 B at 100 Gb/s = 334.24 ns.
  // Store-and-forward over two hops: the last packet leaves the host at 256 * 334.24 ns, then
  // crosses the cable + switch latency (1.3 us), is serialized again (334.24 ns) and crosses
  // the second cable (1 us): 85565.44 + 1300 + 334.24 + 1000 ns = 88199.68 ns.
  Star star(2, 1_MiB);
  auto& sim = star.sim;
  auto& fabric = star.net;
  fabric.messages().push_back(Message{.src = 0, .dst = 1, .size = 1_MiB, .start = Time::zero()});
  fabric.start_messages();
  sim.run();
  const Message& m = fabric.messages()[0];
  ASSERT_TRUE(m.complete());
  EXPECT_EQ(m.finish.ps(), 88'199'680);
  EXPECT_EQ(fabric.packet_pool().in_use(), 0u);
}

TEST(StarModel, IncastWithLargeBuffersSharesTheBottleneckAtLineRate) {
  // 4 senders x 1 MiB to one receiver through one 100 Gb/s port, no drops. The first packet
  // reaches the receiver's switch port at 334.24 ns (serialization) + 1.3 us (cable + switch);
  // from then on that port is never idle (4 senders feed it at 4x its rate) and sends all
  // 1024 packets back to back: 1634.24 + 1024 * 334.24 = 343896 ns, plus the 1 us cable:
  // the last message completes at 344896 ns. Goodput 4 MiB / 344.896 us = 97.29 Gb/s, i.e. line
  // rate x 4096/4178 (98.04 Gb/s) less the one-time pipeline fill.
  Star star(5, 64_MiB);
  auto& sim = star.sim;
  auto& fabric = star.net;
  fabric.messages().assign(generate_messages(
      TrafficSpec{.pattern = TrafficPattern::kIncast, .message_size = 1_MiB}, 5, sim.rng()));
  fabric.start_messages();
  sim.run();
  Time last = Time::zero();
  for (const Message& m : fabric.messages()) {
    ASSERT_TRUE(m.complete());
    last = std::max(last, m.finish);
  }
  EXPECT_EQ(last.ps(), 344'896'000);
  EXPECT_NEAR(rate_gbps(4 * 1_MiB, last), 97.2886, 1e-3);
}

TEST(StarModel, SmallBuffersDropAndGoBackNDeliversEverything) {
  Star star(9, 256_KiB);
  auto& sim = star.sim;
  auto& fabric = star.net;
  fabric.messages().assign(generate_messages(
      TrafficSpec{.pattern = TrafficPattern::kIncast, .message_size = 1_MiB}, 9, sim.rng()));
  fabric.start_messages();
  sim.run();
  std::uint64_t drops = 0, delivered = 0, resent = 0;
  for (const auto& c : sim.probes().counters()) {
    if (c.name == "switch0.drop_packets") drops = c.value;
    if (c.name == "host0.rx_payload_bytes") delivered = c.value;
    if (c.name.ends_with(".retransmitted_packets")) resent += c.value;
  }
  EXPECT_GT(drops, 0u);
  EXPECT_GE(resent, drops);  // go-back-N resends at least every lost packet
  // Every payload byte arrives exactly once in order.
  EXPECT_EQ(delivered, 8u * (1u << 20));
  for (const Message& m : fabric.messages()) EXPECT_TRUE(m.complete());
  EXPECT_EQ(fabric.packet_pool().in_use(), 0u);
}

TEST(LeafSpineModel, PermutationAcrossLeavesCrossesTheSpinesAndDelivers) {
  // 4 leaves x 4 hosts, 4 spines; host i sends to host i+1: 4 of the 16 flows cross a leaf
  // boundary and must use spine links; everything arrives (buffers are large).
  Star net(16, 16_MiB, LeafSpineSpec{.hosts_per_leaf = 4});
  net.net.messages().assign(generate_messages(
      {.pattern = TrafficPattern::kPermutation, .message_size = 256_KiB}, 16, net.sim.rng()));
  net.net.start_messages();
  net.sim.run();
  for (const Message& m : net.net.messages()) EXPECT_TRUE(m.complete());
  std::uint64_t spine_bytes = 0;
  for (const auto& c : net.sim.probes().counters())
    if (c.name.starts_with("spine") && c.name.ends_with(".tx_bytes")) spine_bytes += c.value;
  // 4 crossing flows x 64 packets x 4178 B, each crossing exactly one spine, plus one ACK
  // (86 B) per flow crossing back: ACKs are coalesced every 256 packets and at a message's
  // last, so a 64-packet message gets one.
  EXPECT_EQ(spine_bytes, 4u * (64 * 4178 + 86));
}

TEST(Traffic, PatternsPickTheDocumentedDestinations) {
  RngStreams rng(1);
  const auto perm =
      generate_messages({.pattern = TrafficPattern::kPermutation, .message_size = 1_KiB}, 4, rng);
  ASSERT_EQ(perm.size(), 4u);
  for (const auto& m : perm) EXPECT_EQ(m.dst, (m.src + 1) % 4);
  const auto a2a = generate_messages(
      {.pattern = TrafficPattern::kAllToAll, .message_size = 1_KiB, .messages_per_destination = 2},
      3, rng);
  EXPECT_EQ(a2a.size(), 3u * 2 * 2);
  const auto jittered = generate_messages(
      {.pattern = TrafficPattern::kIncast, .message_size = 1_KiB, .start_jitter = 1_us}, 50, rng);
  bool any_nonzero = false;
  for (const auto& m : jittered) {
    EXPECT_LE(m.start, 1_us);
    any_nonzero |= m.start > Time::zero();
  }
  EXPECT_TRUE(any_nonzero);
}

namespace {
struct Collect final : PacketSink {
  std::vector<std::uint8_t> priorities;
  Pool<Packet>* pool = nullptr;
  void receive(Packet* p, PortIndex) override {
    priorities.push_back(p->priority);
    pool->release(p);
  }
};
}  // namespace

TEST(PortScheduling, DwrrSharesTheLinkByWeightAndStrictPrioritiesGoFirst) {
  // Priorities 1 and 2 share by DWRR with weights 1 : 3; priority 6 is strict. 400 packets of
  // 4178 B wait in each of 1 and 2 and 10 in 6. The 10 strict packets leave first; among the
  // next 200, priority 2 gets 3/4 (each turn it earns 3 x 9216 B = 6 packets, priority 1 earns
  // 2 packets with its carried deficit), within a packet of 150 : 50.
  Simulation sim;
  Pool<Packet> pool;
  PortConfig cfg{.rate = 100_Gbps, .latency = 1_us};
  cfg.strict = 1 << 6;
  cfg.dwrr_weight[2] = 3;
  EgressPort port(sim, pool, "p", cfg);
  Collect sink;
  sink.pool = &pool;
  port.connect(&sink, 0);
  // Keep the port busy while filling, so the queues are full when scheduling starts.
  Packet* first = pool.acquire();
  first->wire_bytes = 4178;
  first->priority = 0;
  port.enqueue(first);
  for (int i = 0; i < 400; ++i)
    for (const std::uint8_t prio : {1, 2}) {
      Packet* p = pool.acquire();
      p->wire_bytes = 4178;
      p->priority = prio;
      port.enqueue(p);
    }
  for (int i = 0; i < 10; ++i) {
    Packet* p = pool.acquire();
    p->wire_bytes = 4178;
    p->priority = 6;
    port.enqueue(p);
  }
  sim.run();
  ASSERT_EQ(sink.priorities.size(), 811u);
  for (int i = 1; i <= 10; ++i) EXPECT_EQ(sink.priorities[i], 6) << i;
  const auto twos = std::count(sink.priorities.begin() + 11, sink.priorities.begin() + 211, 2);
  EXPECT_NEAR(twos, 150, 2);
}
