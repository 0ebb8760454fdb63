// SHARP aggregation nodes (switch.sharp): one fabric endpoint per switch, behind an internal
// port, addressed at both fidelity levels; host traffic routed as without them.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "experiments/run.hpp"
#include "tests/support/collective_run.hpp"

using namespace fabricsim;

namespace {

// 4 x DGX H100, 8 rails of 400G, rail-optimized on 2 leaves (rails 0-3 on leaf0, 4-7 on
// leaf1) under 2 spines.
std::string sharp_cluster(bool sharp) {
  return fmt::format(R"(
[server]
preset = "dgx-h100"
count = 4
[fabric]
kind = "leaf-spine"
technology = "infiniband"
link_rate = "400Gbps"
hosts_per_leaf = 16
spines = 2
rail_optimized = true
[switch]
sharp = {}
)",
                     sharp);
}

std::uint64_t counter(Simulation& sim, std::string_view name) {
  for (const auto& c : sim.probes().counters())
    if (c.name == name) return c.value;
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

}  // namespace

TEST(Sharp, EverySwitchGetsAnAggregationNodeAfterTheHosts) {
  const Scenario s = load_scenario_text(sharp_cluster(true), "t.toml");
  const BuiltCluster c(s);
  const Topology& t = c.topology;
  ASSERT_EQ(t.endpoints().size(), 32u);  // the hosts' NICs, unchanged
  ASSERT_EQ(t.aggregators().size(), 4u);
  EXPECT_EQ(t.fabric_endpoint_count(), 36u);
  EXPECT_EQ(c.routing.endpoint_count(), 36u);
  const auto& g = t.graph();
  // In switch order; each behind one internal port of its switch whose rate is the switch's
  // ports together: a leaf has 16 hosts and 16 uplinks of 400G (12.8 Tb/s), a spine 16 downlinks
  // (6.4 Tb/s).
  const char* names[] = {"leaf0.sharp", "leaf1.sharp", "spine0.sharp", "spine1.sharp"};
  const double tbps[] = {12.8, 12.8, 6.4, 6.4};
  for (std::size_t a = 0; a < 4; ++a) {
    const Vertex v = t.fabric_endpoint(32 + a);
    EXPECT_EQ(g[v].kind, NodeKind::kAggregator);
    EXPECT_EQ(g[v].name, names[a]);
    EXPECT_DOUBLE_EQ(g[c.routing.endpoint_link(32 + a)].rate.gbps(), tbps[a] * 1000);
  }
  // Refused where it does not apply.
  EXPECT_THROW(load_scenario_text(sharp_cluster(true), "t.toml",
                                  {.overrides = {"fabric.technology=\"ethernet\""}}),
               ConfigError);
}

