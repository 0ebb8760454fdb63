#include "scenario/scenario.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <sstream>

#include "models/transport/dcqcn_paper.hpp"
#include "models/transport/dctcp.hpp"
#include "net/port.hpp"
#include "topo/nccl_xml.hpp"

namespace fabricsim {

namespace {

// The Ethernet + IPv4 + UDP + IB BTH + ICRC + FCS headers of a RoCEv2 packet (14+20+8+12+4+4 =
// 62 B) plus preamble/SFD (8 B) and the minimum inter-frame gap (12 B): 82 B on the wire per
// packet. This is the default per-packet overhead; other transports set `header` explicitly.
constexpr Bytes kRoceV2WireOverhead{82};

TrafficPattern to_pattern(const std::string& s) {
  if (s == "permutation") return TrafficPattern::kPermutation;
  if (s == "all-to-all") return TrafficPattern::kAllToAll;
  return TrafficPattern::kIncast;
}

FabricKind to_kind(const std::string& s) {
  if (s == "ring") return FabricKind::kRing;
  if (s == "leaf-spine") return FabricKind::kLeafSpine;
  if (s == "fat-tree") return FabricKind::kFatTree;
  return FabricKind::kStar;
}

PathSelection to_selection(const std::string& s) {
  if (s == "spray") return PathSelection::kSpray;
  if (s == "dmodk") return PathSelection::kDestModK;
  return PathSelection::kHash;
}

template <class T>
T read_file_or_report(ConfigReader& r, std::string_view key, const std::filesystem::path& path,
                      T (*import)(std::string_view, const ServerSpec&),
                      const ServerSpec& defaults) {
  try {
    return import(read_input_file(path, "topology file"), defaults);
  } catch (const ConfigError& e) {
    r.error(key, e.what());
  } catch (const std::invalid_argument& e) {
    r.error(key, fmt::format("{}: {}", path.string(), e.what()));
  }
  return defaults;
}

ServerSpec matrix_import(std::string_view text, const ServerSpec& defaults) {
  return server_from_matrix(parse_topo_matrix(text), defaults);
}

// Any server written out in TOML: every key overrides the preset (or imported layout) value.
void read_server_layout(ConfigReader& sv, ServerSpec& server) {
  for (const char* key :
       {"gpu_name", "gpu_sm", "sockets", "cores_per_socket", "inter_socket_rate", "pcie_generation",
        "pcie_width", "pcie_latency", "nvlink_rate", "nvlink_latency", "pcie_switch_sockets",
        "pcie_switch_levels", "gpu_pcie_switch", "nic_pcie_switch", "nic_names", "nvswitch_links"})
    if (sv.has(key)) server.model = "custom";
  const auto to_int = [](const std::vector<std::int64_t>& v) {
    return std::vector<int>(v.begin(), v.end());
  };
  server.gpu_name = sv.string("gpu_name", server.gpu_name);
  server.gpu_sm = static_cast<int>(sv.integer("gpu_sm", server.gpu_sm, 10, 200));
  server.sockets = static_cast<int>(sv.integer("sockets", server.sockets, 1, 16));
  server.cores_per_socket =
      static_cast<int>(sv.integer("cores_per_socket", server.cores_per_socket, 1, 4096));
  server.inter_socket_rate = sv.bandwidth("inter_socket_rate", server.inter_socket_rate);
  const int generation =
      static_cast<int>(sv.integer("pcie_generation", server.gpu_pcie.generation, 1, 6));
  const int width = static_cast<int>(sv.integer("pcie_width", server.gpu_pcie.width, 1, 32));
  server.gpu_pcie = server.nic_pcie = server.uplink_pcie = PcieLink{generation, width};
  server.pcie_latency = sv.time("pcie_latency", server.pcie_latency, false);
  server.nvlink_rate = sv.bandwidth("nvlink_rate", server.nvlink_rate);
  server.nvlink_latency = sv.time("nvlink_latency", server.nvlink_latency, false);

  std::vector<std::int64_t> sw_sockets, gpu_sw, nic_sw;
  for (const auto& p : server.pcie_switches) sw_sockets.push_back(p.socket);
  for (const auto& g : server.gpus) gpu_sw.push_back(g.pcie_switch);
  for (const auto& n : server.nics) nic_sw.push_back(n.pcie_switch);
  sw_sockets = sv.integer_list("pcie_switch_sockets", sw_sockets, 0, server.sockets - 1);
  const int levels = static_cast<int>(
      sv.integer("pcie_switch_levels",
                 server.pcie_switches.empty() ? 1 : server.pcie_switches[0].levels, 1, 2));
  const auto switches = static_cast<std::int64_t>(sw_sockets.size());
  gpu_sw = sv.integer_list("gpu_pcie_switch", gpu_sw, -1, switches - 1);
  nic_sw = sv.integer_list("nic_pcie_switch", nic_sw, -1, switches - 1);
  server.pcie_switches.clear();
  for (const auto socket : sw_sockets)
    server.pcie_switches.push_back({static_cast<int>(socket), levels});
  server.gpus.clear();
  for (const auto sw : gpu_sw) server.gpus.push_back({static_cast<int>(sw), 0});
  server.nics.clear();
  for (const auto sw : nic_sw) server.nics.push_back({static_cast<int>(sw), 0});
  std::vector<std::string> names = server.nic_names;
  names.resize(server.nics.size());
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i].empty()) names[i] = fmt::format("mlx5_{}", i);
  server.nic_names = sv.string_list("nic_names", names);
  if (server.nic_names.size() != server.nics.size())
    sv.error("nic_names",
             fmt::format("has {} names for {} NICs", server.nic_names.size(), server.nics.size()));
  if (sv.has("nvswitch_links")) {
    server.nvswitch_links = to_int(sv.integer_list("nvswitch_links", {}, 0, 64));
    server.nvlink_pairs.clear();
  } else if (server.nvlink_pairs.empty()) {
    std::vector<std::int64_t> links(server.nvswitch_links.begin(), server.nvswitch_links.end());
    server.nvswitch_links = to_int(sv.integer_list("nvswitch_links", links, 0, 64));
  }
  if (!server.nvlink_pairs.empty() && server.nvlink_pairs.size() != server.gpus.size())
    server.nvlink_pairs.assign(server.gpus.size(), std::vector<int>(server.gpus.size(), 0));
}

