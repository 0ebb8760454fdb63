// Packet-level fabric: the expected values are derived in the comments.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <numeric>

#include "experiments/run.hpp"
#include "fabric/monitor.hpp"
#include "report/results.hpp"
#include "tests/support/collective_run.hpp"

using namespace fabricsim;
using namespace fabricsim::literals;

namespace {

// A scenario run at model level, so tests can look at every message and probe.
struct FabricRun {
  Scenario scenario;
  BuiltCluster cluster;
  Simulation sim;
  PacketNetwork net;
  std::unique_ptr<GaugeSampler> sampler;
  std::unique_ptr<FabricMonitor> monitor;
  StopReason reason{};

  explicit FabricRun(const std::string& toml, std::vector<std::string> overrides = {})
      : scenario(load_scenario_text(toml, "test.toml", {.overrides = std::move(overrides)})),
        cluster(scenario),
        sim(scenario.seed),
        net(sim, cluster.topology, cluster.routing, scenario.network) {
    net.messages().assign(generate_messages(
        scenario.traffic, static_cast<std::uint32_t>(net.nic_count()), sim.rng()));
    net.start_messages();
    sim.probes().record_spans(true);  // changes nothing the run does (PfcPauseSpans...)
    sampler = std::make_unique<GaugeSampler>(sim, scenario.simulation.timeseries,
                                             scenario.simulation.sample_interval);
    monitor =
        std::make_unique<FabricMonitor>(sim, net,
                                        MonitorConfig{scenario.simulation.deadlock_check_interval,
                                                      scenario.simulation.no_progress_timeout});
    reason = sim.run_until(scenario.simulation.stop_time);
  }
  // When the last message completed.
  Time last_finish() const {
    Time last = Time::zero();
    for (const Message& m : const_cast<PacketNetwork&>(net).messages())
      last = std::max(last, m.finish);
    return last;
  }
  std::uint64_t counter(std::string_view name) const {
    for (const auto& c : const_cast<Simulation&>(sim).probes().counters())
      if (c.name == name) return c.value;
    ADD_FAILURE() << "no counter " << name;
    return 0;
  }
  std::uint64_t sum(std::string_view prefix, std::string_view suffix) const {
    std::uint64_t total = 0;
    for (const auto& c : const_cast<Simulation&>(sim).probes().counters())
      if (c.name.starts_with(prefix) && c.name.ends_with(suffix)) total += c.value;
    return total;
  }
  // Time average of a sampled gauge over samples in [from, to).
  double mean_series(const std::string& name, Time from, Time to = Time::max()) const {
    const auto& names = sampler->names();
    const auto it = std::find(names.begin(), names.end(), name);
    EXPECT_NE(it, names.end()) << name;
    const auto& v = sampler->values()[static_cast<std::size_t>(it - names.begin())];
    double sum = 0;
    int n = 0;
    for (std::size_t i = 0; i < v.size(); ++i)
      if (sampler->times()[i] >= from && sampler->times()[i] < to) {
        sum += v[i];
        ++n;
      }
    return n > 0 ? sum / n : 0;
  }
};

// Ring of 5 switches, 2 hosts each; every host sends to the host 4 positions on (2 switches
// clockwise, a unique shortest path). Each ring link carries 4 flows of 100 Gb/s.
constexpr const char* kDeadlockRing = R"(
[fabric]
kind = "ring"
ring_switches = 5
hosts = 10
link_rate = "100Gbps"
[switch]
buffer = "512KiB"
pfc = true
[traffic]
pattern = "permutation"
shift = 4
message_size = "8MiB"
)";

std::string star(int hosts, const std::string& extra = "") {
  return fmt::format(R"(
[fabric]
hosts = {}
link_rate = "100Gbps"
host_cable_length = "3m"
switch_latency = "300ns"
[switch]
buffer = "32MiB"
[traffic]
message_size = "1MiB"
{})",
                     hosts, extra);
}

}  // namespace

TEST(PacketFabric, OneRoceFlowReachesLineRateTimesPayloadShareAndTheHandComputedTime) {
  for (const int mtu : {1024, 4096}) {
    // 16 MiB over one idle 100 Gb/s path (host1 -> switch -> host0; the ACKs use the other
    // direction of each cable), 82 B of per-packet overhead.
    //   packets N = 16 MiB / mtu; wire w = mtu + 82 B; tx(w) = w * 8 / 100e9 s
    //   the last packet leaves host1 at N * tx(w), crosses the 3 m cable (15 ns) and the switch
    //   (300 ns), is sent again (tx(w), the switch port is idle by then) and crosses the second
    //   cable (15 ns): finish = (N + 1) * tx(w) + 330 ns.
    //   goodput -> 100 Gb/s * mtu / (mtu + 82) as N grows; here within 0.1% of it.
    FabricRun run(star(2), {fmt::format("nic.mtu=\"{}B\"", mtu), "traffic.message_size=\"16MiB\""});
    const Message& m = run.net.messages()[0];
    ASSERT_TRUE(m.complete());
    const std::int64_t n = (16 << 20) / mtu;
    const Time tx = tx_time(Bytes(mtu + 82), 100_Gbps);
    EXPECT_EQ(m.finish, tx * (n + 1) + 330_ns) << "mtu " << mtu;
    const double ideal = 100.0 * mtu / (mtu + 82);
    EXPECT_NEAR(rate_gbps(16_MiB, m.finish - m.start) / ideal, 1.0, 0.005) << "mtu " << mtu;
  }
}