TEST(Sharp, AMessageReachesAndLeavesAnAggregationNodeAtBothLevels) {
  // The up and down legs of a reduction tree over two leaves: NIC 0 (leaf0) -> leaf0's node
  // (id 32) -> spine0's node (34) -> leaf1's node (33) -> NIC 4 (server 0's rail 4, on leaf1),
  // 1 MiB each, one after the other. Each is delivered whole; spine0 forwards the two
  // spine-side legs (into its node, then down to leaf1), spine1 nothing; the host link of NIC
  // 4 carries the last leg only.
  for (const char* fidelity : {"packet", "flow"}) {
    const Scenario s = load_scenario_text(
        sharp_cluster(true), "t.toml", {.overrides = {fmt::format("fidelity=\"{}\"", fidelity)}});
    const BuiltCluster c(s);
    Simulation sim(s.seed);
    const auto fabric = make_fabric(sim, s, c);
    const Bytes size(1 << 20);
    const std::pair<std::uint32_t, std::uint32_t> legs[] = {{0, 32}, {32, 34}, {34, 33}, {33, 4}};
    Time at = Time::zero();
    for (const auto& [src, dst] : legs) {
      fabric->messages().push_back({.src = src, .dst = dst, .size = size, .start = at});
      at += Time::from_ps(100'000'000);  // 100 us apart: each leg alone on its path
    }
    fabric->start_messages();
    sim.run_until(Time::from_ps(1'000'000'000));
    ASSERT_EQ(fabric->messages().size(), 4u) << fidelity;
    for (const Message& m : fabric->messages()) {
      EXPECT_TRUE(m.complete()) << fidelity << " " << m.src << " -> " << m.dst;
      EXPECT_EQ(m.received, size) << fidelity;
      // 1 MiB at 400G is 21.0 us, 21.9 with the packets' headers; a few hundred ns of hops.
      EXPECT_LT(m.finish - m.start, Time::from_ps(23'000'000)) << fidelity;
      EXPECT_GT(m.finish - m.start, Time::from_ps(21'000'000)) << fidelity;
    }
    std::uint64_t spine0 = 0, spine1 = 0;
    for (const auto& p : sim.probes().counters()) {
      if (p.name.starts_with("spine0.port") && p.name.ends_with(".tx_bytes")) spine0 += p.value;
      if (p.name.starts_with("spine1.port") && p.name.ends_with(".tx_bytes")) spine1 += p.value;
    }
    EXPECT_GE(spine0, 2 * static_cast<std::uint64_t>(size.count())) << fidelity;
    EXPECT_LT(spine0, 2 * static_cast<std::uint64_t>(size.count()) * 103 / 100) << fidelity;
    EXPECT_EQ(spine1, 0u) << fidelity;
    EXPECT_EQ(counter(sim, "server0.mlx5_4.rx_payload_bytes"),
              static_cast<std::uint64_t>(size.count()))
        << fidelity;
  }
}

TEST(Sharp, HostTrafficIsRoutedAsWithoutAggregationNodes) {
  // The aggregation nodes take ports and endpoint ids after the hosts and d-mod-k ranks of
  // their own: an AllReduce between the servers runs exactly as on the same fabric without
  // SHARP (nothing addresses the nodes yet), at both levels and with either routing.
  for (const char* fidelity : {"packet", "flow"})
    for (const char* routing : {"ecmp", "dmodk"}) {
      const std::vector<std::string> o = {fmt::format("fidelity=\"{}\"", fidelity),
                                          fmt::format("fabric.routing=\"{}\"", routing)};
      const NcclTestsRow with = fixtures::nccl_tests_row(
          load_scenario_text(sharp_cluster(true), "t.toml", {.overrides = o}), 64 << 20);
      const NcclTestsRow without = fixtures::nccl_tests_row(
          load_scenario_text(sharp_cluster(false), "t.toml", {.overrides = o}), 64 << 20);
      EXPECT_GT(with.time_us[0], 0) << fidelity << " " << routing;
      EXPECT_EQ(with.time_us[0], without.time_us[0]) << fidelity << " " << routing;
    }
}

TEST(Sharp, AnAggregationNodeFeedsAndDrainsEveryPortAtOnce) {
  // 2 x DGX A100 on one 200G InfiniBand switch (16 NICs; its node is endpoint 16, behind an
  // internal port of 16 x 200G). 4 MiB from every NIC into the node, then 4 MiB from the node
  // to every NIC: each NIC's link is the only bottleneck, so each leg takes one NIC's time,
  // 4 MiB at 200G = 168 us (+ headers, ~4 %), not 16 of them one after the other.
  const std::string toml = R"(
[server]
preset = "dgx-a100"
count = 2
[fabric]
kind = "star"
technology = "infiniband"
link_rate = "200Gbps"
[switch]
sharp = true
)";
  for (const char* fidelity : {"packet", "flow"}) {
    const Scenario s = load_scenario_text(
        toml, "t.toml", {.overrides = {fmt::format("fidelity=\"{}\"", fidelity)}});
    const BuiltCluster c(s);
    ASSERT_EQ(c.topology.fabric_endpoint_count(), 17u);
    Simulation sim(s.seed);
    const auto fabric = make_fabric(sim, s, c);
    const Bytes size(4 << 20);
    const Time second_leg = Time::from_ps(1'000'000'000);  // 1 ms: after the first
    for (std::uint32_t e = 0; e < 16; ++e) {
      fabric->messages().push_back({.src = e, .dst = 16, .size = size, .start = Time::zero()});
      fabric->messages().push_back({.src = 16, .dst = e, .size = size, .start = second_leg});
    }
    fabric->start_messages();
    sim.run_until(Time::from_ps(3'000'000'000));
    for (const Message& m : fabric->messages()) {
      ASSERT_TRUE(m.complete()) << fidelity << " " << m.src << " -> " << m.dst;
      EXPECT_GT(m.finish - m.start, Time::from_ps(167'000'000)) << fidelity;
      EXPECT_LT(m.finish - m.start, Time::from_ps(185'000'000))
          << fidelity << " " << m.src << " -> " << m.dst;
    }
  }
}
