// Regression tests for answers that were wrong without saying so (issue 15): each expected value
// is derived in its comment from the mechanism, not read off a run.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "experiments/nccl_tests.hpp"
#include "experiments/run.hpp"
#include "report/nccl_tests_output.hpp"
#include "report/results.hpp"
#include "scenario/scenario.hpp"
#include "sim/checked.hpp"
#include "tests/support/collective_run.hpp"
#include "topo/analysis.hpp"
#include "topo/communicator.hpp"

using namespace fabricsim;

namespace {

// Two DGX H100 (8 GPUs, each with its own 400G NIC on its PCIe switch) on one NDR leaf.
std::string two_h100(const std::string& extra = "") {
  return R"(
name = "h100x2"
[server]
preset = "dgx-h100"
count = 2
[fabric]
kind = "leaf-spine"
technology = "infiniband"
link_rate = "400Gbps"
switch_ports = 64
hosts_per_leaf = 16
rail_optimized = true
)" + extra;
}

// The endpoint (NIC) name of every rank on every channel of a layout.
std::set<std::string> nics_of_rank(const BuiltCluster& c, const CommLayout& l, std::uint32_t r) {
  std::set<std::string> out;
  for (const auto& ch : l.channels)
    out.insert(c.topology.graph()[c.topology.endpoints()[ch.nic[r]]].name);
  return out;
}

double metric(const RunResult& r, const std::string& name) {
  for (const auto& m : r.metrics)
    if (m.name == name) return m.value;
  ADD_FAILURE() << "no metric " << name;
  return 0;
}

// Loads and runs a scenario given as text, with `key=value` overrides.
RunResult run_text(const std::string& text, std::vector<std::string> set = {}) {
  const Scenario s = load_scenario_text(text, "t.toml", {.overrides = std::move(set)});
  const BuiltCluster c(s);
  return run_scenario(s, c);
}

std::uint64_t counter(const RunResult& r, const std::string& name) {
  for (const auto& [n, v] : r.counters)
    if (n == name) return v;
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

}  // namespace

TEST(Correctness, OneGpuPerServerCommunicatorUsesThatGpusOwnNic) {
  // A data-parallel group of GPU 3 of each server (rail-aligned): NCCL's local NIC of GPU 3 is
  // the one on its PCIe switch (mlx5_3 on a DGX H100), so every channel of both ranks uses it,
  // and there are NCCL's 2 rings per local NIC. The bug spread the 16 channels over all 8 NICs,
  // the other socket's included, staged through host memory.
  const Scenario s = load_scenario_text(two_h100(), "t.toml");
  const BuiltCluster c(s);
  CommunicatorOptions o;
  o.gpus = {3, 8 + 3};
  const CommLayout l = build_communicator(c.topology, c.routing, o);
  EXPECT_EQ(l.channels.size(), 2u);
  EXPECT_EQ(nics_of_rank(c, l, 0), (std::set<std::string>{"server0.mlx5_3"}));
  EXPECT_EQ(nics_of_rank(c, l, 1), (std::set<std::string>{"server1.mlx5_3"}));
  // The tuner's inter-node bandwidth per channel: one 400G NIC (50 GB/s) over 2 channels.
  EXPECT_DOUBLE_EQ(l.bw_inter_gbs, 25.0);

  // DGX A100: GPU 2 shares its PCIe switch with GPU 3 and NICs mlx5_2 and mlx5_3, both PXB:
  // both are its local NICs, 2 rings each, 4 channels.
  const Scenario a = load_scenario_text(
      two_h100(), "t.toml",
      {.overrides = {"server.preset=\"dgx-a100\"", "fabric.link_rate=\"200Gbps\""}});
  const BuiltCluster ca(a);
  CommunicatorOptions oa;
  oa.gpus = {2, 8 + 2};
  const CommLayout la = build_communicator(ca.topology, ca.routing, oa);
  EXPECT_EQ(la.channels.size(), 4u);
  EXPECT_EQ(nics_of_rank(ca, la, 0), (std::set<std::string>{"server0.mlx5_2", "server0.mlx5_3"}));
}