TEST(PacketFabric, IncastWithPfcIsLosslessPausesTheSendersAndSharesFairly) {
  for (const int senders : {2, 8}) {
    // N senders x 4 MiB into one port, 1 MiB of switch buffer: the senders' ingress queues reach
    // the dynamic threshold, the switch pauses them, and nothing is dropped.
    FabricRun run(star(senders + 1, "messages = 1"),
                  {"switch.buffer=\"1MiB\"", "switch.pfc=true", "traffic.message_size=\"4MiB\""});
    EXPECT_EQ(run.counter("switch0.drop_packets"), 0u) << senders;
    EXPECT_EQ(run.counter("switch0.port0.tx_prio3_pause"), 0u);  // the receiver is not paused
    EXPECT_EQ(run.counter("host0.nic.rx_prio3_pause"), 0u);
    std::vector<double> goodput;
    for (int h = 1; h <= senders; ++h) {
      EXPECT_GT(run.counter(fmt::format("switch0.port{}.tx_prio3_pause", h)), 0u) << h;
      EXPECT_GT(run.counter(fmt::format("host{}.nic.rx_prio3_pause", h)), 0u) << h;
    }
    for (const Message& m : run.net.messages()) {
      ASSERT_TRUE(m.complete());
      goodput.push_back(rate_gbps(m.size, m.finish - m.start));
    }
    // Fair share: every sender gets 1/N of the bottleneck; its completion-time goodput is
    // within 2% of the others'.
    const auto [lo, hi] = std::minmax_element(goodput.begin(), goodput.end());
    EXPECT_LT(*hi / *lo, 1.02) << senders << " senders: " << *lo << " .. " << *hi;
    // And the bottleneck ran at line rate: total bytes over the last completion.
    EXPECT_GT(rate_gbps(Bytes(4LL << 20) * senders, run.last_finish()), 0.95 * 100 * 4096 / 4178);
  }
}

TEST(PacketFabric, WithoutPfcASmallBufferDropsAndGoBackNDeliversEverything) {
  // 4:1 incast, 256 KiB of buffer, PFC off, ACK timeout 4.096 us x 2^6 = 262 us.
  FabricRun run(star(5),
                {"switch.buffer=\"256KiB\"", "nic.ib_timeout=6", "traffic.message_size=\"2MiB\""});
  EXPECT_GT(run.counter("switch0.drop_packets"), 0u);
  EXPECT_GT(run.sum("host", ".retransmitted_packets"), run.counter("switch0.drop_packets") / 2);
  EXPECT_EQ(run.counter("host0.rx_payload_bytes"), 4u * (2u << 20));  // each byte once, in order
  for (const Message& m : run.net.messages()) EXPECT_TRUE(m.complete());
  EXPECT_TRUE(run.net.errors().empty());
}

TEST(PacketFabric, ExhaustedRetriesEndTheTransferWithTheVerbsError) {
  // Same incast with ib_retry_cnt = 0: the first loss (a sequence-error NAK) is one retry too
  // many, and the QP completes in error as ibv_poll_cq status 12 would.
  FabricRun run(star(5), {"switch.buffer=\"256KiB\"", "nic.ib_timeout=6", "nic.ib_retry_cnt=0",
                          "traffic.message_size=\"2MiB\""});
  ASSERT_FALSE(run.net.errors().empty());
  EXPECT_NE(
      run.net.errors()[0].text.find("ibv_poll_cq error 12 (transport retry counter exceeded)"),
      std::string::npos)
      << run.net.errors()[0].text;
  EXPECT_TRUE(std::any_of(run.net.messages().begin(), run.net.messages().end(),
                          [](const Message& m) { return m.failed && !m.complete(); }));
}