void read_server(ConfigReader& sv, Scenario& s) {
  const std::vector<std::string> presets = server_preset_names();
  const auto smi = sv.file("nvidia_smi");
  const auto xml = sv.file("nccl_xml");
  const std::string preset = sv.choice("preset", "dgx-a100", presets);
  ServerSpec server = server_preset(preset);
  if (smi && xml)
    sv.error("nccl_xml", "give either server.nvidia_smi or server.nccl_xml, not both");
  // An imported layout keeps the preset's rates and latencies for what the file does not say.
  if (smi) server = read_file_or_report(sv, "nvidia_smi", *smi, matrix_import, server);
  if (xml) server = read_file_or_report(sv, "nccl_xml", *xml, import_nccl_xml, server);
  server.nic_rate = sv.bandwidth("nic_rate", server.nic_rate);
  read_server_layout(sv, server);
  s.cluster.servers = static_cast<int>(sv.integer("count", std::nullopt, 1, 1 << 20));
  HostFabricParams& h = s.network.host;
  s.network.host_side = sv.boolean("host_side", true);
  h.pcie_max_payload = sv.bytes("pcie_max_payload", h.pcie_max_payload, false);
  h.pcie_tlp_overhead = sv.bytes("pcie_tlp_overhead", h.pcie_tlp_overhead, true);
  h.host_memory_rate = sv.bandwidth("host_memory_rate", h.host_memory_rate);
  h.nvlink_max_payload = sv.bytes("nvlink_max_payload", h.nvlink_max_payload, false);
  h.nvlink_overhead = sv.bytes("nvlink_overhead", h.nvlink_overhead, true);
  s.cluster.server = std::move(server);
  s.analysis.nic_rate = s.cluster.server.nic_rate;
}

