#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "topo/analysis.hpp"
#include "topo/host_paths.hpp"
#include "topo/nccl_xml.hpp"

using namespace fabricsim;
using namespace fabricsim::literals;

namespace {

ClusterSpec hosts(int n, FabricSpec f) {
  if (f.link_rate.bps() == 0) f.link_rate = 100_Gbps;
  return ClusterSpec{.servers = 0, .hosts = n, .server = {}, .fabric = f};
}

std::string row(const TopoMatrix& m, int r) {
  std::string out;
  for (const auto& x : m.relation[r]) out += x + " ";
  return out;
}

}  // namespace

TEST(Fabric, AK8FatTreeHas128HostsAnd80Switches) {
  // k = 8: k pods x (k/2 edge + k/2 aggregation) = 64, plus (k/2)^2 = 16 core: 80 switches;
  // k^3/4 = 128 hosts; cables: 128 host + 8 pods x 16 edge-agg + 8 pods x 16 agg-core = 384.
  const Topology t = build_cluster(hosts(128, {.shape = FatTreeSpec{.k = 8}}));
  const Routing r = Routing::compute(t);
  const TopologySummary s = analyse(t, r, {});
  EXPECT_EQ(s.nics, 128);
  EXPECT_EQ(s.switches, 80);
  EXPECT_EQ(s.host_cables, 128);
  EXPECT_EQ(s.fabric_cables, 256);
  ASSERT_EQ(s.tiers.size(), 3u);
  EXPECT_EQ(s.tiers[0].switches, 32);
  EXPECT_EQ(s.tiers[2].switches, 16);
  EXPECT_EQ(s.diameter_links, 6);  // host-edge-agg-core-agg-edge-host
  // Full bisection: 64 hosts x 100 Gb/s.
  EXPECT_DOUBLE_EQ(s.bisection_gbps, 6400);
  EXPECT_DOUBLE_EQ(s.bisection_gbps, s.full_bisection_gbps);
}