TEST(PacketFabric, TwoDcqcnFlowsConvergeToTheFairShareWithTheQueueBetweenKminAndKmax) {
  // 2:1 incast of two 64 MiB flows with ECN (Kmin 40 KB, Kmax 160 KB, Pmax 0.2) and DCQCN with
  // the DCQCN paper's increase parameters (55 us timer, R_AI 40 Mb/s, R_HAI 200 Mb/s, F = 5);
  // PFC on as deployed, with a buffer large enough that it stays quiet. In the middle half of
  // the run (both flows active, start-up over) each QP's rate averages within 10% of the fair
  // 50 Gb/s and the bottleneck queue averages between Kmin/2 and Kmax: DCQCN holds it near Kmin.
  // Both reaction points: the firmware's, and the paper's with its own timing (alpha period
  // K = 55 us, at most one CNP per 50 us, byte counter B = 10 MB: the paper's values as
  // protocols.md 1.1 quotes them). The paper's reaction point cuts on every CNP, by
  // alpha/2 at once, so its queue sits lower: below Kmin on average rather than near it; the
  // check for it is that the queue stays under Kmax with the link still 90 % used.
  // (With the byte counter at the authors' ns-3 default of 150 KB the byte counter reaches
  // hyper increase within ~0.1 ms and the two flows settle at 41 / 56 Gb/s: not fair within
  // 10 %; docs/scenario.md says so at nic.dcqcn.rpg_byte_reset.)
  const std::vector<std::string> common{
      "switch.pfc=true",
      "switch.ecn=true",
      "switch.ecn_kmin=\"40KB\"",
      "switch.ecn_kmax=\"160KB\"",
      "nic.dcqcn.enabled=true",
      "nic.dcqcn.rpg_time_reset=\"55us\"",
      "nic.dcqcn.rpg_ai_rate=\"40Mbps\"",
      "nic.dcqcn.rpg_hai_rate=\"200Mbps\"",
      "nic.dcqcn.rpg_threshold=5",
      "traffic.message_size=\"64MiB\"",
      "simulation.sample_interval=\"10us\"",
      "simulation.timeseries=[\"*.qp*.rate_gbps\", \"switch0.port0.queue_bytes\"]"};
  for (const bool paper : {false, true}) {
    SCOPED_TRACE(paper ? "paper" : "firmware");
    auto set = common;
    if (paper)
      for (const char* k :
           {"nic.dcqcn.variant=\"paper\"", "nic.dcqcn.dce_tcp_rtt=\"55us\"",
            "nic.dcqcn.min_time_between_cnps=\"50us\"", "nic.dcqcn.rpg_byte_reset=\"10MB\""})
        set.emplace_back(k);
    FabricRun run(star(3, "messages = 1"), set);
    Time end = Time::zero();
    for (const Message& m : run.net.messages()) {
      ASSERT_TRUE(m.complete());
      end = std::max(end, m.finish);
    }
    const Time from = end / 4, to = end / 4 * 3;
    const double r1 = run.mean_series("host1.qp0.rate_gbps", from, to);
    const double r2 = run.mean_series("host2.qp1.rate_gbps", from, to);
    EXPECT_NEAR(r1, 50, 5) << r1 << " / " << r2;
    EXPECT_NEAR(r2, 50, 5) << r1 << " / " << r2;
    const double queue = run.mean_series("switch0.port0.queue_bytes", from, to);
    if (paper) {
      EXPECT_GT(r1 + r2, 90) << r1 << " / " << r2;
      EXPECT_LT(queue, 40'000) << queue;
    } else {
      EXPECT_GT(queue, 40'000 * 0.5) << queue;
    }
    EXPECT_LT(queue, 160'000) << queue;
    EXPECT_GT(run.sum("switch0.", ".ecn_marked_packets"), 0u);
  }
}

TEST(PacketFabric, WithoutDcqcnTheQueueSitsAtTheXoffThreshold) {
  // 8:1 incast, PFC with static XOFF 64 KB / XON 32 KB per ingress queue, no DCQCN. Each
  // ingress is drained at C/8 but filled at C when unpaused, so it climbs to XOFF, overshoots by
  // what arrives while the pause travels (at most 7/8 C x tau_off, tau_off = 84 B frame + 15 ns
  // + one 4178 B packet in progress + 15 ns + 300 ns = 0.67 us: 7.3 KB) and drains too slowly to
  // reach XON before the pause expires or is renewed. The bottleneck egress queue, the sum of
  // the eight, therefore averages between 8 x 64 KB and 8 x (64 + 7.3) KB.
  FabricRun run(star(9), {"switch.pfc=true", "switch.pfc_xoff=\"64KB\"", "switch.pfc_xon=\"32KB\"",
                          "traffic.message_size=\"4MiB\"", "simulation.sample_interval=\"1us\"",
                          "simulation.timeseries=[\"switch0.port0.queue_bytes\"]"});
  const Time end = run.last_finish();
  const double per_sender = run.mean_series("switch0.port0.queue_bytes", end / 4, end / 4 * 3) / 8;
  EXPECT_GE(per_sender, 64'000);
  EXPECT_LE(per_sender, 64'000 + 7'300);
  EXPECT_EQ(run.counter("switch0.drop_packets"), 0u);
}

// Leaf-spine, 4 hosts per leaf, 4 spines, lossless without DCQCN: an incast to host 0.
constexpr const char* kHopByHopIncast = R"(
[fabric]
kind = "leaf-spine"
hosts = 8
hosts_per_leaf = 4
link_rate = "100Gbps"
[switch]
buffer = "2MiB"
pfc = true
[traffic]
pattern = "incast"
message_size = "4MiB"
)";

TEST(PacketFabric, WithoutDcqcnPfcPausesPropagateUpstreamHopByHop) {
  // Leaf-spine, 4 hosts per leaf, 4 spines. Hosts 0-3 (leaf0) all send to host 4 (leaf1): the
  // bottleneck is leaf1's port to host 4. Leaf1 pauses the spines, the spines pause leaf0,
  // leaf0 pauses the hosts; nothing is dropped and the bottleneck stays busy.
  const std::string toml = kHopByHopIncast;
  // Incast targets host 0, so mirror: hosts 4-7 (leaf1) and hosts 1-3 send to host 0; the four
  // on leaf1 cross the spines.
  FabricRun run(toml);
  EXPECT_EQ(run.sum("", ".drop_packets"), 0u);
  EXPECT_GT(run.sum("leaf0.port", "_pause") - run.sum("leaf0.port", "rx_prio3_pause"), 0u);
  std::uint64_t spine_pauses = 0, leaf1_pauses = 0;
  for (int s = 0; s < 4; ++s)
    spine_pauses += run.sum(fmt::format("spine{}.port", s), "tx_prio3_pause");
  for (int p = 0; p < 8; ++p)
    leaf1_pauses += run.counter(fmt::format("leaf1.port{}.tx_prio3_pause", p));
  EXPECT_GT(spine_pauses, 0u);  // spines pause leaf1's uplinks: the pause went one hop up
  EXPECT_GT(leaf1_pauses, 0u);  // and leaf1 pauses its hosts: two hops up from the bottleneck
  EXPECT_GT(rate_gbps(Bytes(7LL * (4 << 20)), run.last_finish()), 0.9 * 100 * 4096 / 4178);
}

TEST(PacketFabric, TheTierSummaryShowsPausesSpreadingFromTheHotPortToTheFarLeafsHosts) {
  // The hop-by-hop incast above, summarised per layer of links. A pause frame a switch port
  // sends is received (and counted, with the time it paused) by the transmitter at the other
  // end of the cable, so per layer: "spine" (spine -> leaf0 links) receives what leaf0 sent
  // up its uplinks, "leaf uplink" (leaf1 -> spine) what the spines sent, and "NIC" what the
  // leaves sent down to their hosts. Pauses reach three layers: they spread from leaf0's one
  // hot port to leaf1's hosts, whose flows never touched it. Without PFC nothing pauses.
  const std::string toml = kHopByHopIncast;
  FabricRun run(toml);
  std::vector<std::pair<std::string, std::uint64_t>> counters;
  for (const auto& c : run.sim.probes().counters()) counters.emplace_back(c.name, c.value);
  const auto tiers = congestion_by_tier(run.net, run.last_finish(), counters);
  const auto tier = [&](std::string_view layer) {
    const auto it = std::find_if(tiers.begin(), tiers.end(),
                                 [&](const TierCongestion& t) { return t.layer == layer; });
    EXPECT_NE(it, tiers.end()) << layer;
    return it == tiers.end() ? TierCongestion{} : *it;
  };
  // A leaf's ports 0-3 go up to spines 0-3, ports 4-7 down to its hosts.
  std::uint64_t leaf0_up = 0, leaf_down = 0, spines = 0;
  for (int p = 0; p < 4; ++p)
    leaf0_up += run.counter(fmt::format("leaf0.port{}.tx_prio3_pause", p));
  for (int l = 0; l < 2; ++l)
    for (int p = 4; p < 8; ++p)
      leaf_down += run.counter(fmt::format("leaf{}.port{}.tx_prio3_pause", l, p));
  for (int s = 0; s < 4; ++s) spines += run.sum(fmt::format("spine{}.port", s), "tx_prio3_pause");
  EXPECT_EQ(tier("spine").pause_frames, leaf0_up);
  EXPECT_EQ(tier("leaf uplink").pause_frames, spines);
  EXPECT_EQ(tier("NIC").pause_frames, leaf_down);
  EXPECT_GT(tier("spine").paused_links, 0u);
  EXPECT_GT(tier("leaf uplink").paused_links, 0u);
  EXPECT_EQ(tier("NIC").paused_links, 7u);  // every sender: leaf0's 3 and leaf1's 4
  EXPECT_EQ(tier("NIC").links, 8u);
  EXPECT_EQ(tier("leaf downlink").paused_links, 0u);  // nothing downstream of the hot port
  const auto metric = [](const std::vector<Metric>& ms, std::string_view name) {
    for (const auto& m : ms)
      if (m.name == name) return m.value;
    ADD_FAILURE() << name;
    return -1.0;
  };
  const auto metrics = congestion_metrics(tiers);
  EXPECT_EQ(metric(metrics, "pfc_paused_tiers"), 3);
  const TierCongestion nic = tier("NIC");
  EXPECT_GT(nic.max_paused_share, 0);
  EXPECT_LE(nic.max_paused_share, 1);
  EXPECT_GE(nic.paused_us, nic.max_paused_share * run.last_finish().us());

  // The pause spans a trace draws: a port's spans add up to the time its counter says it stood
  // paused (the counter truncates each piece to whole nanoseconds), and a port that received
  // no pause frame has none.
  std::map<std::string, double> span_ns;
  for (const SpanRecord& sp : run.sim.probes().spans()) {
    ASSERT_NE(sp.end, Time::max()) << "every pause ended by the end of the run";
    ASSERT_GT(sp.end, sp.start);
    span_ns[run.sim.probes().span_name_of(sp.name)] +=
        static_cast<double>((sp.end - sp.start).ps()) / 1e3;
  }
  EXPECT_FALSE(span_ns.empty());
  for (const auto& c : run.sim.probes().counters()) {
    const std::string name(c.name);
    if (!name.ends_with(".rx_prio3_pause")) continue;
    const std::string port =
        name.substr(0, name.size() - std::string_view(".rx_prio3_pause").size());
    const std::uint64_t frames = c.value;
    const double counted = static_cast<double>(run.counter(port + ".rx_prio3_pause_duration_ns"));
    const double spans =
        span_ns.contains(port + ".prio3_paused") ? span_ns[port + ".prio3_paused"] : 0;
    EXPECT_EQ(frames == 0, spans == 0) << port;
    EXPECT_GE(spans, counted) << port;
    EXPECT_LE(spans, counted + static_cast<double>(frames) + 1) << port;
  }

  FabricRun lossy(toml, {"switch.pfc=false"});
  std::vector<std::pair<std::string, std::uint64_t>> lossy_counters;
  for (const auto& c : lossy.sim.probes().counters()) lossy_counters.emplace_back(c.name, c.value);
  EXPECT_TRUE(congestion_by_tier(lossy.net, lossy.last_finish(), lossy_counters).empty());
}

TEST(PacketFabric, CyclicRoutesOnALosslessRingDeadlockAndTheCycleIsReported) {
  // kDeadlockRing: every ring egress queue fills, pauses its upstream neighbour, and the pauses
  // chase each other round the ring: a cyclic buffer dependency that never drains.
  FabricRun run(kDeadlockRing,
                {"simulation.stop_time=\"50ms\"", "simulation.deadlock_check_interval=\"20us\""});
  ASSERT_TRUE(run.monitor->verdict().has_value());
  EXPECT_EQ(*run.monitor->verdict(), "deadlock");
  EXPECT_EQ(run.reason, StopReason::kStopped);
  EXPECT_NE(run.monitor->report().find("PFC deadlock: a cycle of paused queues, ring"),
            std::string::npos)
      << run.monitor->report();
  EXPECT_NE(run.monitor->report().find("messages with packets in it"), std::string::npos);
}

TEST(PacketFabric, APfcWatchdogBreaksTheRingDeadlockAndDataKeepsMoving) {
  // The deadlocking ring above, run for 20 ms with the detector off. Without a watchdog the
  // cycle freezes after a few hundred microseconds; with a 200 us dropping watchdog each stuck
  // queue is declared a pause storm and flushed, go-back-N (ACK timeout 4.096 us x 2^7) resends,
  // and data keeps being delivered (the cycle re-forms, so progress is slow but steady).
  const std::vector<std::string> set{"simulation.stop_time=\"20ms\"",
                                     "simulation.deadlock_check_interval=\"0s\"",
                                     "simulation.no_progress_timeout=\"0s\"", "nic.ib_timeout=7"};
  const auto delivered = [](const FabricRun& run) {
    Bytes total{0};
    for (const Message& m : const_cast<FabricRun&>(run).net.messages()) total += m.received;
    return total;
  };
  FabricRun stuck(kDeadlockRing, set);
  auto with_watchdog = set;
  with_watchdog.push_back("switch.pfc_watchdog=\"200us\"");
  FabricRun rescued(kDeadlockRing, with_watchdog);
  EXPECT_GT(rescued.sum("ring", "_storms"), 0u);
  EXPECT_GT(rescued.sum("ring", "pfc_watchdog_prio3_dropped"), 0u);
  EXPECT_GT(delivered(rescued), delivered(stuck) * 2) << delivered(stuck).count();
  EXPECT_EQ(stuck.sum("ring", "_storms"), 0u);
}

TEST(PacketFabric, APfcBandSmallerThanTheHopBdpLosesThroughputAsDerived) {
  // 2:1 incast of two 16 MiB flows through one switch; 200 m cables (1 us), 300 ns switch
  // latency; static PFC thresholds per ingress queue: XOFF at S, XON at S/2 (band S/2).
  //
  // Derivation. The two senders run in lockstep, so the egress serves each ingress queue at
  // D = C/2 while both hold packets (C = 100 Gb/s). Delays:
  //   tau_on  = XON frame (84 B) + 1 us back + one packet (4178 B) + 1 us + 300 ns forward
  //           = time from the XON decision until new data reaches the switch;
  //   tau_off = 84 B + 1 us + 1.3 us = time from XOFF until the last packet sent arrives.
  // One cycle, per ingress queue (levels in bytes):
  //   A. after XON at level S/2, nothing arrives for tau_on while it drains at D: it empties
  //      after (S/2)/D and the egress idles for I = max(0, tau_on - (S/2)/D);
  //   B. data arrives at C and leaves at C/2: the level climbs at C/2 from
  //      L0 = max(0, S/2 - D tau_on) to S (XOFF): t_B = (S - L0) / (C/2);
  //   C. for tau_off more it keeps climbing at C/2, to S + (C/2) tau_off;
  //   D. it drains at C/2 down to S/2 (XON): t_D = (S/2 + (C/2) tau_off) / (C/2).
  // Utilisation U = 1 - I / (tau_on + t_B + tau_off + t_D); goodput = U x C x 4096/4178.
  // The band is "smaller than the BDP" exactly when S/2 < D tau_on (about 16.5 KB here): above
  // it nothing is lost. The sweep includes the case study's 8 KB and 64 KB buffers.
  constexpr double C = 100e9, wire = 4178, eff = 4096.0 / 4178;
  constexpr double frame = 84 * 8 / C, packet = wire * 8 / C, cable = 1e-6, hop = 300e-9;
  const double tau_on = frame + cable + packet + cable + hop;
  const double tau_off = frame + cable + cable + hop;
  for (const int kb : {8, 16, 24, 32, 64}) {
    const double S = kb * 1000.0, D = C / 2;
    const double idle = std::max(0.0, tau_on - (S / 2) * 8 / D);
    const double l0 = std::max(0.0, S / 2 - D * tau_on / 8);
    const double t_b = (S - l0) * 8 / (C / 2), t_d = (S / 2 + (C / 2) * tau_off / 8) * 8 / (C / 2);
    const double expected = (1 - idle / (tau_on + t_b + tau_off + t_d)) * C * eff * 1e-9;
    FabricRun run(star(3), {"fabric.host_cable_length=\"200m\"", "switch.pfc=true",
                            fmt::format("switch.pfc_xoff=\"{}B\"", kb * 1000),
                            fmt::format("switch.pfc_xon=\"{}B\"", kb * 500),
                            "traffic.message_size=\"16MiB\""});
    const double goodput = rate_gbps(Bytes(32LL << 20), run.last_finish());
    EXPECT_NEAR(goodput / expected, 1.0, 0.03)
        << kb << " KB: simulated " << goodput << " Gb/s, derived " << expected;
    if (kb == 8) {
      EXPECT_LT(goodput, 0.85 * C * eff * 1e-9);
    }  // a real loss, not noise
    EXPECT_EQ(run.counter("switch0.drop_packets"), 0u);
  }
}

TEST(PacketFabric, InfiniBandCreditsMakeIncastLosslessWithoutPauseFrames) {
  // 8:1 incast on an InfiniBand switch with 16 KiB of receive buffer per port and VL: every
  // sender waits for credits instead of being paused, nothing is dropped, no PFC frame exists,
  // and the receiver's port runs at line rate: 8 x 2 MiB at 100 Gb/s x 4096/(4096+26).
  FabricRun run(star(9), {"fabric.technology=\"infiniband\"", "switch.vl_buffer=\"16KiB\"",
                          "traffic.message_size=\"2MiB\""});
  EXPECT_EQ(run.counter("switch0.drop_packets"), 0u);
  EXPECT_EQ(run.sum("", "_pause"), 0u);
  Time last = Time::zero();
  std::vector<double> goodput;
  for (const Message& m : run.net.messages()) {
    ASSERT_TRUE(m.complete());
    last = std::max(last, m.finish);
    goodput.push_back(rate_gbps(m.size, m.finish - m.start));
  }
  EXPECT_GT(rate_gbps(Bytes(8LL << 21), last), 0.97 * 100 * 4096 / 4122);
  const auto [lo, hi] = std::minmax_element(goodput.begin(), goodput.end());
  EXPECT_LT(*hi / *lo, 1.05);
  // No ingress ever held more than its credits: the switch buffer stays within 8 x 16 KiB.
  EXPECT_LE(run.net.network_switch(0).port(0).peak_queued(), Bytes(8 * 16 * 1024));
}

TEST(PacketFabric, OneTcpFlowIsNeverWindowLimitedAndTakesTheHandComputedTime) {
  // One 16 MiB TCP flow on an idle 100 Gb/s path. The RTT (a 4186 B segment out, a 90 B ACK
  // back, 2 x (15 ns + 300 ns + 15 ns) of latency) is about 1.4 us, a BDP of ~17.5 KB, less than
  // the initial window of 10 segments: the sender is never window-limited and the flow takes
  // what an RDMA flow takes plus the kernel's 5 us at each end:
  //   finish = 5 us + (N + 1) tx(4096 + 90 B) + 330 ns + 5 us,  N = 4096 segments.
  FabricRun run(star(2), {"nic.transport=\"tcp\"", "traffic.message_size=\"16MiB\""});
  const Message& m = run.net.messages()[0];
  ASSERT_TRUE(m.complete());
  const Time tx = tx_time(Bytes(4096 + 90), 100_Gbps);
  EXPECT_EQ(m.finish, 5_us + tx * (4096 + 1) + 330_ns + 5_us);
}

TEST(PacketFabric, TcpIncastLosesAndRecoversAndDctcpLosesLess) {
  // 4:1 incast of 4 MiB TCP flows into 512 KiB of buffer (lossy class, RTO 1 ms). NewReno
  // overflows the buffer, recovers by fast retransmit and timeouts, and delivers every byte
  // once; DCTCP with a step marking threshold at 30 KB keeps the queue short, drops less and
  // finishes sooner.
  const std::string toml = star(5) + "\n";
  const std::vector<std::string> base{"nic.transport=\"tcp\"", "nic.tcp.min_rto=\"1ms\"",
                                      "switch.buffer=\"512KiB\"", "traffic.message_size=\"4MiB\""};
  FabricRun reno(toml, base);
  auto dctcp_set = base;
  for (const char* k :
       {"nic.tcp.congestion=\"dctcp\"", "switch.ecn=true", "switch.ecn_kmin=\"30KB\"",
        "switch.ecn_kmax=\"31KB\"", "switch.ecn_pmax=1.0"})
    dctcp_set.emplace_back(k);
  FabricRun dctcp(toml, dctcp_set);
  EXPECT_GT(reno.counter("switch0.drop_packets"), 0u);
  EXPECT_GT(reno.sum("host", ".retransmitted_packets"), 0u);
  EXPECT_EQ(reno.counter("host0.rx_payload_bytes"), 4u * (4u << 20));
  EXPECT_EQ(dctcp.counter("host0.rx_payload_bytes"), 4u * (4u << 20));
  EXPECT_LT(dctcp.counter("switch0.drop_packets"), reno.counter("switch0.drop_packets"));
  EXPECT_GT(dctcp.sum("switch0.", ".ecn_marked_packets"), 0u);
  EXPECT_LT(dctcp.last_finish(), reno.last_finish());
}

TEST(PacketFabric, WithoutGpuDirectStagingThroughHostMemorySharesThePcieUplink) {
  // Two DGX A100 on one 200 Gb/s switch. Server 0's NIC0 and NIC1 (both on PCIe switch 0, with
  // GPU0 and GPU1) each send 16 MiB to the same NIC of server 1.
  // GPUDirect: GPU0 -> PCIe switch -> NIC0 never touches the switch's Gen4 x16 uplink; the
  //   network is the bottleneck: 200 Gb/s x 4096/4178 = 196.1 Gb/s per flow.
  // Staged: GPU -> switch -> CPU -> host memory -> CPU -> switch -> NIC: both flows cross the
  //   uplink once in each direction (and again at the receiver), so each gets half of it:
  //   252.06 Gb/s / 2 x 4096 / (4096 + 16 TLPs x 24 B) = 115.2 Gb/s.
  const std::string toml = R"(
[server]
preset = "dgx-a100"
count = 2
[fabric]
link_rate = "200Gbps"
[switch]
buffer = "64MiB"
pfc = true
[traffic]
message_size = "16MiB"
)";
  const auto goodputs = [&](bool gpudirect) {
    const Scenario s = load_scenario_text(
        toml, "t.toml", {.overrides = {fmt::format("nic.gpudirect={}", gpudirect)}});
    const BuiltCluster c(s);
    Simulation sim(1);
    PacketNetwork net(sim, c.topology, c.routing, s.network);
    for (std::uint32_t n : {0u, 1u})
      net.messages().push_back(
          Message{.src = n, .dst = 8 + n, .size = 16_MiB, .start = Time::zero()});
    net.start_messages();
    sim.run();
    std::vector<double> out;
    for (const Message& m : net.messages()) {
      EXPECT_TRUE(m.complete());
      out.push_back(rate_gbps(m.size, m.finish - m.start));
    }
    const auto route = net.host_fabric()->route_names(0, true);
    EXPECT_EQ(std::find(route.begin(), route.end(), "server0.cpu0.memory") != route.end(),
              !gpudirect);
    return out;
  };
  for (const double g : goodputs(true)) EXPECT_NEAR(g / (200 * 4096.0 / 4178), 1.0, 0.02) << g;
  const double staged_expected = 252.06 / 2 * 4096 / (4096 + 16 * 24);
  for (const double g : goodputs(false)) EXPECT_NEAR(g / staged_expected, 1.0, 0.03) << g;
}

TEST(PacketFabric, GpuDirectIsChosenPerGpuNicPairByPcieDistance) {
  // A server whose NIC sits on another PCIe switch than the GPU it serves: their path runs
  // through the CPU (PHB). With NCCL's default level PXB and PXN off the pair is staged through
  // host memory; with gdr_level = "PHB" it uses GPUDirect; a DGX A100 pair (same switch) always
  // does.
  const std::string toml = R"(
[server]
preset = "dgx-a100"
count = 2
sockets = 1
pcie_switch_sockets = [0, 0]
gpu_pcie_switch = [0, 1]
nic_pcie_switch = [1]
nvswitch_links = [2]
[fabric]
link_rate = "200Gbps"
[traffic]
message_size = "1MiB"
)";
  const auto gdr = [&](std::vector<std::string> set) {
    const Scenario s = load_scenario_text(toml, "t.toml", {.overrides = std::move(set)});
    const BuiltCluster c(s);
    Simulation sim(1);
    PacketNetwork net(sim, c.topology, c.routing, s.network);
    const auto route = net.host_fabric()->route_names(0, true);
    EXPECT_EQ(std::find(route.begin(), route.end(), "server0.cpu0.memory") == route.end(),
              net.host_fabric()->uses_gpudirect(0));
    return net.host_fabric()->uses_gpudirect(0);
  };
  // NCCL's default PXN: GPU0's data crosses NVLink to GPU1, under the NIC's switch, and the
  // NIC reads it there with GPUDirect; no CPU or host memory on the route.
  EXPECT_TRUE(gdr({}));
  {
    const Scenario s = load_scenario_text(toml, "t.toml");
    const BuiltCluster c(s);
    Simulation sim(1);
    PacketNetwork net(sim, c.topology, c.routing, s.network);
    const auto route = net.host_fabric()->route_names(0, true);
    EXPECT_EQ(route.front(), "server0.gpu0>server0.nvswitch0");
    for (const auto& hop : route) EXPECT_EQ(hop.find("cpu"), std::string::npos) << hop;
  }
  EXPECT_FALSE(gdr({"nccl.NCCL_PXN_DISABLE=1"}));
  EXPECT_TRUE(gdr({"nccl.NCCL_PXN_DISABLE=1", "nic.gdr_level=\"PHB\""}));
  EXPECT_FALSE(gdr({"nic.gdr_level=\"SYS\"", "nic.gpudirect=false"}));
}

TEST(PacketFabric, MessagesInsideAServerTravelOverNvlinkStripedAcrossNvswitches) {
  // One 64 MiB message from GPU 0 to GPU 1 of a DGX A100 (12 NVLink links of 25 GB/s per
  // direction, 2 to each of 6 NVSwitches) and of a DGX H100 (18 links: 5, 5, 4, 4 to 4
  // NVSwitches). Chunks go out on every bundle, each pulling the next when free, so the message
  // is striped in proportion to the bundles' rates and runs at the GPU's whole NVLink rate less
  // NVLink framing (16 B per 256 B): A100 12 x 200 Gb/s x 256/272 = 2259 Gb/s, H100 18 x ...
  // = 3388 Gb/s. The network is not touched.
  for (const auto& [preset, links] : {std::pair{"dgx-a100", 12}, std::pair{"dgx-h100", 18}}) {
    const Scenario s = load_scenario_text(fmt::format(R"(
[server]
preset = "{}"
count = 1
[fabric]
link_rate = "400Gbps"
[traffic]
message_size = "64MiB"
)",
                                                      preset),
                                          "t.toml");
    const BuiltCluster c(s);
    Simulation sim(1);
    PacketNetwork net(sim, c.topology, c.routing, s.network);
    net.messages().push_back(Message{.src = 0, .dst = 1, .size = 64_MiB, .start = Time::zero()});
    net.start_messages();
    sim.run();
    const Message& m = net.messages()[0];
    ASSERT_TRUE(m.complete()) << preset;
    const double expected = links * 200.0 * fixtures::nvlink_payload_share();
    EXPECT_NEAR(rate_gbps(m.size, m.finish) / expected, 1.0, 0.01) << preset;
    std::uint64_t network_bytes = 0;
    for (const auto& counter : sim.probes().counters())
      if (counter.name.starts_with("switch0.") && counter.name.ends_with(".tx_bytes"))
        network_bytes += counter.value;
    EXPECT_EQ(network_bytes, 0u) << preset;
  }
}