TEST(Correctness, CrossNicOneLetsARingLeaveThroughAnotherNic) {
  // Whole servers: with NCCL_CROSS_NIC 0 or 2 (default) a ring enters and leaves a server
  // through the same NIC (it stays on its rail); with 1 it leaves through the NIC of the last
  // GPU it visits, so the entry and exit ranks of a server use different NICs.
  for (const int cross : {0, 1, 2}) {
    const Scenario s =
        load_scenario_text(two_h100(fmt::format("[nccl]\nNCCL_CROSS_NIC = {}\n", cross)), "t.toml");
    EXPECT_EQ(s.nccl.cross_nic, cross);
    const BuiltCluster c(s);
    CommunicatorOptions o;
    o.cross_nic = s.nccl.cross_nic;
    const CommLayout l = build_communicator(c.topology, c.routing, o);
    ASSERT_EQ(l.channels.size(), 16u);
    int crossing = 0;
    for (const auto& ch : l.channels) {
      // ring[0] entered server 0, ring[7] leaves it.
      crossing += ch.nic[ch.ring[0]] != ch.nic[ch.ring[7]];
    }
    EXPECT_EQ(crossing, cross == 1 ? 16 : 0) << "NCCL_CROSS_NIC=" << cross;
  }
  EXPECT_THROW(load_scenario_text(two_h100("[nccl]\nNCCL_CROSS_NIC = 3\n"), "t.toml"), ConfigError);
}

TEST(Correctness, GpuDirectOnDgxH100KeepsGpuNicTrafficUnderItsPcieSwitch) {
  // A 2 x DGX H100 NDR AllReduce with GPUDirect on: every GPU-NIC transfer stays under the
  // shared PCIe switch (the ring's exit GPU reaches the channel's NIC through PXN, over NVLink
  // to the NIC's own GPU), so no CPU uplink, inter-socket link or host memory carries a byte.
  for (const char* fidelity : {"packet", "flow"}) {
    const Scenario s = load_scenario_text(
        two_h100(), "t.toml", {.overrides = {fmt::format("fidelity=\"{}\"", fidelity)}});
    const BuiltCluster c(s);
    const auto run = fixtures::run_collective(s, c, {.op = CollOp::kAllReduce, .bytes = 16 << 20});
    ASSERT_TRUE(run.result.done);
    const auto loads = bottleneck_summary(*run.fabric, run.sim->now(), {}, 1000);
    ASSERT_FALSE(loads.empty());
    bool nic_busy = false;
    for (const auto& l : loads) {
      if (l.utilization <= 0) continue;
      nic_busy |= l.layer == "NIC";
      EXPECT_NE(l.layer, "host memory") << fidelity << " " << l.port;
      EXPECT_EQ(l.port.find("cpu"), std::string::npos) << fidelity << " " << l.port;
    }
    EXPECT_TRUE(nic_busy) << fidelity;
  }
}