void read_fabric(ConfigReader& fab, Scenario& s, bool has_servers) {
  FabricSpec& f = s.cluster.fabric;
  const std::string kind = fab.choice("kind", "star", {"star", "ring", "leaf-spine", "fat-tree"});
  f.kind = to_kind(kind);
  if (has_servers) {
    fab.not_applicable({"hosts"}, "the endpoints are the NICs of [server]");
  } else {
    s.cluster.hosts = static_cast<int>(fab.integer("hosts", std::nullopt, 2, 1 << 20));
  }
  f.technology = fab.choice("technology", "ethernet", {"ethernet", "infiniband"}) == "infiniband"
                     ? Technology::kInfiniband
                     : Technology::kEthernet;
  f.link_rate = fab.bandwidth("link_rate", std::nullopt);
  f.switch_ports = static_cast<int>(fab.integer("switch_ports", 0, 0, 65535));
  f.switch_latency = fab.time("switch_latency", Time::from_ps(300'000), true);
  f.host_cable_m = fab.length_m("host_cable_length", 3.0);
  f.fabric_cable_m = fab.length_m("fabric_cable_length", 30.0);
  f.propagation_per_m = fab.time("propagation_per_m", Time::from_ps(5'000), false);
  const std::string why = fmt::format("fabric.kind is \"{}\"", kind);
  if (f.kind == FabricKind::kRing) {
    f.ring_switches = static_cast<int>(fab.integer("ring_switches", std::nullopt, 3, 65535));
  } else {
    fab.not_applicable({"ring_switches"}, why);
  }
  if (f.kind == FabricKind::kLeafSpine) {
    f.hosts_per_leaf = static_cast<int>(fab.integer("hosts_per_leaf", std::nullopt, 1, 65535));
    f.spines = static_cast<int>(fab.integer("spines", 0, 0, 65535));
    f.uplinks_per_leaf = static_cast<int>(fab.integer("uplinks_per_leaf", 0, 0, 65535));
    f.oversubscription = fab.real("oversubscription", 1.0, 1.0, 1024.0);
  } else {
    fab.not_applicable({"hosts_per_leaf", "spines", "uplinks_per_leaf", "oversubscription"}, why);
  }
  if (f.kind == FabricKind::kFatTree) {
    f.k = static_cast<int>(fab.integer("k", std::nullopt, 2, 65534));
  } else {
    fab.not_applicable({"k"}, why);
  }
  f.rail_optimized = fab.boolean("rail_optimized", false);
  s.network.path_selection =
      to_selection(fab.choice("routing", "ecmp", {"ecmp", "spray", "dmodk"}));
  // Spraying spreads a flow's packets over every equal-cost port; the flow level has one path
  // per flow and would put every sprayed flow on the same one (silently colliding them all).
  if (s.network.path_selection == PathSelection::kSpray && s.fidelity == Fidelity::kFlow)
    fab.error("routing",
              "\"spray\" is per packet: it needs fidelity = \"packet\" (the flow "
              "level routes each flow on one path; use \"ecmp\" or \"dmodk\")");
  s.network.switch_latency = f.switch_latency;
}

std::uint8_t priority_mask(ConfigReader& r, std::string_view key,
                           std::vector<std::int64_t> fallback) {
  std::uint8_t mask = 0;
  for (const auto p : r.integer_list(key, std::move(fallback), 0, 7))
    mask |= static_cast<std::uint8_t>(1u << p);
  return mask;
}

void read_nic(ConfigReader& nic, Scenario& s) {
  RdmaConfig& n = s.network.nic;
  const bool tcp = nic.choice("transport", "rdma", {"rdma", "tcp"}) == "tcp";
  n.transport = tcp ? Transport::kTcp : Transport::kRdma;
  n.format.mtu = nic.bytes("mtu", Bytes(4096), false);
  // InfiniBand: LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B per packet (no preamble, no gap);
  // RoCEv2 pays 82 B (see kRoceV2WireOverhead).
  const bool infiniband = s.cluster.fabric.technology == Technology::kInfiniband;
  // TCP over Ethernet: Eth 14 + IPv4 20 + TCP 32 (with timestamps) + FCS 4 + preamble 8 + IFG 12.
  const Bytes default_header = tcp ? Bytes(90) : infiniband ? Bytes(26) : kRoceV2WireOverhead;
  n.format.header = nic.bytes("header", default_header, true);
  if (n.format.mtu > Bytes(1 << 20))
    nic.error("mtu", fmt::format("must be at most 1MiB, got \"{}\"", to_string(n.format.mtu)));
  n.control_bytes = nic.bytes("control_packet",
                              tcp          ? Bytes(90)
                              : infiniband ? Bytes(30)
                                           : Bytes(86),
                              false);
  // Defaults from the struct (one source; their citations are there).
  const RdmaConfig defaults{};
  n.priority =
      static_cast<std::uint8_t>(nic.integer("priority", tcp ? 0 : defaults.priority, 0, 7));
  n.cnp_priority =
      static_cast<std::uint8_t>(nic.integer("cnp_priority", defaults.cnp_priority, 0, 7));
  n.ack_interval = static_cast<int>(nic.integer("ack_interval", defaults.ack_interval, 1, 1 << 20));
  n.out_of_order_placement = nic.boolean("out_of_order_placement", defaults.out_of_order_placement);
  n.ib_timeout = static_cast<int>(nic.integer("ib_timeout", defaults.ib_timeout, 0, 31));
  n.ib_retry_cnt = static_cast<int>(nic.integer("ib_retry_cnt", defaults.ib_retry_cnt, 0, 7));
  n.message_overhead = nic.time("message_overhead", Time::zero(), true);
  n.message_rate_mpps = nic.real("message_rate_mpps", 0.0, 0.0, 1e6);
  s.network.host.gpudirect = nic.boolean("gpudirect", true);
  const std::string level = nic.choice("gdr_level", "PXB", {"PIX", "PXB", "PHB", "NODE", "SYS"});
  s.network.host.gdr_level = level == "SYS"                      ? PcieDistance::kSys
                             : level == "PHB" || level == "NODE" ? PcieDistance::kPhb
                                                                 : PcieDistance::kPxb;
  {
    ConfigReader t = nic.table("tcp");
    if (!tcp && nic.has("tcp")) t.error("congestion", "applies only to nic.transport = \"tcp\"");
    const bool dctcp = t.choice("congestion", "newreno", {"newreno", "dctcp"}) == "dctcp";
    if (tcp) n.congestion = dctcp ? &kDctcp : &kNewReno;
    n.newreno.initial_window =
        static_cast<int>(t.integer("initial_window", n.newreno.initial_window, 1, 1 << 16));
    n.tcp.min_rto = t.time("min_rto", n.tcp.min_rto, false);
    n.dctcp.g = t.real("dctcp_g", n.dctcp.g, 0.0, 1.0);
    n.tcp.host_latency = t.time("host_latency", n.tcp.host_latency, true);
    t.finish();
  }
  ConfigReader d = nic.table("dcqcn");
  DcqcnConfig& c = n.dcqcn;
  const bool dcqcn = d.boolean("enabled", false);
  // The ConnectX firmware's rules (models/transport/dcqcn.hpp) or the paper's
  // (models/transport/dcqcn_paper.hpp).
  const bool paper = d.choice("variant", "firmware", {"firmware", "paper"}) == "paper";
  if (dcqcn && tcp)
    d.error("enabled",
            "DCQCN is RoCE's congestion control; with nic.transport = \"tcp\" choose "
            "nic.tcp.congestion (\"newreno\" or \"dctcp\")");
  if (dcqcn && !tcp) n.congestion = paper ? &kDcqcnPaper : &kDcqcnFirmware;
  c.rpg_time_reset = d.time("rpg_time_reset", c.rpg_time_reset, false);
  c.rpg_threshold = static_cast<int>(d.integer("rpg_threshold", c.rpg_threshold, 0, 1000));
  c.rpg_ai_rate = d.bandwidth("rpg_ai_rate", c.rpg_ai_rate);
  c.rpg_hai_rate = d.bandwidth("rpg_hai_rate", c.rpg_hai_rate);
  c.rpg_min_rate = d.bandwidth("rpg_min_rate", c.rpg_min_rate);
  c.dce_tcp_g = d.real("dce_tcp_g", c.dce_tcp_g, 0.0, 1.0);
  c.dce_tcp_rtt = d.time("dce_tcp_rtt", c.dce_tcp_rtt, false);
  c.initial_alpha = d.real("initial_alpha", c.initial_alpha, 0.0, 1.0);
  c.min_time_between_cnps = d.time("min_time_between_cnps", c.min_time_between_cnps, true);
  if (paper) {
    c.rpg_byte_reset = d.bytes("rpg_byte_reset", c.rpg_byte_reset, false);
    d.not_applicable({"rate_reduce_monitor_period", "rate_to_set_on_first_cnp", "clamp_tgt_rate"},
                     "the paper variant cuts the rate on every CNP and always sets RT = RC "
                     "(nic.dcqcn.variant = \"paper\")");
  } else {
    c.rate_reduce_monitor_period =
        d.time("rate_reduce_monitor_period", c.rate_reduce_monitor_period, false);
    c.rate_to_set_on_first_cnp = d.bandwidth("rate_to_set_on_first_cnp", Bandwidth{}, true);
    c.clamp_tgt_rate = d.boolean("clamp_tgt_rate", c.clamp_tgt_rate);
    d.not_applicable({"rpg_byte_reset"},
                     "the byte counter is part of nic.dcqcn.variant = \"paper\" only");
  }
  d.finish();
}

void read_switch(ConfigReader& sw, Scenario& s) {
  BufferConfig& b = s.network.buffer;
  b.buffer = sw.bytes("buffer", Bytes(32LL << 20), false);
  b.reserved = sw.bytes("reserved", Bytes(4096), true);
  b.alpha = sw.real("alpha", 0.125, 1.0 / 1024, 64.0);
  b.resume_offset = sw.bytes("resume_offset", Bytes(3072), true);
  b.pfc = sw.boolean("pfc", false);
  const bool infiniband = s.cluster.fabric.technology == Technology::kInfiniband;
  if (infiniband) {
    // InfiniBand is lossless by credits; PFC and ECN are Ethernet mechanisms.
    b.vl_credits = sw.bytes("vl_buffer", Bytes(64 * 1024), false);
    if (b.pfc)
      sw.error(
          "pfc",
          "PFC does not apply to fabric.technology = \"infiniband\" (credit-based flow control)");
  } else {
    sw.not_applicable({"vl_buffer"},
                      "credit-based flow control is for fabric.technology = \"infiniband\"");
  }
  b.lossless = priority_mask(sw, "lossless_priorities", {3});
  b.pause_quanta = static_cast<std::uint16_t>(sw.integer("pause_quanta", 0xffff, 1, 0xffff));
  b.pfc_xoff = sw.bytes("pfc_xoff", Bytes(0), true);
  b.pfc_xon = sw.bytes("pfc_xon", Bytes(0), true);
  if (b.pfc_xoff > Bytes(0) && b.pfc_xon >= b.pfc_xoff)
    sw.error("pfc_xon", fmt::format("must be below switch.pfc_xoff ({})", to_string(b.pfc_xoff)));
  if (sw.choice("scheduling", "strict", {"strict", "dwrr"}) == "dwrr") {
    b.strict = priority_mask(sw, "strict_priorities", {6, 7});
    const auto weights = sw.integer_list("dwrr_weights", {1, 1, 1, 1, 1, 1, 1, 1}, 1, 1000);
    if (weights.size() != 8) {
      sw.error("dwrr_weights",
               fmt::format("needs 8 weights, one per priority, got {}", weights.size()));
    } else {
      for (std::size_t i = 0; i < 8; ++i) b.dwrr_weight[i] = static_cast<int>(weights[i]);
    }
  } else {
    sw.not_applicable({"strict_priorities", "dwrr_weights"}, "switch.scheduling is \"strict\"");
  }
  b.pfc_watchdog = sw.time("pfc_watchdog", Time::zero(), true);
  b.pfc_watchdog_drop = sw.choice("pfc_watchdog_action", "drop", {"drop", "ignore"}) == "drop";
  // Headroom: what can still arrive after XOFF is sent, for the longest cable at the link rate
  // (802.1Qbb Annex O style): the pause frame and the largest frame being sent when it is
  // generated, the cable round trip, the upstream's response time, and the frame it is
  // sending when the pause arrives.
  const FabricSpec& f = s.cluster.fabric;
  const double cable_m = std::max(f.host_cable_m, f.fabric_cable_m);
  const Time response = sw.time("pause_response_time", Time::from_ps(1'000'000), true);
  const Time round_trip = Time::from_ps(static_cast<Time::rep>(
                              2 * cable_m * static_cast<double>(f.propagation_per_m.ps()))) +
                          response;
  const Bytes frame = s.network.nic.format.mtu + s.network.nic.format.header;
  const Bytes automatic = kPauseFrameWireBytes + frame * 2 + bytes_in(round_trip, f.link_rate);
  b.headroom = sw.has("headroom") ? sw.bytes("headroom", std::nullopt, true) : automatic;
  if (!sw.has("headroom")) (void)sw.bytes("headroom", automatic, true);
  b.ecn.enabled = sw.boolean("ecn", false);
  if (infiniband && b.ecn.enabled)
    sw.error("ecn", "ECN marking is not modelled for InfiniBand switches");
  b.ecn.kmin = sw.bytes("ecn_kmin", Bytes(100'000), true);
  b.ecn.kmax = sw.bytes("ecn_kmax", Bytes(400'000), false);
  b.ecn.pmax = sw.real("ecn_pmax", 0.2, 0.0, 1.0);
  b.ecn_priorities = priority_mask(sw, "ecn_priorities", {s.network.nic.priority});
  if (b.ecn.kmax <= b.ecn.kmin)
    sw.error("ecn_kmax", fmt::format("must be above switch.ecn_kmin ({})", to_string(b.ecn.kmin)));
}

// NCCL's environment under its own names (they override the [nic] keys they correspond to),
// and the collective model's settings.
void read_nccl(ConfigReader& r, Scenario& s) {
  NcclConfig& c = s.nccl;
  if (r.has("NCCL_ALGO"))
    c.algo = parse_algo(r.choice("NCCL_ALGO", std::nullopt, {"Ring", "Tree", "ring", "tree"}));
  if (r.has("NCCL_PROTO"))
    c.proto = parse_proto(
        r.choice("NCCL_PROTO", std::nullopt, {"LL", "LL128", "Simple", "ll", "ll128", "simple"}));
  c.buffsize = r.byte_count("NCCL_BUFFSIZE", c.buffsize);
  c.ll_buffsize = r.byte_count("NCCL_LL_BUFFSIZE", c.ll_buffsize);
  c.ll128_buffsize = r.byte_count("NCCL_LL128_BUFFSIZE", c.ll128_buffsize);
  c.min_channels = static_cast<int>(r.integer("NCCL_MIN_NCHANNELS", 0, 0, 64));
  c.max_channels = static_cast<int>(r.integer("NCCL_MAX_NCHANNELS", 0, 0, 64));
  if (c.max_channels > 0 && c.min_channels > c.max_channels)
    r.error("NCCL_MIN_NCHANNELS",
            fmt::format("must not exceed NCCL_MAX_NCHANNELS ({})", c.max_channels));
  c.cross_nic = static_cast<int>(r.integer("NCCL_CROSS_NIC", 2, 0, 2));
  c.channels_per_net_peer = static_cast<int>(r.integer("NCCL_NCHANNELS_PER_NET_PEER", 0, 0, 64));
  s.network.host.pxn = r.integer("NCCL_PXN_DISABLE", 0, 0, 1) == 0;
  if (r.has("NCCL_NET_GDR_LEVEL")) {
    const std::string level =
        r.choice("NCCL_NET_GDR_LEVEL", std::nullopt, {"LOC", "PIX", "PXB", "PHB", "SYS"});
    s.network.host.gpudirect = level != "LOC";
    s.network.host.gdr_level = level == "SYS"   ? PcieDistance::kSys
                               : level == "PHB" ? PcieDistance::kPhb
                                                : PcieDistance::kPxb;
  }
  if (r.has("gpudirect")) s.network.host.gpudirect = r.boolean("gpudirect", true);
  if (r.has("NCCL_IB_TIMEOUT"))
    s.network.nic.ib_timeout =
        static_cast<int>(r.integer("NCCL_IB_TIMEOUT", RdmaConfig{}.ib_timeout, 1, 31));
  if (r.has("NCCL_IB_RETRY_CNT"))
    s.network.nic.ib_retry_cnt =
        static_cast<int>(r.integer("NCCL_IB_RETRY_CNT", RdmaConfig{}.ib_retry_cnt, 0, 7));
  const auto topo_file = r.file("NCCL_TOPO_FILE");
  if (topo_file) {
    // NCCL reads it as its view of the node; it must be a topology NCCL can load.
    c.topo_file = topo_file->string();
    (void)read_file_or_report(r, "NCCL_TOPO_FILE", *topo_file, import_nccl_xml, s.cluster.server);
  }
  // A topology file gives NCCL the fabric's structure: servers under one leaf go adjacent.
  if (r.has("server_order") && r.has("server_list"))
    r.error("server_list", "give either nccl.server_order or nccl.server_list");
  c.server_list.clear();
  for (auto v : r.integer_list("server_list", {}, 0, 1 << 20))
    c.server_list.push_back(static_cast<int>(v));
  if (!c.server_list.empty())
    c.server_order = ServerOrder::kList;
  else
    c.server_order =
        r.choice("server_order", topo_file ? "leaf" : "hostfile", {"hostfile", "leaf"}) == "leaf"
            ? ServerOrder::kLeaf
            : ServerOrder::kHostfile;
  c.ll128_enabled = r.boolean("ll128", true);
  {
    ConfigReader lat = r.table("step_latency");
    const char* protos[] = {"ll", "ll128", "simple"};
    const char* links[] = {"nvlink", "pcie", "net"};
    for (int p = 0; p < 3; ++p)
      for (int l = 0; l < 3; ++l) {
        const Time t = lat.time(fmt::format("{}_{}", protos[p], links[l]),
                                Time::from_ps(std::llround(c.step_latency_us[p][l] * 1e6)), true);
        c.step_latency_us[p][l] = t.us();
      }
    lat.finish();
    ConfigReader launch = r.table("launch_latency");
    for (int p = 0; p < 3; ++p)
      c.launch_latency_us[p] =
          launch.time(protos[p], Time::from_ps(std::llround(c.launch_latency_us[p] * 1e6)), true)
              .us();
    launch.finish();
  }
  const std::vector<std::string> gpus = gpu_preset_names();
  const std::string fallback =
      s.cluster.servers > 0 && s.cluster.server.gpu_sm >= 90 ? "h100" : "a100";
  s.gpu = gpu_preset(r.choice("gpu", fallback, gpus));
  s.gpu.hbm = r.bandwidth("gpu_hbm", s.gpu.hbm);
  s.gpu.channel = r.bandwidth("gpu_channel_rate", s.gpu.channel);
  s.gpu.sms = static_cast<int>(r.integer("gpu_sms", s.gpu.sms, 1, 4096));
}

// A training step ([workload]); compute times given, or derived from a sustained GPU rate:
// forward = 2 P t / (g r), backward = 2 x forward (t tokens per server per step, g GPUs per
// server sharing the model by tensor parallelism, r the sustained FLOP rate per GPU).
void read_workload(ConfigReader& w, Scenario& s) {
  WorkloadSpec& k = s.workload;
  k.model_params = w.real("model_params", 0.0, 0.0, 1e15);
  const int servers = std::max(1, s.cluster.servers);
  const int gpus = s.cluster.servers > 0 ? static_cast<int>(s.cluster.server.gpus.size()) : 1;
  k.pipeline_stages = static_cast<int>(w.integer("pipeline_stages", 1, 1, 1 << 16));
  if (servers % k.pipeline_stages != 0)
    w.error("pipeline_stages",
            fmt::format("must divide the {} servers (stages of equal size)", servers));
  k.micro_batches = static_cast<int>(w.integer("micro_batches", 1, 1, 1 << 20));
  // Sequence shape: tokens per step = micro-batches x micro-batch size x sequence length x
  // data-parallel replicas; stage-to-stage activations per GPU = sequence length x micro-batch
  // size x hidden size x bytes per element / GPUs per server (Megatron's scatter-gather of
  // pipeline tensors across the tensor-parallel ranks).
  const auto seq = w.integer("sequence_length", 0, 0, 1LL << 30);
  const auto mbs = w.integer("micro_batch_size", 1, 1, 1LL << 30);
  const auto hidden = w.integer("hidden_size", 0, 0, 1LL << 30);
  const auto element = w.integer("activation_bytes_per_element", 2, 1, 16);
  const int replicas = servers / std::max(1, k.pipeline_stages);
  const std::int64_t derived_tokens = seq * mbs * k.micro_batches * replicas;
  k.tokens_per_step = static_cast<std::uint64_t>(w.integer(
      "tokens_per_step", seq > 0 ? std::optional<std::int64_t>(derived_tokens) : std::nullopt, 1,
      1LL << 50));
  const std::int64_t derived_pp = hidden > 0 ? seq * mbs * hidden * element / gpus : 0;
  k.pp_bytes = static_cast<std::uint64_t>(w.bytes("pp_bytes", Bytes(derived_pp), true).count());
  if (w.has("sustained_tflops")) {
    const double rate = w.real("sustained_tflops", std::nullopt, 0.001, 1e6) * 1e12;
    if (k.model_params <= 0)
      w.error("model_params", "is needed to derive compute time from workload.sustained_tflops");
    const double tokens = static_cast<double>(k.tokens_per_step) / servers;
    const double forward_s = 2 * k.model_params * tokens / (gpus * rate);
    k.forward = Time::from_ps(static_cast<Time::rep>(std::llround(forward_s * 1e12)));
    k.backward = k.forward * 2;
    w.not_applicable({"forward_time", "backward_time"}, "workload.sustained_tflops derives them");
  } else {
    k.forward = w.time("forward_time", std::nullopt, false);
    k.backward = w.time("backward_time", std::nullopt, false);
  }
  k.optimizer = w.time("optimizer_time", Time::zero(), true);
  k.gradient_bytes = static_cast<std::uint64_t>(w.bytes("gradient_bytes", Bytes(0), true).count());
  k.buckets = static_cast<int>(w.integer("buckets", 4, 1, 4096));
  k.tp_bytes = static_cast<std::uint64_t>(w.bytes("tp_bytes", Bytes(0), true).count());
  k.tp_collectives =
      static_cast<int>(w.integer("tp_collectives", k.tp_bytes > 0 ? 2 : 0, 0, 1 << 20));
  if (k.tp_bytes > 0 && k.tp_collectives == 0)
    w.error("tp_collectives", "must be at least 1 when workload.tp_bytes is set");
  k.steps = static_cast<int>(w.integer("steps", 1, 1, 1'000'000));
  const auto slow =
      w.integer_list("slow_gpus", {}, 0, static_cast<std::int64_t>(servers) * gpus - 1);
  const double slow_speed = w.real("slow_gpu_speed", 1.0, 0.01, 100.0);
  k.gpu_speed.assign(static_cast<std::size_t>(servers * gpus), 1.0);
  for (auto g : slow) k.gpu_speed[static_cast<std::size_t>(g)] = slow_speed;
}

void read_prices(ConfigReader& pr, Scenario& s) {
  const auto price = [&](std::string_view key) { return pr.optional_real(key, 0.0, 1e12); };
  Prices& p = s.analysis.prices;
  p.server = price("server");
  p.switch_unit = price("switch");
  p.nic = price("nic");
  p.copper_cable = price("copper_cable");
  p.optical_cable = price("optical_cable");
  p.transceiver = price("transceiver");
  s.analysis.copper_max_m = pr.length_m("copper_max_length", 3.0);
}

}  // namespace

Scenario read_scenario(const ConfigDocument& doc, std::string default_name) {
  Scenario s;
  std::vector<std::string> errors;
  ConfigReader root(&doc.root(), "", doc.file().string(), errors, s.resolved, s.positions);

  s.name = root.string("name", default_name);
  // The name becomes a folder under results/: one plain path component, short enough to read.
  if (s.name.empty() || s.name.size() > kMaxScenarioNameLength ||
      s.name.find_first_of("/\\") != std::string::npos || s.name == "." ||
      s.name.find("..") != std::string::npos ||
      std::any_of(s.name.begin(), s.name.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    root.error("name", fmt::format("must be 1 to {} characters without '/', '\\', '..' or control "
                                   "characters (it names the folder results/<name>/)",
                                   kMaxScenarioNameLength));
  s.description = root.string("description", "");
  s.seed = static_cast<std::uint64_t>(
      root.integer("seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
  s.fidelity = root.choice("fidelity", "packet", {"packet", "flow"}) == "flow" ? Fidelity::kFlow
                                                                               : Fidelity::kPacket;
  if (root.has("flow")) {
    // Per link class efficiency of the flow level, from calibration (absent: none).
    ConfigReader fl = root.table("flow");
    FlowEfficiency& e = s.flow_efficiency;
    if (fl.has("efficiency_nvlink")) e.nvlink = fl.real("efficiency_nvlink", 1.0, 0.01, 1.0);
    if (fl.has("efficiency_pcie")) e.pcie = fl.real("efficiency_pcie", 1.0, 0.01, 1.0);
    if (fl.has("efficiency_network")) e.network = fl.real("efficiency_network", 1.0, 0.01, 1.0);
    const std::string g = fl.choice("collectives", "auto", {"auto", "slices", "streams"});
    s.execution.granularity = g == "slices"    ? Granularity::kSlices
                              : g == "streams" ? Granularity::kStreams
                                               : Granularity::kAuto;
    s.execution.stream_above = static_cast<std::uint64_t>(
        fl.integer("stream_above_primitives", static_cast<std::int64_t>(s.execution.stream_above),
                   0, std::numeric_limits<std::int64_t>::max()));
    fl.finish();
  }

  {
    ConfigReader sim = root.table("simulation");
    s.simulation.stop_time = sim.time("stop_time", Time::from_ps(1'000'000'000'000), false);
    s.simulation.sample_interval = sim.time("sample_interval", Time::zero(), true);
    s.simulation.timeseries = sim.string_list("timeseries", {});
    s.simulation.deadlock_check_interval =
        sim.time("deadlock_check_interval", Time::from_ps(50'000'000), true);
    s.simulation.no_progress_timeout =
        sim.time("no_progress_timeout", Time::from_ps(1'000'000'000'000), true);
    s.simulation.seeds = static_cast<int>(sim.integer("seeds", 1, 1, 1000));
    if (!s.simulation.timeseries.empty() && s.simulation.sample_interval == Time::zero())
      sim.error("sample_interval",
                "must be set (e.g. \"1us\") when simulation.timeseries selects gauges to record");
    sim.finish();
  }
  const bool has_servers = root.has("server");
  if (has_servers) {
    ConfigReader sv = root.table("server");
    read_server(sv, s);
    sv.finish();
  }
  {
    ConfigReader fab = root.table("fabric");
    read_fabric(fab, s, has_servers);
    fab.finish();
  }
  s.has_traffic = root.has("traffic");
  if (s.has_traffic) {
    ConfigReader tr = root.table("traffic");
    s.traffic.pattern =
        to_pattern(tr.choice("pattern", "incast", {"incast", "permutation", "all-to-all"}));
    s.traffic.message_size = tr.bytes("message_size", std::nullopt, false);
    s.traffic.messages_per_destination =
        static_cast<std::uint32_t>(tr.integer("messages", 1, 1, 1'000'000));
    s.traffic.shift = static_cast<std::uint32_t>(tr.integer("shift", 1, 1, 1 << 20));
    s.traffic.mean_gap = tr.time("mean_gap", Time::zero(), true);
    s.traffic.start_jitter = tr.time("start_jitter", Time::zero(), true);
    tr.finish();
  }
  {
    ConfigReader nic = root.table("nic");
    read_nic(nic, s);
    nic.finish();
  }
  {
    ConfigReader sw = root.table("switch");
    read_switch(sw, s);
    sw.finish();
  }
  root.skip("sweep");  // expanded by `fabricsim run` into one scenario per point
  s.has_workload = root.has("workload");
  if (s.has_workload) {
    ConfigReader w = root.table("workload");
    if (!has_servers)
      root.error("workload",
                 "a [workload] trains on GPUs: it needs a [server] (e.g. preset = "
                 "\"dgx-a100\" with count)");
    read_workload(w, s);
    w.finish();
  }
  if (root.has("expected")) {
    // Values the replayed case reported, keyed by result metric: shown beside the model's.
    ConfigReader e = root.table("expected");
    for (const char* key : {"cross_node_throughput_gbit_per_s", "roce_throughput_gbps",
                            "allreduce_ms_per_step", "allreduce_cross_node_ms", "pfc_pause_frames",
                            "tokens_per_s", "scaling_efficiency", "single_server_tokens_per_s"})
      if (const auto v = e.optional_real(key, 0.0, 1e18)) s.expected.emplace_back(key, *v);
    s.notes = e.string_list("notes", {});
    e.finish();
  }
  if (root.has("study")) {
    ConfigReader st = root.table("study");
    for (const auto& text : st.string_list("busbw_sizes", {})) {
      try {
        s.study_sizes.push_back(parse_bytes(text));
      } catch (const UnitError& e) {
        st.error("busbw_sizes", e.what());
      }
    }
    const auto binaries = perf_binaries();
    s.study_ops = st.string_list("busbw_ops", {"all_reduce_perf"});
    for (const auto& op : s.study_ops)
      if (!parse_perf_binary(op))
        st.error("busbw_ops",
                 fmt::format("\"{}\" is not one of {}", op, fmt::join(binaries, ", ")));
    st.finish();
  }
  {
    ConfigReader nccl = root.table("nccl");
    read_nccl(nccl, s);
    nccl.finish();
  }
  if (root.has("prices")) {
    ConfigReader pr = root.table("prices");
    read_prices(pr, s);
    pr.finish();
  }
  root.finish();
  if (!errors.empty()) throw ConfigError(std::move(errors));
  return s;
}

std::string Scenario::position_of(std::string_view key) const {
  for (std::string k(key);;) {
    if (const auto it = positions.find(k); it != positions.end()) return it->second;
    const auto dot = k.rfind('.');
    if (dot == std::string::npos) break;
    k.resize(dot);
  }
  return file.empty() ? std::string("<scenario>") : file;
}

Scenario load_scenario(const std::filesystem::path& file, const LoadOptions& options) {
  ConfigDocument doc = ConfigDocument::load_file(file);
  for (const auto& o : options.overrides) doc.apply_override(o);
  Scenario s = read_scenario(doc, file.stem().string());
  s.file = file.string();
  return s;
}

Scenario load_scenario_text(std::string_view text, std::string source_name,
                            const LoadOptions& options) {
  ConfigDocument doc = ConfigDocument::load_text(text, source_name);
  for (const auto& o : options.overrides) doc.apply_override(o);
  return read_scenario(doc, std::filesystem::path(source_name).stem().string());
}

std::vector<std::string> known_scenario_keys(const Scenario& scenario) {
  std::vector<std::string> keys;
  const auto walk = [&](auto&& self, const toml::table& t, const std::string& prefix) -> void {
    for (const auto& [k, v] : t) {
      const std::string path =
          prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
      if (const auto* sub = v.as_table()) {
        self(self, *sub, path);
      } else {
        keys.push_back(path);
      }
    }
  };
  walk(walk, scenario.resolved, "");
  return keys;
}

}  // namespace fabricsim