TEST(PacketFabric, SameSeedGivesIdenticalCountersAndTimeSeries) {
  const std::string toml = star(5, "messages = 2\nstart_jitter = \"2us\"\nmean_gap = \"5us\"");
  const std::vector<std::string> set{"switch.pfc=true",
                                     "switch.ecn=true",
                                     "switch.ecn_kmin=\"20KB\"",
                                     "switch.ecn_kmax=\"80KB\"",
                                     "nic.dcqcn.enabled=true",
                                     "switch.buffer=\"512KiB\"",
                                     "simulation.sample_interval=\"1us\"",
                                     "simulation.timeseries=[\"*\"]"};
  const Scenario s = load_scenario_text(toml, "t.toml", {.overrides = set});
  const BuiltCluster c(s);
  const RunResult a = run_scenario(s, c), b = run_scenario(s, c);
  EXPECT_EQ(results_json(s, a), results_json(s, b));
  EXPECT_EQ(timeseries_csv(a), timeseries_csv(b));
  EXPECT_GT(a.series_names.size(), 10u);
}

TEST(PacketFabric, PixAndPxbAreToldApart) {
  // NCCL's path types (graph/topo.h): two PCIe devices under one single-level switch are PIX,
  // under a two-level switch PXB. A DGX H100's GPU 0 and NIC 0 are PIX, a DGX A100's PXB, so
  // NCCL_NET_GDR_LEVEL=PIX keeps GPUDirect on the first and stages the second; the default
  // (PXB) keeps both.
  const auto gdr = [](const char* preset, std::vector<std::string> set) {
    const Scenario s = load_scenario_text(
        fmt::format("[server]\npreset = \"{}\"\ncount = 2\n[fabric]\nlink_rate = \"200Gbps\"\n"
                    "[traffic]\nmessage_size = \"1MiB\"\n",
                    preset),
        "t.toml", {.overrides = std::move(set)});
    const BuiltCluster c(s);
    Simulation sim(1);
    PacketNetwork net(sim, c.topology, c.routing, s.network);
    return net.host_fabric()->uses_gpudirect(0);
  };
  const std::string pix = "nccl.NCCL_NET_GDR_LEVEL=\"PIX\"";
  EXPECT_TRUE(gdr("dgx-h100", {pix}));
  EXPECT_FALSE(gdr("dgx-a100", {pix}));
  EXPECT_TRUE(gdr("dgx-a100", {}));
  // Two GPUs of the PCIe-only preset share a single-level switch: peer to peer with
  // NCCL_P2P_LEVEL=PIX; make the switch two-level and the pair is PXB, staged at PIX, peer to
  // peer at NCCL's default PXB.
  const auto path = [](std::vector<std::string> set) {
    const Scenario s = load_scenario_text(
        "[server]\npreset = \"pcie-8gpu\"\ncount = 1\n[fabric]\nlink_rate = \"100Gbps\"\n"
        "[traffic]\nmessage_size = \"1MiB\"\n",
        "t.toml", {.overrides = std::move(set)});
    const BuiltCluster c(s);
    const auto& g = c.topology.graph();
    std::vector<Vertex> gpu;
    for (auto [v, end] = boost::vertices(g); v != end; ++v)
      if (g[*v].kind == NodeKind::kGpu && g[*v].index < 2) gpu.push_back(*v);
    EXPECT_EQ(gpu.size(), 2u);
    return s.network.host.gpu_path(g, gpu[0], gpu[1]);
  };
  const std::string p2p_pix = "nccl.NCCL_P2P_LEVEL=\"PIX\"";
  const std::string two_level = "server.pcie_switch_levels=2";
  EXPECT_EQ(path({p2p_pix}), GpuPath::kPcieP2p);
  EXPECT_EQ(path({p2p_pix, two_level}), GpuPath::kHostMemory);
  EXPECT_EQ(path({two_level}), GpuPath::kPcieP2p);
}