TEST(Correctness, OversubscribedRailOptimizedFabricReportsItsCut) {
  // 32 x DGX H100, rail-optimized, 32 hosts per 64-port leaf, 2:1: each leaf has 32 x 400G
  // down and 16 x 400G up. Half the servers against the other half meet inside every rail leaf
  // (100 %), but half the leaves (4 x 32 hosts) against the other half cross 4 x 16 uplinks:
  // 25,600 of 51,200 Gb/s, 50 %. The reported bisection is that worst cut.
  const Scenario s = load_scenario_text(R"(
[server]
preset = "dgx-h100"
count = 32
[fabric]
kind = "leaf-spine"
link_rate = "400Gbps"
switch_ports = 64
hosts_per_leaf = 32
rail_optimized = true
oversubscription = 2
)",
                                        "t.toml");
  const BuiltCluster c(s);
  const TopologySummary t = analyse(c.topology, c.routing, {});
  ASSERT_EQ(t.tier_cuts.size(), 1u);
  EXPECT_EQ(t.tier_cuts[0].tier, "leaf");
  EXPECT_EQ(t.tier_cuts[0].groups, 8);
  EXPECT_DOUBLE_EQ(t.tier_cuts[0].gbps, 4 * 16 * 400.0);
  EXPECT_DOUBLE_EQ(t.tier_cuts[0].fraction(), 0.5);
  EXPECT_DOUBLE_EQ(t.bisection_gbps, 25'600);
  EXPECT_DOUBLE_EQ(t.full_bisection_gbps, 51'200);
  // The fewest 64-port spines for 8 leaves x 16 uplinks: 2 (64 ports each).
  EXPECT_EQ(t.switches, 8 + 2);
}

TEST(Correctness, EachNcclTestsSizeIsIndependentOfTheSizesBefore) {
  // The same 8 MiB AllReduce at packet level on RoCE with DCQCN, alone and as the last size of
  // a 1 -> 8 MiB sweep: each size runs on a fresh simulation after its warm-up, so the rows are
  // identical to the picosecond (the bug kept queue pairs, DCQCN rates and queues from the sizes
  // before: 2817 us alone against 3500 us after a 2 MiB size at 64 MiB).
  const Scenario s = load_scenario_text(R"(
fidelity = "packet"
[server]
preset = "dgx-a100"
count = 2
[fabric]
kind = "star"
link_rate = "100Gbps"
[switch]
pfc = true
ecn = true
buffer = "2MiB"
[nic.dcqcn]
enabled = true
)",
                                        "t.toml");
  const BuiltCluster c(s);
  NcclTestsArgs alone;
  alone.min_bytes = alone.max_bytes = 8 << 20;
  NcclTestsArgs sweep = alone;
  sweep.min_bytes = 1 << 20;
  sweep.step_factor = 2;
  const NcclTestsResult a = run_nccl_tests(s, c, alone), b = run_nccl_tests(s, c, sweep);
  ASSERT_EQ(a.rows.size(), 1u);
  ASSERT_EQ(b.rows.size(), 4u);
  EXPECT_EQ(a.rows[0].time_us[0], b.rows[3].time_us[0]);
  EXPECT_EQ(a.rows[0].time_us[1], b.rows[3].time_us[1]);
  // Warm-up iterations are simulated: none changes nothing here but is accepted.
  NcclTestsArgs cold = alone;
  cold.warmup = 0;
  EXPECT_EQ(run_nccl_tests(s, c, cold).rows.size(), 1u);
}

TEST(Correctness, FlowLevelSaysPfcEcnAndDcqcnDoNotActThere) {
  // The same scenario at both levels: the packet level's header lists PFC/ECN/DCQCN as on; the
  // flow level's says they are set but inactive, and results.json records it.
  const std::string text = R"(
[fabric]
kind = "star"
hosts = 3
link_rate = "100Gbps"
[switch]
pfc = true
ecn = true
[nic.dcqcn]
enabled = true
[traffic]
message_size = "64KiB"
)";
  RunResult empty;
  const Scenario packet = load_scenario_text(text, "t.toml");
  EXPECT_NE(text_report(packet, empty).find("PFC on, ECN on, DCQCN on"), std::string::npos);
  EXPECT_EQ(fidelity_scope(packet).inactive.size(), 0u);
  const Scenario flow = load_scenario_text(text, "t.toml", {.overrides = {"fidelity=\"flow\""}});
  const std::string report = text_report(flow, empty);
  EXPECT_EQ(report.find("PFC on"), std::string::npos) << report;
  EXPECT_NE(report.find("set in the scenario but inactive at flow level: PFC, ECN, DCQCN"),
            std::string::npos)
      << report;
  const std::string json = results_json(flow, empty);
  EXPECT_NE(json.find("\"set_but_inactive\" : [\n            \"PFC\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"level\" : \"flow\""), std::string::npos);
}

TEST(Correctness, MetricNamesSayTheirUnit) {
  // nccl-tests' JSON: GB/s under _gbyte_per_s, the old _gbps names alongside with the same
  // value; the CSV keeps its old columns in place and adds the new ones after them.
  NcclTestsArgs a;
  NcclTestsResult r;
  NcclTestsRow row;
  row.size = 1024;
  row.algbw[0] = row.algbw[1] = 1.5;
  row.busbw[0] = row.busbw[1] = 2.5;
  r.rows.push_back(row);
  const Scenario s = load_scenario_text(
      "[fabric]\nkind = \"star\"\nhosts = 2\nlink_rate = \"100Gbps\"\n", "t.toml");
  const std::string json = nccl_tests_json(s, a, r);
  EXPECT_NE(json.find("\"busbw_gbyte_per_s\" : 2.5"), std::string::npos) << json;
  EXPECT_NE(json.find("\"busbw_gbps\" : 2.5"), std::string::npos);
  const std::string csv = nccl_tests_csv(r);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "size,count,algorithm,protocol,channels,oop_time_us,oop_algbw_gbps,oop_busbw_gbps,"
            "ip_time_us,ip_algbw_gbps,ip_busbw_gbps,oop_algbw_gbyte_per_s,oop_busbw_gbyte_per_s,"
            "ip_algbw_gbyte_per_s,ip_busbw_gbyte_per_s");
}