TEST(Fabric, LeafSpineOf32DgxH100Has256GpusAndTheExpectedSwitches) {
  // 32 servers x 8 NICs = 256 endpoints; 64-port switches with 32 hosts and 32 uplinks per leaf:
  // 8 leaves, 256 uplinks. The fewest 64-port spines that take them: 4 (each leaf sends 8
  // parallel cables to each spine; 8 leaves x 8 = 64 ports used per spine). One spine per
  // uplink (32, the builder's old default) would leave 56 of each spine's 64 ports empty.
  ClusterSpec c{.servers = 32,
                .hosts = 0,
                .server = server_preset("dgx-h100"),
                .fabric = {.shape = LeafSpineSpec{.hosts_per_leaf = 32},
                           .technology = Technology::kInfiniband,
                           .switch_ports = 64,
                           .link_rate = 400_Gbps}};
  const Topology t = build_cluster(c);
  const TopologySummary s = analyse(t, Routing::compute(t), {.nic_rate = 400_Gbps});
  EXPECT_EQ(s.gpus, 256);
  EXPECT_EQ(s.nics, 256);
  EXPECT_EQ(s.nvswitches, 32 * 4);
  EXPECT_EQ(s.switches, 8 + 4);
  EXPECT_EQ(s.tiers.at(1).switches, 4);
  EXPECT_EQ(s.fabric_cables, 8 * 32);
  EXPECT_DOUBLE_EQ(s.bisection_gbps, 128 * 400.0);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(Fabric, BisectionMatchesHandComputation) {
  // Star, 8 hosts at 100 Gb/s: any half sends 4 x 100 = 400 Gb/s across.
  {
    const Topology t = build_cluster(hosts(8, {.shape = StarSpec{}}));
    EXPECT_DOUBLE_EQ(analyse(t, Routing::compute(t), {}).bisection_gbps, 400);
  }
  // Ring of 4 switches, 2 hosts each, 100 Gb/s ring links: cutting the ring in two arcs cuts 2
  // links, 200 Gb/s one way (the hosts could send 400).
  {
    const Topology t = build_cluster(hosts(8, {.shape = RingSpec{.switches = 4}}));
    EXPECT_DOUBLE_EQ(analyse(t, Routing::compute(t), {}).bisection_gbps, 200);
  }
  // Leaf-spine, 4 leaves x 8 hosts. Full (8 uplinks per leaf): 16 hosts x 100 = 1600 Gb/s.
  // 2:1 (4 uplinks per leaf): the two leaves of one half have 8 uplinks, 800 Gb/s.
  {
    const Topology full = build_cluster(hosts(32, {.shape = LeafSpineSpec{.hosts_per_leaf = 8}}));
    EXPECT_DOUBLE_EQ(analyse(full, Routing::compute(full), {}).bisection_gbps, 1600);
    const Topology half = build_cluster(
        hosts(32, {.shape = LeafSpineSpec{.hosts_per_leaf = 8, .oversubscription = 2}}));
    const TopologySummary s = analyse(half, Routing::compute(half), {});
    EXPECT_DOUBLE_EQ(s.bisection_gbps, 800);
    EXPECT_DOUBLE_EQ(s.tiers[0].oversubscription(), 2.0);
    ASSERT_EQ(s.warnings.size(), 1u);
    EXPECT_EQ(s.warnings[0], "leaf tier is oversubscribed 2:1 (3200 Gb/s down, 1600 Gb/s up)");
  }
}

TEST(Fabric, ImpossibleFabricsSayWhichNumberToChange) {
  const auto message = [](ClusterSpec c) {
    try {
      build_cluster(c);
    } catch (const FabricError& e) {
      return std::string(e.what());
    }
    return std::string("built");
  };
  EXPECT_EQ(message(hosts(200, {.shape = FatTreeSpec{.k = 8}})),
            "a fat-tree with k = 8 holds 128 hosts but the cluster has 200 endpoints: use fabric.k "
            ">= 10");
  EXPECT_EQ(
      message(hosts(70, {.shape = StarSpec{}, .switch_ports = 64})),
      "the star switch needs 70 ports but fabric.switch_ports = 64: raise switch_ports or use "
      "kind = \"leaf-spine\"");
  EXPECT_EQ(message(hosts(64, {.shape = LeafSpineSpec{.hosts_per_leaf = 20}, .switch_ports = 32})),
            "each leaf (20 hosts + 20 uplinks) needs 40 ports but fabric.switch_ports = 32: raise "
            "switch_ports, lower hosts_per_leaf or raise oversubscription");
  EXPECT_EQ(
      message(hosts(64, {.shape = LeafSpineSpec{.hosts_per_leaf = 8, .spines = 3}})),
      "fabric.uplinks_per_leaf (8) must be a multiple of fabric.spines (3) so each leaf reaches "
      "every spine equally");
  EXPECT_EQ(
      message(hosts(64, {.shape = LeafSpineSpec{.hosts_per_leaf = 12, .oversubscription = 5}})),
      "hosts_per_leaf 12 / oversubscription 5 = 2.4 uplinks per leaf, not a whole number: set "
      "fabric.uplinks_per_leaf or pick values that divide");
  EXPECT_EQ(message(hosts(64, {.shape = FatTreeSpec{.k = 7}})),
            "fat-tree fabric.k must be even and >= 2, got 7");
}

TEST(Routing, FatTreePathsAreShortestUpDownAndSpreadOverAllCores) {
  const Topology t = build_cluster(hosts(128, {.shape = FatTreeSpec{.k = 8}}));
  const Routing r = Routing::compute(t, 42);
  const auto& g = t.graph();
  std::set<Vertex> cores_used;
  for (std::size_t flow = 0; flow < 512; ++flow) {
    const auto p = r.path(0, 127, flow, PathSelection::kHash);  // different pods
    ASSERT_EQ(p.size(), 6u);
    // Tiers along the path go up then down, never up again (no valley).
    int prev_tier = 0;
    bool going_down = false;
    Vertex at = t.endpoints()[0];
    for (const Edge e : p) {
      at = boost::source(e, g) == at ? boost::target(e, g) : boost::source(e, g);
      const int tier = g[at].kind == NodeKind::kSwitch ? g[at].tier : 0;
      if (tier < prev_tier) going_down = true;
      if (going_down) {
        EXPECT_LE(tier, prev_tier);
      }
      if (tier == 3) cores_used.insert(at);
      prev_tier = tier;
    }
    EXPECT_EQ(at, t.endpoints()[127]);
  }
  EXPECT_EQ(cores_used.size(), 16u);  // ECMP hashing reaches every core
  // Destination-mod-k is deterministic per destination, independent of the flow.
  EXPECT_EQ(r.path(0, 127, 1, PathSelection::kDestModK),
            r.path(0, 127, 2, PathSelection::kDestModK));
  EXPECT_EQ(r.next_hops(r.endpoint_switch(0), 127).size(), 4u);  // k/2 uplinks at the edge
}

TEST(Routing, DestModKOnARailOptimizedLeafSpineUsesEveryParallelLinkOncePerDestination) {
  // 8 x DGX H100, rail-optimized on 16-port switches: leaf k holds NIC k of the 8 servers
  // (endpoints k, 8 + k, ...), 8 uplinks each; 64 uplinks / 16 ports = 4 spines, so every
  // leaf has 2 parallel links to every spine. D-mod-K numbers destinations leaf by leaf, so
  // the 8 destinations of a leaf take the 8 uplinks of every other leaf one each, and come
  // down the 2 links from each spine one each: no link carries two destinations. (Numbered
  // by endpoint index, dest 8s + k mod 8 = k for all of leaf k's destinations: every spine
  // sent them all down one of its two links, and 7/8 of a leaf's uplinks stayed idle.)
  ClusterSpec c{.servers = 8,
                .hosts = 0,
                .server = server_preset("dgx-h100"),
                .fabric = {.shape = LeafSpineSpec{.hosts_per_leaf = 8},
                           .technology = Technology::kInfiniband,
                           .switch_ports = 16,
                           .link_rate = 400_Gbps,
                           .rail_optimized = true}};
  const Topology t = build_cluster(c);
  const Routing r = Routing::compute(t);
  ASSERT_EQ(r.switch_count(), 8u + 4u);
  const auto& g = t.graph();
  for (std::size_t src_leaf = 0; src_leaf < 8; ++src_leaf) {
    std::map<const LinkInfo*, std::set<std::size_t>> destinations;  // per link, both hops
    for (std::size_t dst = 0; dst < r.endpoint_count(); ++dst) {
      if (dst % 8 == src_leaf) continue;  // same rail: stays on the leaf
      const auto path = r.path(src_leaf, dst, 0, PathSelection::kDestModK);
      ASSERT_EQ(path.size(), 4u);  // NIC-leaf, leaf-spine, spine-leaf, leaf-NIC
      destinations[&g[path[1]]].insert(dst);
      destinations[&g[path[2]]].insert(dst);
    }
    // 8 uplinks carry 56 destinations (7 leaves x 8): 7 each, one of each leaf; the 2 x 4
    // down-links into each other leaf carry its 8 destinations, one each.
    EXPECT_EQ(destinations.size(), 8u + 7u * 8u) << "leaf " << src_leaf;
    for (const auto& [link, dsts] : destinations) {
      std::set<std::size_t> leaves;
      for (const auto d : dsts) leaves.insert(d % 8);
      EXPECT_EQ(leaves.size(), dsts.size()) << "a link carries two destinations of one leaf";
    }
  }
}

TEST(Routing, RingOrderCrossesEachServerBoundaryOnce) {
  ClusterSpec c{.servers = 4,
                .hosts = 0,
                .server = server_preset("dgx-a100"),
                .fabric = {.shape = LeafSpineSpec{.hosts_per_leaf = 16}, .link_rate = 200_Gbps}};
  c.fabric.rail_optimized = false;
  const Topology t = build_cluster(c);
  const Routing r = Routing::compute(t);
  const auto ring = ring_order(t, r);
  ASSERT_EQ(ring.size(), 32u);
  int crossings = 0;
  for (std::size_t i = 0; i < ring.size(); ++i)
    crossings += t.node(ring[i]).server != t.node(ring[(i + 1) % ring.size()]).server;
  EXPECT_EQ(crossings, 4);
}

TEST(Servers, DgxA100MatrixShowsNV12AndItsPcieLayout) {
  const TopoMatrix m = topo_matrix(server_preset("dgx-a100"));
  ASSERT_EQ(m.devices.size(), 16u);
  // GPU0: NV12 to every GPU; PXB to NIC0/NIC1 on its PCIe switch; NODE to the other NICs of
  // socket 0; SYS to those of socket 1.
  EXPECT_EQ(row(m, 0), "X NV12 NV12 NV12 NV12 NV12 NV12 NV12 PXB PXB NODE NODE SYS SYS SYS SYS ");
  EXPECT_EQ(row(m, 8), "PXB PXB NODE NODE SYS SYS SYS SYS X PXB NODE NODE SYS SYS SYS SYS ");
  // DGX H100: NV18; GPU7 is PIX to its own NIC (NIC7) only, NODE to its socket's others, as
  // in the HGX H100 `nvidia-smi topo -m` fixture, which the preset reproduces exactly.
  const TopoMatrix h = topo_matrix(server_preset("dgx-h100"));
  EXPECT_EQ(row(h, 7), "NV18 NV18 NV18 NV18 NV18 NV18 NV18 X SYS SYS SYS SYS NODE NODE NODE PIX ");
}

TEST(Servers, MatrixRoundTripsThroughTextAndImport) {
  for (const auto& preset : server_preset_names()) {
    const ServerSpec s = server_preset(preset);
    const std::string text = format_topo_matrix(topo_matrix(s));
    const TopoMatrix parsed = parse_topo_matrix(text);
    EXPECT_EQ(parsed.relation, topo_matrix(s).relation) << preset;
    const ServerSpec imported = server_from_matrix(parsed, s);
    EXPECT_EQ(format_topo_matrix(topo_matrix(imported)), text) << preset;
  }
}

namespace {
std::string fixture(const std::string& name) {
  std::ifstream in(std::string(FABRICSIM_SOURCE_DIR) + "/tests/data/topo/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
std::string import_error(const std::string& name) {
  try {
    parse_topo_matrix(fixture(name));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}
}  // namespace

TEST(Servers, ImportsARealDgxA100DumpWithStorageNicsInNps4) {
  // mlx5_N column names, CPU/NUMA affinity columns, 10 NICs (8 compute + 2 storage), every
  // PCIe switch its own NUMA node: relations are PXB inside a switch and SYS across.
  const TopoMatrix m = parse_topo_matrix(fixture("dgx-a100-nps4.txt"));
  ASSERT_EQ(m.devices.size(), 18u);
  EXPECT_EQ(m.nic_names.front(), "mlx5_0");
  EXPECT_EQ(m.numa_affinity[0], "3");
  const ServerSpec s = server_from_matrix(m, server_preset("dgx-a100"));
  EXPECT_EQ(s.gpus.size(), 8u);
  // mlx5_8/9 share no PCIe switch with a GPU: storage NICs, kept aside, out of the fabric.
  EXPECT_EQ(s.nics.size(), 8u);
  EXPECT_EQ(s.storage_nic_names, (std::vector<std::string>{"mlx5_8", "mlx5_9"}));
  EXPECT_EQ(s.pcie_switches.size(), 5u);
  EXPECT_EQ(s.sockets, 5);
  EXPECT_EQ(s.nvlink_count(0, 5), 12);
  // 12 links per GPU, as many as the preset's 6 NVSwitches x 2: the preset's chip count stays.
  EXPECT_EQ(s.nvswitch_links, (std::vector<int>{2, 2, 2, 2, 2, 2}));
  EXPECT_EQ(s.gpus[0].pcie_switch, s.nics[1].pcie_switch);
  // NUMA nodes as printed (NPS4: 3, 1, 7, 5), NICs on their GPUs' node, CPU lists kept.
  EXPECT_EQ(s.gpus[2].numa, 1);
  EXPECT_EQ(s.nics[7].numa, 5);
  EXPECT_EQ(s.storage_nics[0].numa, -1);
  const TopoMatrix back = topo_matrix(s);
  EXPECT_EQ(back.relation, m.relation);  // export gives the same matrix back
  EXPECT_EQ(back.numa_affinity, m.numa_affinity);
  EXPECT_EQ(back.cpu_affinity, m.cpu_affinity);
  EXPECT_EQ(back.nic_names, m.nic_names);
  // Asked for, every NIC is a compute NIC; or exactly the ones named.
  EXPECT_EQ(server_from_matrix(m, server_preset("dgx-a100"),
                               {.compute_nics = {}, .include_storage_nics = true})
                .nics.size(),
            10u);
  const ServerSpec two =
      server_from_matrix(m, server_preset("dgx-a100"), {.compute_nics = {"mlx5_0", "mlx5_9"}});
  EXPECT_EQ(two.nic_names, (std::vector<std::string>{"mlx5_0", "mlx5_9"}));
  EXPECT_EQ(topo_matrix(two).relation, m.relation);
  EXPECT_THROW(server_from_matrix(m, server_preset("dgx-a100"), {.compute_nics = {"mlx5_10"}}),
               std::invalid_argument);
  // lspci's chip count, when given, splits the links: 12 over 4 chips is 3 each.
  EXPECT_EQ(server_from_matrix(m, server_preset("dgx-h100"), {.nvswitches = 4, .compute_nics = {}})
                .nvswitch_links,
            (std::vector<int>{3, 3, 3, 3}));
  EXPECT_EQ(spread_nvswitch_links(18, 4), (std::vector<int>{5, 5, 4, 4}));
}

TEST(Servers, GpusOfOneNumaNodeShareASocketWithoutNics) {
  // Two GPUs per NUMA node, NVLinked, no NIC: before NUMA affinity was read each GPU was its
  // own socket.
  const std::string text =
      "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tNV4\tNV4\tNV4\t0-15\t0\n"
      "GPU1\tNV4\t X \tNV4\tNV4\t0-15\t0\n"
      "GPU2\tNV4\tNV4\t X \tNV4\t16-31\t1\n"
      "GPU3\tNV4\tNV4\tNV4\t X \t16-31\t1\n";
  const ServerSpec s = server_from_matrix(parse_topo_matrix(text), server_preset("pcie-8gpu"));
  EXPECT_EQ(s.sockets, 2);
  EXPECT_EQ(s.socket_of(s.gpus[1]), s.socket_of(s.gpus[0]));
  EXPECT_NE(s.socket_of(s.gpus[2]), s.socket_of(s.gpus[0]));
  EXPECT_EQ(topo_matrix(s).numa_affinity[3], "1");
}

TEST(Servers, ImportsOldDriversAndNicLegends) {
  const TopoMatrix old = parse_topo_matrix(fixture("old-driver-pcie.txt"));
  EXPECT_EQ(old.relation[0][2], "SYS");  // SOC is the old name of SYS
  const ServerSpec s = server_from_matrix(old, server_preset("pcie-8gpu"));
  EXPECT_EQ(s.sockets, 2);
  EXPECT_EQ(s.nics[0].pcie_switch, -1);  // PHB: on the root complex
  EXPECT_EQ(s.nvlink_count(0, 1), 0);
  EXPECT_EQ(topo_matrix(s).relation, old.relation);
  const TopoMatrix h = parse_topo_matrix(fixture("hgx-h100-nic-legend.txt"));
  EXPECT_EQ(h.nic_names[1], "mlx5_3");
  EXPECT_EQ(h.nic_names[7], "mlx5_11");
  EXPECT_EQ(topo_matrix(server_from_matrix(h, server_preset("dgx-h100"))).relation, h.relation);
}

TEST(Servers, RejectsTextThatIsNotATopologyMatrix) {
  EXPECT_EQ(import_error("not-a-matrix.txt"),
            "line 1: no header row starting with GPU0: not `nvidia-smi topo -m` output");
  EXPECT_EQ(import_error("truncated.txt"), "line 3: GPU1 has 1 relations, expected 2");
  std::string bad = fixture("old-driver-pcie.txt");
  bad.replace(bad.find("PIX"), 3, "PCI");
  try {
    parse_topo_matrix(bad);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "line 2: unknown relation \"PCI\" between GPU0 and GPU1 (expected X, NV#, "
                 "PIX, PXB, PHB, NODE, SYS or SOC)");
  }
}

TEST(Servers, DgxH100PresetMatchesARealHgxH100Matrix) {
  // One PCIe switch per GPU with that GPU's compute NIC: GPU i PIX to NIC i, NODE to the other
  // NICs of its socket, SYS across; the preset's matrix equals the fixture's, relation by
  // relation (before 2026-12 the preset paired two GPUs with two NICs per switch).
  EXPECT_EQ(topo_matrix(server_preset("dgx-h100")).relation,
            parse_topo_matrix(fixture("hgx-h100-nic-legend.txt")).relation);
}

TEST(Servers, NcclXmlImportsARealH100DumpAndRoundTrips) {
  const ServerSpec s =
      import_nccl_xml(fixture("dgx-h100-nccl-topo.xml"), server_preset("dgx-a100"));
  EXPECT_EQ(s.gpus.size(), 8u);
  EXPECT_EQ(s.nics.size(), 8u);
  EXPECT_EQ(s.gpu_sm, 90);
  EXPECT_EQ(s.nvswitch_links, (std::vector<int>{5, 5, 4, 4}));
  EXPECT_EQ(s.nic_rate, 400_Gbps);
  EXPECT_EQ(s.gpu_pcie.generation, 5);
  EXPECT_EQ(s.sockets, 2);
  // This dump pairs two GPUs and two NICs per PCIe switch (unlike the DGX H100 preset, one
  // GPU and its NIC per switch): GPU0 is PIX to NIC0 and NIC1, NODE to NIC2 and NIC3.
  const TopoMatrix m = topo_matrix(s);
  EXPECT_EQ(m.relation[0][8], "PIX");
  EXPECT_EQ(m.relation[0][9], "PIX");
  EXPECT_EQ(m.relation[0][10], "NODE");
  EXPECT_EQ(m.relation[0][12], "SYS");
  // Export -> import -> export is stable, for every preset too.
  const std::string xml = export_nccl_xml(s);
  EXPECT_EQ(export_nccl_xml(import_nccl_xml(xml, s)), xml);
  for (const auto& preset : server_preset_names()) {
    const ServerSpec p = server_preset(preset);
    const ServerSpec back = import_nccl_xml(export_nccl_xml(p), p);
    EXPECT_EQ(topo_matrix(back).relation, topo_matrix(p).relation) << preset;
    EXPECT_EQ(export_nccl_xml(back), export_nccl_xml(p)) << preset;
  }
}

TEST(Servers, NcclXmlRejectsGarbage) {
  const auto error = [](std::string_view text) {
    try {
      import_nccl_xml(text, server_preset("dgx-a100"));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error("<topology><gpu/></topology>"), "no <system> element: not an NCCL topology file");
  EXPECT_EQ(error("<system version=\"1\"><cpu numaid=\"0\"></cpu></system>"),
            "the topology has no GPU and no NIC");
  EXPECT_NE(error("<system><cpu></system>").find("not valid XML"), std::string::npos);
  EXPECT_EQ(error("<system><cpu><pci class=\"0x030200\"><gpu sm=\"80\"/></pci></cpu></system>"),
            "a <gpu> element has no dev attribute");
}

TEST(HostPaths, NcclP2pLevelChoosesPeerToPeerOrHostMemoryPerGpuPair) {
  // paths.cc ncclTopoCheckP2p: P2P when the pair's path type is within NCCL_P2P_LEVEL (PXB by
  // default), else SHM through host memory. pcie-8gpu: GPUs 0 and 1 share a PCIe switch (PXB),
  // 0 and 2 meet at their CPU (PHB), 0 and 7 across the sockets (SYS). A DGX's GPUs share
  // NVLink (NVL), which every level but LOC allows.
  const auto gpus = [](const Topology& t) {
    std::vector<Vertex> out;
    for (auto [v, end] = boost::vertices(t.graph()); v != end; ++v)
      if (t.graph()[*v].kind == NodeKind::kGpu) out.push_back(*v);
    return out;
  };
  const Topology pcie = build_cluster({.servers = 1,
                                       .hosts = 0,
                                       .server = server_preset("pcie-8gpu"),
                                       .fabric = {.shape = StarSpec{}, .link_rate = 100_Gbps}});
  const auto g = gpus(pcie);
  ASSERT_EQ(g.size(), 8u);
  HostFabricParams p;
  EXPECT_EQ(p.gpu_path(pcie.graph(), g[0], g[1]), GpuPath::kPcieP2p);
  EXPECT_EQ(p.gpu_path(pcie.graph(), g[0], g[2]), GpuPath::kHostMemory);
  EXPECT_EQ(p.gpu_path(pcie.graph(), g[0], g[7]), GpuPath::kHostMemory);
  p.p2p_level = 8;  // PHB
  EXPECT_EQ(p.gpu_path(pcie.graph(), g[0], g[2]), GpuPath::kPcieP2p);
  EXPECT_EQ(p.gpu_path(pcie.graph(), g[0], g[7]), GpuPath::kHostMemory);
  p.p2p_level = 9;  // SYS
  EXPECT_EQ(p.gpu_path(pcie.graph(), g[0], g[7]), GpuPath::kPcieP2p);
  p.p2p_level = 0;  // LOC, NCCL_P2P_DISABLE=1
  EXPECT_EQ(p.gpu_path(pcie.graph(), g[0], g[1]), GpuPath::kHostMemory);

  const Topology dgx = build_cluster({.servers = 1,
                                      .hosts = 0,
                                      .server = server_preset("dgx-h100"),
                                      .fabric = {.shape = StarSpec{}, .link_rate = 400_Gbps}});
  const auto d = gpus(dgx);
  HostFabricParams q;
  EXPECT_EQ(q.gpu_path(dgx.graph(), d[0], d[7]), GpuPath::kNvLink);
  q.p2p_level = 1;  // NVL
  EXPECT_EQ(q.gpu_path(dgx.graph(), d[0], d[7]), GpuPath::kNvLink);
  q.p2p_level = 0;
  EXPECT_EQ(q.gpu_path(dgx.graph(), d[0], d[7]), GpuPath::kHostMemory);
}