TEST(Correctness, SprayedRdmaCompletesAsGoBackNOrWithPlacementInAnyOrder) {
  // 32 hosts on 4 leaves, packets sprayed over the 8 spines: arrivals are reordered. A reliable
  // connection (go-back-N) NAKs a gap once; a reordered tail (the last packets arriving before
  // the one expected) is never NAKed again, so those QPs wait for the ACK timeout,
  // 4.096 us x 2^20 = 4.295 s, as real RC QPs do, then finish. The retransmission count is
  // what was resent (the bug subtracted past zero and printed multiples of 2^32). With
  // out-of-order placement nothing is resent and every message ends within a millisecond.
  const std::string text = R"(
[fabric]
kind = "leaf-spine"
hosts = 32
hosts_per_leaf = 8
link_rate = "100Gbps"
switch_ports = 16
routing = "spray"
[switch]
pfc = true
[traffic]
pattern = "permutation"
shift = 9
message_size = "1MiB"
messages = 4
[simulation]
stop_time = "10s"
no_progress_timeout = "9s"
)";
  const auto run = [&](std::vector<std::string> set) { return run_text(text, std::move(set)); };
  const RunResult gbn = run({});
  EXPECT_EQ(gbn.status, "completed");
  EXPECT_EQ(metric(gbn, "messages_completed"), 128);
  const double timeout_us = 4.096 * (1 << 20);
  EXPECT_GT(metric(gbn, "fct_max_us"), timeout_us);
  EXPECT_LT(metric(gbn, "fct_max_us"), timeout_us + 20'000);
  // At most every packet resent a few dozen times: 128 MiB is 32,768 packets of 4 KiB.
  EXPECT_GT(metric(gbn, "retransmitted_packets"), 0);
  EXPECT_LT(metric(gbn, "retransmitted_packets"), 32'768.0 * 64);
  const RunResult any = run({"nic.out_of_order_placement=true"});
  EXPECT_EQ(any.status, "completed");
  EXPECT_EQ(metric(any, "messages_completed"), 128);
  EXPECT_EQ(metric(any, "retransmitted_packets"), 0);
  EXPECT_LT(metric(any, "fct_max_us"), 1000);
}

TEST(Correctness, MoreThan65536HostsOnOneSwitchRouteToTheirOwnPorts) {
  // A star of 65,540 hosts, host i sending 64 B to host i + 65,536 (mod 65,540). Host 65,536 + k
  // sits on switch port 65,536 + k, which a 16-bit port index wrapped to port k: its message
  // went to host k, which then counted two while the run said "completed". Every host must
  // receive exactly one message.
  const Scenario s = load_scenario_text(R"(
[fabric]
kind = "star"
hosts = 65540
link_rate = "100Gbps"
[switch]
buffer = "1GiB"
[traffic]
pattern = "permutation"
shift = 65536
message_size = "64B"
)",
                                        "t.toml");
  const BuiltCluster c(s);
  EXPECT_EQ(c.routing.endpoint_port(65'539), 65'539u);
  const RunResult r = run_scenario(s, c);
  EXPECT_EQ(r.status, "completed");
  std::size_t hosts = 0;
  for (const auto& [name, value] : r.counters)
    if (name.ends_with(".rx_messages")) {
      ++hosts;
      EXPECT_EQ(value, 1u) << name;
    }
  EXPECT_EQ(hosts, 65'540u);
}

TEST(Correctness, NarrowingAnIndexThatDoesNotFitThrows) {
  EXPECT_EQ(checked_narrow<std::uint16_t>(65'535, "port"), 65'535);
  EXPECT_THROW(checked_narrow<std::uint16_t>(65'536, "port"), std::length_error);
  EXPECT_THROW(checked_narrow<std::uint32_t>(-1, "index"), std::length_error);
}

TEST(Correctness, InfiniBandCreditsNeverOversubscribeTheSwitchBuffer) {
  // 7 hosts incast into one over an 8-port InfiniBand switch of 1 MiB with vl_buffer 256 KiB.
  // The switch can set aside at most 1 MiB / (8 ports x 2 VLs) = 64 KiB per (port, VL), so the
  // queue towards host 0 holds at most 7 x 64 KiB = 448 KiB (the bug honoured 256 KiB each:
  // 2.06 MB queued on a 1 MiB buffer). The bottleneck link still runs full.
  const Scenario s = load_scenario_text(R"(
[fabric]
kind = "star"
hosts = 8
link_rate = "100Gbps"
technology = "infiniband"
[switch]
buffer = "1MiB"
vl_buffer = "256KiB"
[traffic]
pattern = "incast"
message_size = "4MiB"
)",
                                        "t.toml");
  const BuiltCluster c(s);
  const RunResult r = run_scenario(s, c);
  ASSERT_EQ(r.status, "completed");
  const double peak = metric(r, "peak_switch_queue_bytes");
  const double goodput = metric(r, "aggregate_goodput_gbps");
  EXPECT_LE(peak, 7 * 64 * 1024.0);
  EXPECT_GT(peak, 5 * 64 * 1024.0);
  EXPECT_GT(goodput, 95);
}

TEST(Correctness, SendRecvUsesNcclsP2pChannelsAndReachesTheNvlinkRate) {
  // One DGX A100: NCCL gives a peer over NVSwitch 2 x 12 links = 24 channels, rounded up to 32
  // and capped at the communicator's 24 channels (NCCL's ring search: 12 x 20 GB/s, doubled)
  // rounded up (32). sendrecv_perf then moves 32 blocks' worth (32 x 20 GB/s) and is bounded
  // by NVLink: 12 x 25 GB/s of which 256 / 272 is payload, 282 GB/s. The bug ran one block:
  // 17.7 GB/s.
  const std::string one_a100 = R"(
[server]
preset = "dgx-a100"
count = 1
[fabric]
kind = "star"
link_rate = "200Gbps"
)";
  const Scenario s = load_scenario_text(one_a100, "t.toml");
  const BuiltCluster c(s);
  CommunicatorOptions o;
  o.channel_gbs = 20;
  EXPECT_EQ(build_communicator(c.topology, c.routing, o).p2p_channels, 32);
  NcclTestsArgs a;
  a.op = CollOp::kSendRecv;
  a.binary = "sendrecv_perf";
  a.min_bytes = a.max_bytes = 1 << 30;
  for (const char* fidelity : {"packet", "flow"}) {
    const Scenario f = load_scenario_text(
        one_a100, "t.toml", {.overrides = {fmt::format("fidelity=\"{}\"", fidelity)}});
    const NcclTestsResult r = run_nccl_tests(f, c, a);
    ASSERT_EQ(r.rows.size(), 1u);
    const double nvlink_payload = 300 * fixtures::nvlink_payload_share();
    EXPECT_GT(r.rows[0].busbw[0], 0.9 * nvlink_payload) << fidelity;
    EXPECT_LE(r.rows[0].busbw[0], nvlink_payload * 1.001) << fidelity;
    EXPECT_EQ(r.rows[0].channels, 32);
  }
  // Two DGX H100 across NDR: the network peers set it, max(1 NIC, ceil(50 / 14)) = 4; 16 ranks
  // need ceil(16 / 8) = 2 rounds, 4 x 2 <= 16 p2p channels, so 4 stays. NCCL_NCHANNELS_PER_NET_PEER
  // overrides the network term.
  const Scenario h = load_scenario_text(two_h100(), "t.toml");
  const BuiltCluster ch(h);
  CommunicatorOptions oh;
  oh.channel_gbs = 20.6;
  EXPECT_EQ(build_communicator(ch.topology, ch.routing, oh).p2p_channels, 4);
  oh.channels_per_net_peer = 2;
  EXPECT_EQ(build_communicator(ch.topology, ch.routing, oh).p2p_channels, 2);
}

TEST(Correctness, PointToPointMovesInNcclsChunkSizePerLinkClass) {
  // A SendRecv between the two DGX H100 of every GPU to its peer on the other server (the
  // ring of sends r -> r + 8): each pair's 64 MiB over its 4 p2p channels of 16 MiB each is
  // 16 MiB / NCCL_P2P_NET_CHUNKSIZE network messages per channel: 128 at 128 KiB, 32 at 512 KiB.
  for (const std::uint64_t chunk : {128u << 10, 512u << 10}) {
    const Scenario s = load_scenario_text(
        two_h100(fmt::format("[nccl]\nNCCL_P2P_NET_CHUNKSIZE = {}\n", chunk)), "t.toml");
    EXPECT_EQ(static_cast<std::uint64_t>(s.nccl.p2p_net_chunksize.count()), chunk);
    const BuiltCluster c(s);
    const auto run = fixtures::run_collective(
        s, c, {.op = CollOp::kSendRecv, .bytes = 64 << 20, .peer_offset = 8});
    ASSERT_TRUE(run.result.done);
    std::uint64_t network = 0;
    for (const Message& m : run.fabric->messages()) network += m.src != m.dst;
    EXPECT_EQ(network, 16u * 4 * ((16u << 20) / chunk)) << chunk;
  }
}

TEST(Correctness, PxnKeepsAllToAllOnItsRailOfARailOptimizedFabric) {
  // 4 x DGX H100, rail-optimized (leaf i holds NIC i of every server), 2:1. An AllToAll sends
  // 7/8 of what crosses servers to GPUs of another index. With PXN (NCCL's default) such a
  // send leaves through the NIC of the sender's GPU of the receiver's index, reached over
  // NVLink, and the receiver takes it on its own NIC: every network byte stays inside one rail
  // leaf and no leaf uplink carries any. Without PXN it leaves through the sender's own NIC,
  // and the 7/8 cross-rail share goes up to the spines.
  const std::string four = R"(
fidelity = "flow"
[server]
preset = "dgx-h100"
count = 4
[fabric]
kind = "leaf-spine"
technology = "infiniband"
link_rate = "400Gbps"
switch_ports = 8
hosts_per_leaf = 4
rail_optimized = true
oversubscription = 2
)";
  for (const int level : {2, 0}) {
    const Scenario s = load_scenario_text(
        four, "t.toml", {.overrides = {fmt::format("nccl.NCCL_P2P_PXN_LEVEL={}", level)}});
    const BuiltCluster c(s);
    const auto run = fixtures::run_collective(s, c, {.op = CollOp::kAllToAll, .bytes = 64 << 20});
    ASSERT_TRUE(run.result.done);
    const double up = fixtures::layer_bytes(*run.fabric, "leaf uplink");
    const double down = fixtures::layer_bytes(*run.fabric, "leaf downlink");
    if (level == 2) {
      EXPECT_EQ(up, 0) << "PXN";
    } else {
      // Leaf downlinks carry every network byte once (into the receiver's NIC); 7/8 of them
      // also went up a leaf uplink.
      EXPECT_NEAR(up / down, 7.0 / 8, 0.01);
    }
  }
}

TEST(Correctness, P2pDisabledLeavesNvLinkIdleAndStagesThroughHostMemory) {
  // NCCL_P2P_DISABLE=1 on one DGX H100, ring AllReduce: no pair may use peer to peer, so every
  // ring edge goes through NCCL's SHM transport, over PCIe into the receiving GPU's socket's
  // memory and out again: NVLink carries nothing, host memory carries every byte (each GPU
  // receives 2 (n - 1) / n x S).
  const std::string one = fixtures::one_dgx_h100(
      "[nccl]\nNCCL_ALGO = \"Ring\"\nNCCL_PROTO = \"Simple\"\nNCCL_P2P_DISABLE = 1\n");
  const std::uint64_t bytes = 32 << 20;
  for (const char* fidelity : {"packet", "flow"}) {
    const Scenario s = load_scenario_text(
        one, "t.toml", {.overrides = {fmt::format("fidelity=\"{}\"", fidelity)}});
    EXPECT_EQ(s.network.host.p2p_level, 0);
    const BuiltCluster c(s);
    const auto run = fixtures::run_collective(s, c, {.op = CollOp::kAllReduce, .bytes = bytes});
    ASSERT_TRUE(run.result.done);
    const double nvlink = fixtures::layer_bytes(*run.fabric, "NVLink");
    const double memory = fixtures::layer_bytes(*run.fabric, "host memory");
    EXPECT_EQ(nvlink, 0) << fidelity;
    // Payload 8 x 2 (n - 1) / n x S through memory (Simple: no protocol bytes); packet level
    // counts PCIe framing on top (24 B per 256).
    EXPECT_GE(memory, 0.99 * 8 * 2.0 * 7 / 8 * bytes) << fidelity;
    EXPECT_LE(memory, 1.1 * 8 * 2.0 * 7 / 8 * bytes) << fidelity;
  }
}

TEST(Correctness, NoGdrReadStagesOnlyTheSendSideThroughHostMemory) {
  // NCCL_NET_GDR_READ=0 on 2 x DGX H100: the NIC may not read GPU memory, so every byte sent
  // across servers passes through host memory once, on the sending side, while receives still
  // land in GPU memory directly. With both directions staged (gpudirect off) it is twice that;
  // with NCCL's defaults, never.
  const std::uint64_t bytes = 64 << 20;
  for (const char* extra : {"", "NCCL_NET_GDR_READ = 0\n", "gpudirect = false\n"}) {
    const Scenario s = load_scenario_text(two_h100(std::string("[nccl]\n") + extra), "t.toml",
                                          {.overrides = {"fidelity=\"flow\""}});
    const BuiltCluster c(s);
    const auto run = fixtures::run_collective(s, c, {.op = CollOp::kAllReduce, .bytes = bytes});
    ASSERT_TRUE(run.result.done);
    const double memory = fixtures::layer_bytes(*run.fabric, "host memory");
    const double network = fixtures::layer_bytes(*run.fabric, "leaf downlink");
    ASSERT_GT(network, 0);
    const double per_network_byte = std::string(extra).empty() ? 0 : extra[0] == 'N' ? 1 : 2;
    EXPECT_NEAR(memory / network, per_network_byte, 0.05) << extra;
  }
}

TEST(Correctness, RdmaResponderCoalescesAcksAsConnectXDoesThroughVerbs) {
  // Two hosts send each other one message of 1,000 full 4 KiB packets. ConnectX through verbs
  // (nic.ack_interval = 256, the default) ACKs PSNs 255, 511 and 767 and the message's last
  // packet: 4 ACKs per receiver. One ACK per packet gives 1,000. Those ACKs share each wire
  // with the data going the other way: 1,000 x 86 B at 100 Gb/s is 6.88 us more per message.
  const std::string text = R"(
[fabric]
kind = "leaf-spine"
hosts = 2
hosts_per_leaf = 2
spines = 1
link_rate = "100Gbps"
[switch]
pfc = false
[traffic]
pattern = "permutation"
shift = 1
message_size = "4096000B"
)";
  const auto run = [&](std::vector<std::string> set) { return run_text(text, std::move(set)); };
  const RunResult coalesced = run({});
  const RunResult every = run({"nic.ack_interval=1"});
  ASSERT_EQ(coalesced.status, "completed");
  ASSERT_EQ(every.status, "completed");
  for (const char* host : {"host0", "host1"}) {
    EXPECT_EQ(counter(coalesced, fmt::format("{}.ack_sent", host)), 4u);
    EXPECT_EQ(counter(every, fmt::format("{}.ack_sent", host)), 1000u);
  }
  const double extra_us = metric(every, "fct_mean_us") - metric(coalesced, "fct_mean_us");
  EXPECT_NEAR(extra_us, 1000 * 86 * 8 / 100e3, 0.5);
}

TEST(Correctness, TrafficProgressIsThePayloadDeliveredAndEndsAtAll) {
  // The progress reports of a traffic run measure work as payload delivered over all the
  // messages' payload: in 0..1, never going back, all of it once every message completed.
  const std::string text = R"(
[fabric]
kind = "leaf-spine"
hosts = 8
hosts_per_leaf = 4
link_rate = "100Gbps"
[traffic]
pattern = "permutation"
shift = 4
message_size = "4MiB"
)";
  const Scenario s = load_scenario_text(text, "t.toml");
  const BuiltCluster c(s);
  std::vector<double> done;
  const RunResult r = run_scenario(s, c, [&](const Progress& p) { done.push_back(p.done); });
  ASSERT_EQ(r.status, "completed");
  ASSERT_FALSE(done.empty());
  for (std::size_t i = 1; i < done.size(); ++i) EXPECT_GE(done[i], done[i - 1]);
  EXPECT_GE(done.front(), 0.0);
  EXPECT_EQ(done.back(), 1.0);
}
