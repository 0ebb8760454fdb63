#include "scenario/scenario.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "models/transport/dcqcn_paper.hpp"
#include "models/transport/dctcp.hpp"
#include "net/port.hpp"
#include "scenario/schema.hpp"
#include "topo/nccl_xml.hpp"

namespace fabricsim {

namespace {

using T = KeyType;
using P = Presence;

// Reads one table's keys through the schema (scenario/schema.hpp): the type, default and range
// of each come from its row, so the loader states only what is not static — a default derived
// from other keys, a bound that depends on the layout. Asking for a key the schema lacks, with
// the wrong type, or passing a default for a key whose row has one, is a programming error
// (std::logic_error): every loader path that a test reaches checks the table.
class Keys {
 public:
  Keys(ConfigReader reader, std::string table) : r_(std::move(reader)), table_(std::move(table)) {}

  Keys table(std::string_view key) {
    return Keys(r_.table(key), table_.empty() ? std::string(key) : table_ + "." + std::string(key));
  }
  void finish() { r_.finish(); }
  void error(std::string_view key, std::string_view message) { r_.error(key, message); }
  bool has(std::string_view key) const { return r_.has(key); }
  std::size_t error_count() const { return r_.error_count(); }
  void skip(std::string_view key) { r_.skip(key); }
  void not_applicable(const std::vector<std::string_view>& keys, std::string_view why) {
    for (const auto key : keys)
      if (!is_scenario_path(path_of(key)))
        throw std::logic_error("scenario path '" + path_of(key) + "' is not in the schema");
    r_.not_applicable(keys, why);
  }
  ConfigReader& reader() { return r_; }

  // Keys whose row has a default (or are required).
  std::string string(std::string_view key) {
    return r_.string(key, fallback<std::string>(row(key, T::kString)));
  }
  std::string choice(std::string_view key) {
    const KeySpec& k = row(key, T::kChoice);
    return r_.choice(key, fallback<std::string>(k), k.choices);
  }
  bool boolean(std::string_view key) {
    return r_.boolean(key, fallback<bool>(row(key, T::kBoolean)));
  }
  std::int64_t integer(std::string_view key) {
    const KeySpec& k = row(key, T::kInteger);
    return r_.integer(key, fallback<std::int64_t>(k), lower(k), upper(k));
  }
  double real(std::string_view key) {
    const KeySpec& k = row(key, T::kReal);
    return r_.real(key, fallback<double>(k), k.min, k.max);
  }
  Time time(std::string_view key) {
    const KeySpec& k = row(key, T::kTime);
    return r_.time(key, fallback<Time>(k), !k.positive);
  }
  Bytes bytes(std::string_view key) {
    const KeySpec& k = row(key, T::kSize);
    return r_.bytes(key, fallback<Bytes>(k), !k.positive);
  }
  Bytes byte_count(std::string_view key) {
    const KeySpec& k = row(key, T::kByteCount);
    return r_.byte_count(key, *fallback<Bytes>(k));
  }
  Bandwidth bandwidth(std::string_view key) {
    const KeySpec& k = row(key, T::kBandwidth);
    return r_.bandwidth(key, fallback<Bandwidth>(k), !k.positive);
  }
  double length_m(std::string_view key) {
    return r_.length_m(key, fallback<double>(row(key, T::kLength)));
  }
  std::vector<std::string> string_list(std::string_view key) {
    const KeySpec& k = row(key, T::kStringList);
    auto out = r_.string_list(key, *fallback<std::vector<std::string>>(k));
    if (!k.choices.empty())
      for (const auto& v : out)
        if (std::find(k.choices.begin(), k.choices.end(), v) == k.choices.end())
          r_.error(key, fmt::format("\"{}\" is not one of {}", v, fmt::join(k.choices, ", ")));
    return out;
  }
  std::vector<std::int64_t> integer_list(std::string_view key) {
    const KeySpec& k = row(key, T::kIntegerList);
    return r_.integer_list(key, *fallback<std::vector<std::int64_t>>(k), lower(k), upper(k));
  }
  std::vector<Bytes> size_list(std::string_view key) {
    const KeySpec& k = row(key, T::kSizeList);
    std::vector<Bytes> out;
    for (const auto& text : r_.string_list(key, *fallback<std::vector<std::string>>(k))) {
      try {
        out.push_back(parse_bytes(text));
      } catch (const UnitError& e) {
        r_.error(key, e.what());
      }
    }
    return out;
  }
  std::optional<std::filesystem::path> file(std::string_view key) {
    (void)row(key, T::kFile);
    return r_.file(key);
  }
  std::optional<double> optional_real(std::string_view key) {
    const KeySpec& k = row(key, T::kReal);
    return r_.optional_real(key, k.min, k.max);
  }
  std::optional<std::string> optional_choice(std::string_view key) {
    if (!has(key)) return std::nullopt;
    return choice(key, std::nullopt);
  }

  // Keys whose default is derived (or whose requirement depends on other keys): the loader
  // gives it; std::nullopt makes the key required here.
  std::string string(std::string_view key, std::optional<std::string> value) {
    return r_.string(key, given(row(key, T::kString), std::move(value)));
  }
  std::string choice(std::string_view key, std::optional<std::string> value) {
    const KeySpec& k = row(key, T::kChoice);
    return r_.choice(key, given(k, std::move(value)), k.choices);
  }
  bool boolean(std::string_view key, std::optional<bool> value) {
    return r_.boolean(key, given(row(key, T::kBoolean), value));
  }
  std::int64_t integer(std::string_view key, std::optional<std::int64_t> value) {
    const KeySpec& k = row(key, T::kInteger);
    return r_.integer(key, given(k, value), lower(k), upper(k));
  }
  double real(std::string_view key, std::optional<double> value) {
    const KeySpec& k = row(key, T::kReal);
    return r_.real(key, given(k, value), k.min, k.max);
  }
  Time time(std::string_view key, std::optional<Time> value) {
    const KeySpec& k = row(key, T::kTime);
    return r_.time(key, given(k, value), !k.positive);
  }
  Bytes bytes(std::string_view key, std::optional<Bytes> value) {
    const KeySpec& k = row(key, T::kSize);
    return r_.bytes(key, given(k, value), !k.positive);
  }
  Bandwidth bandwidth(std::string_view key, std::optional<Bandwidth> value) {
    const KeySpec& k = row(key, T::kBandwidth);
    return r_.bandwidth(key, given(k, value), !k.positive);
  }
  std::vector<std::string> string_list(std::string_view key, std::vector<std::string> value) {
    return r_.string_list(key, *given(row(key, T::kStringList), std::optional(std::move(value))));
  }
  // `max` (when given) narrows the row's upper bound to what the layout allows.
  std::vector<std::int64_t> integer_list(std::string_view key, std::vector<std::int64_t> value,
                                         std::optional<std::int64_t> max = std::nullopt) {
    const KeySpec& k = row(key, T::kIntegerList);
    const auto values = k.presence == P::kDefault ? *fallback<std::vector<std::int64_t>>(k)
                                                  : *given(k, std::optional(std::move(value)));
    return r_.integer_list(key, values, lower(k), max ? std::min(*max, upper(k)) : upper(k));
  }

 private:
  std::string path_of(std::string_view key) const {
    return table_.empty() ? std::string(key) : table_ + "." + std::string(key);
  }
  const KeySpec& row(std::string_view key) const {
    const std::string path = path_of(key);
    const KeySpec* k = find_scenario_key(path);
    if (k == nullptr)
      throw std::logic_error("scenario key '" + path +
                             "' is not in the schema (scenario/schema.cpp)");
    return *k;
  }
  const KeySpec& row(std::string_view key, KeyType type) const {
    const KeySpec& k = row(key);
    if (k.type != type)
      throw std::logic_error("scenario key '" + k.path +
                             "' is read with another type than its schema row's");
    return k;
  }
  template <class V>
  static std::optional<V> fallback(const KeySpec& k) {
    if (k.presence == P::kRequired) return std::nullopt;
    if (k.presence != P::kDefault)
      throw std::logic_error("scenario key '" + k.path +
                             "' has no static default: the loader must give it");
    return std::get<V>(k.fallback);
  }
  template <class V>
  static std::optional<V> given(const KeySpec& k, std::optional<V> value) {
    if (k.presence == P::kDefault)
      throw std::logic_error("scenario key '" + k.path + "' has its default in the schema");
    return value;
  }
  static std::int64_t lower(const KeySpec& k) {
    return k.min == -kUnbounded ? std::numeric_limits<std::int64_t>::min()
                                : static_cast<std::int64_t>(k.min);
  }
  static std::int64_t upper(const KeySpec& k) {
    return k.max == kUnbounded ? std::numeric_limits<std::int64_t>::max()
                               : static_cast<std::int64_t>(k.max);
  }

  ConfigReader r_;
  std::string table_;
};

// The Ethernet + IPv4 + UDP + IB BTH + ICRC + FCS headers of a RoCEv2 packet (14+20+8+12+4+4 =
// 62 B) plus preamble/SFD (8 B) and the minimum inter-frame gap (12 B): 82 B on the wire per
// packet. This is the default per-packet overhead; other transports set `header` explicitly.
constexpr Bytes kRoceV2WireOverhead{82};

TrafficPattern to_pattern(const std::string& s) {
  if (s == "permutation") return TrafficPattern::kPermutation;
  if (s == "all-to-all") return TrafficPattern::kAllToAll;
  return TrafficPattern::kIncast;
}

}  // namespace

Fidelity fidelity_of(std::string_view name) {
  return name == "flow"     ? Fidelity::kFlow
         : name == "hybrid" ? Fidelity::kHybrid
                            : Fidelity::kPacket;
}

std::string_view to_string(Fidelity f) {
  return f == Fidelity::kFlow ? "flow" : f == Fidelity::kHybrid ? "hybrid" : "packet";
}

namespace {

PathSelection to_selection(const std::string& s) {
  if (s == "spray") return PathSelection::kSpray;
  if (s == "dmodk") return PathSelection::kDestModK;
  if (s == "adaptive") return PathSelection::kAdaptive;
  return PathSelection::kHash;
}

template <class Import>
ServerSpec read_file_or_report(Keys& r, std::string_view key, const std::filesystem::path& path,
                               const Import& import, const ServerSpec& defaults) {
  try {
    return import(read_input_file(path, "topology file"), defaults);
  } catch (const ConfigError& e) {
    r.error(key, e.what());
  } catch (const std::invalid_argument& e) {
    r.error(key, fmt::format("{}: {}", path.string(), e.what()));
  }
  return defaults;
}

// Any server written out in TOML: every key overrides the preset (or imported layout) value.
void read_server_layout(Keys& sv, ServerSpec& server) {
  for (const char* key :
       {"gpu_name", "gpu_sm", "sockets", "cores_per_socket", "inter_socket_rate", "pcie_generation",
        "pcie_width", "pcie_latency", "nvlink_rate", "nvlink_latency", "pcie_switch_sockets",
        "pcie_switch_levels", "gpu_pcie_switch", "nic_pcie_switch", "nic_names", "nvswitch_links"})
    if (sv.has(key)) server.model = "custom";
  const auto to_int = [](const std::vector<std::int64_t>& v) {
    return std::vector<int>(v.begin(), v.end());
  };
  server.gpu_name = sv.string("gpu_name", server.gpu_name);
  server.gpu_sm = static_cast<int>(sv.integer("gpu_sm", server.gpu_sm));
  server.sockets = static_cast<int>(sv.integer("sockets", server.sockets));
  server.cores_per_socket =
      static_cast<int>(sv.integer("cores_per_socket", server.cores_per_socket));
  server.inter_socket_rate = sv.bandwidth("inter_socket_rate", server.inter_socket_rate);
  const int generation =
      static_cast<int>(sv.integer("pcie_generation", server.gpu_pcie.generation));
  const int width = static_cast<int>(sv.integer("pcie_width", server.gpu_pcie.width));
  server.gpu_pcie = server.nic_pcie = server.uplink_pcie = PcieLink{generation, width};
  server.pcie_latency = sv.time("pcie_latency", server.pcie_latency);
  server.nvlink_rate = sv.bandwidth("nvlink_rate", server.nvlink_rate);
  server.nvlink_latency = sv.time("nvlink_latency", server.nvlink_latency);

  std::vector<std::int64_t> sw_sockets, gpu_sw, nic_sw;
  for (const auto& p : server.pcie_switches) sw_sockets.push_back(p.socket);
  for (const auto& g : server.gpus) gpu_sw.push_back(g.pcie_switch);
  for (const auto& n : server.nics) nic_sw.push_back(n.pcie_switch);
  sw_sockets = sv.integer_list("pcie_switch_sockets", sw_sockets, server.sockets - 1);
  const int levels = static_cast<int>(sv.integer(
      "pcie_switch_levels", server.pcie_switches.empty() ? 1 : server.pcie_switches[0].levels));
  const auto switches = static_cast<std::int64_t>(sw_sockets.size());
  const std::size_t errors_before = sv.error_count();
  gpu_sw = sv.integer_list("gpu_pcie_switch", gpu_sw, switches - 1);
  if (gpu_sw.empty() && sv.error_count() == errors_before)
    sv.error("gpu_pcie_switch", "is empty: a server has at least one GPU");
  nic_sw = sv.integer_list("nic_pcie_switch", nic_sw, switches - 1);
  server.pcie_switches.clear();
  for (const auto socket : sw_sockets)
    server.pcie_switches.push_back({static_cast<int>(socket), levels});
  // A device keeps its socket and NUMA node (an import's) when only its switch is set here.
  const auto place = [](std::vector<ServerDevice>& devices, const std::vector<std::int64_t>& sw) {
    devices.resize(sw.size());
    for (std::size_t i = 0; i < sw.size(); ++i) devices[i].pcie_switch = static_cast<int>(sw[i]);
  };
  place(server.gpus, gpu_sw);
  place(server.nics, nic_sw);
  std::vector<std::string> names = server.nic_names;
  names.resize(server.nics.size());
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i].empty()) names[i] = fmt::format("mlx5_{}", i);
  server.nic_names = sv.string_list("nic_names", names);
  if (server.nic_names.size() != server.nics.size())
    sv.error("nic_names",
             fmt::format("has {} names for {} NICs", server.nic_names.size(), server.nics.size()));
  if (sv.has("nvswitch_links")) {
    server.nvswitch_links = to_int(sv.integer_list("nvswitch_links", {}));
    server.nvlink_pairs.clear();
  } else if (server.nvlink_pairs.empty()) {
    std::vector<std::int64_t> links(server.nvswitch_links.begin(), server.nvswitch_links.end());
    server.nvswitch_links = to_int(sv.integer_list("nvswitch_links", links));
  }
  if (!server.nvlink_pairs.empty() && server.nvlink_pairs.size() != server.gpus.size())
    server.nvlink_pairs.assign(server.gpus.size(), std::vector<int>(server.gpus.size(), 0));
}

void read_server(Keys& sv, Scenario& s) {
  const auto smi = sv.file("nvidia_smi");
  const auto xml = sv.file("nccl_xml");
  ServerSpec server = server_preset(sv.choice("preset"));
  if (smi && xml)
    sv.error("nccl_xml", "give either server.nvidia_smi or server.nccl_xml, not both");
  // An imported layout keeps the preset's rates and latencies for what the file does not say.
  ImportOptions import;
  import.include_storage_nics = sv.boolean("include_storage_nics");
  import.compute_nics = sv.string_list("compute_nics", {});
  const auto matrix_import = [&](std::string_view text, const ServerSpec& defaults) {
    return server_from_matrix(parse_topo_matrix(text), defaults, import);
  };
  if (smi) server = read_file_or_report(sv, "nvidia_smi", *smi, matrix_import, server);
  if (xml) server = read_file_or_report(sv, "nccl_xml", *xml, import_nccl_xml, server);
  server.nic_rate = sv.bandwidth("nic_rate", server.nic_rate);
  read_server_layout(sv, server);
  s.cluster.servers = static_cast<int>(sv.integer("count"));
  HostFabricParams& h = s.network.host;
  s.network.host_side = sv.boolean("host_side");
  h.pcie_max_payload = sv.bytes("pcie_max_payload");
  h.pcie_tlp_overhead = sv.bytes("pcie_tlp_overhead");
  h.host_memory_rate = sv.bandwidth("host_memory_rate");
  h.nvlink_max_payload = sv.bytes("nvlink_max_payload");
  h.nvlink_overhead = sv.bytes("nvlink_overhead");
  s.cluster.server = std::move(server);
  s.analysis.nic_rate = s.cluster.server.nic_rate;
}

void read_fabric(Keys& fab, Scenario& s, bool has_servers) {
  FabricSpec& f = s.cluster.fabric;
  const std::string kind = fab.choice("kind");
  if (has_servers) {
    fab.not_applicable({"hosts"}, "the endpoints are the NICs of [server]");
  } else {
    s.cluster.hosts = static_cast<int>(fab.integer("hosts"));
  }
  f.technology =
      fab.choice("technology") == "infiniband" ? Technology::kInfiniband : Technology::kEthernet;
  f.link_rate = fab.bandwidth("link_rate");
  f.switch_ports = static_cast<int>(fab.integer("switch_ports"));
  f.switch_latency = fab.time("switch_latency");
  f.host_cable_m = fab.length_m("host_cable_length");
  f.fabric_cable_m = fab.length_m("fabric_cable_length");
  f.propagation_per_m = fab.time("propagation_per_m");
  // Each kind's own keys; the others' are refused for it.
  const std::string why = fmt::format("fabric.kind is \"{}\"", kind);
  if (kind == "ring") {
    f.shape = RingSpec{.switches = static_cast<int>(fab.integer("ring_switches"))};
  } else {
    fab.not_applicable({"ring_switches"}, why);
  }
  if (kind == "leaf-spine") {
    LeafSpineSpec ls;
    ls.hosts_per_leaf = static_cast<int>(fab.integer("hosts_per_leaf"));
    ls.spines = static_cast<int>(fab.integer("spines"));
    ls.uplinks_per_leaf = static_cast<int>(fab.integer("uplinks_per_leaf"));
    ls.oversubscription = fab.real("oversubscription");
    f.shape = ls;
  } else {
    fab.not_applicable({"hosts_per_leaf", "spines", "uplinks_per_leaf", "oversubscription"}, why);
  }
  if (kind == "fat-tree") {
    f.shape = FatTreeSpec{.k = static_cast<int>(fab.integer("k"))};
  } else {
    fab.not_applicable({"k"}, why);
  }
  f.rail_optimized = fab.boolean("rail_optimized");
  s.network.path_selection = to_selection(fab.choice("routing"));
  // Spraying spreads a flow's packets over every equal-cost port; the flow level has one path
  // per flow and would put every sprayed flow on the same one (silently colliding them all).
  if ((s.network.path_selection == PathSelection::kSpray ||
       s.network.path_selection == PathSelection::kAdaptive) &&
      s.fidelity == Fidelity::kFlow)
    fab.error("routing", fmt::format("\"{}\" is per packet: it needs fidelity = \"packet\" (the "
                                     "flow level routes each flow on one path; use \"ecmp\" or "
                                     "\"dmodk\")",
                                     fab.choice("routing")));
  s.network.switch_latency = f.switch_latency;
}

std::uint8_t priority_mask(const std::vector<std::int64_t>& priorities) {
  std::uint8_t mask = 0;
  for (const auto p : priorities) mask |= static_cast<std::uint8_t>(1u << p);
  return mask;
}

PcieDistance gdr_distance(const std::string& level) {
  return level == "SYS"                      ? PcieDistance::kSys
         : level == "PHB" || level == "NODE" ? PcieDistance::kPhb
         : level == "PIX"                    ? PcieDistance::kPix
                                             : PcieDistance::kPxb;
}

void read_nic(Keys& nic, Scenario& s) {
  RdmaConfig& n = s.network.nic;
  const bool tcp = nic.choice("transport") == "tcp";
  n.transport = tcp ? Transport::kTcp : Transport::kRdma;
  n.format.mtu = nic.bytes("mtu");
  // InfiniBand: LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B per packet (no preamble, no gap);
  // RoCEv2 pays 82 B (see kRoceV2WireOverhead).
  const bool infiniband = s.cluster.fabric.technology == Technology::kInfiniband;
  // TCP over Ethernet: Eth 14 + IPv4 20 + TCP 32 (with timestamps) + FCS 4 + preamble 8 + IFG 12.
  const Bytes default_header = tcp ? Bytes(90) : infiniband ? Bytes(26) : kRoceV2WireOverhead;
  n.format.header = nic.bytes("header", default_header);
  if (n.format.mtu > Bytes(1 << 20))
    nic.error("mtu", fmt::format("must be at most 1MiB, got \"{}\"", to_string(n.format.mtu)));
  n.control_bytes = nic.bytes("control_packet", tcp          ? Bytes(90)
                                                : infiniband ? Bytes(30)
                                                             : Bytes(86));
  n.priority = static_cast<std::uint8_t>(nic.integer("priority", tcp ? 0 : RdmaConfig{}.priority));
  n.cnp_priority = static_cast<std::uint8_t>(nic.integer("cnp_priority"));
  n.ack_interval = static_cast<int>(nic.integer("ack_interval"));
  n.out_of_order_placement = nic.boolean("out_of_order_placement");
  n.ib_timeout = static_cast<int>(nic.integer("ib_timeout"));
  n.ib_retry_cnt = static_cast<int>(nic.integer("ib_retry_cnt"));
  n.message_overhead = nic.time("message_overhead");
  n.message_rate_mpps = nic.real("message_rate_mpps");
  s.network.host.gpudirect = nic.boolean("gpudirect");
  s.network.host.gdr_level = gdr_distance(nic.choice("gdr_level"));
  if (tcp) {
    Keys t = nic.table("tcp");
    n.congestion = t.choice("congestion") == "dctcp" ? &kDctcp : &kNewReno;
    n.newreno.initial_window = static_cast<int>(t.integer("initial_window"));
    n.tcp.min_rto = t.time("min_rto");
    n.dctcp.g = t.real("dctcp_g");
    n.tcp.host_latency = t.time("host_latency");
    t.finish();
  } else {
    nic.not_applicable({"tcp"}, "[nic.tcp] is for nic.transport = \"tcp\"");
  }
  Keys d = nic.table("dcqcn");
  DcqcnConfig& c = n.dcqcn;
  const bool dcqcn = d.boolean("enabled");
  // The ConnectX firmware's rules (models/transport/dcqcn.hpp) or the paper's
  // (models/transport/dcqcn_paper.hpp).
  const bool paper = d.choice("variant") == "paper";
  if (dcqcn && tcp)
    d.error("enabled",
            "DCQCN is RoCE's congestion control; with nic.transport = \"tcp\" choose "
            "nic.tcp.congestion (\"newreno\" or \"dctcp\")");
  if (dcqcn && !tcp) n.congestion = paper ? &kDcqcnPaper : &kDcqcnFirmware;
  c.rpg_time_reset = d.time("rpg_time_reset");
  c.rpg_threshold = static_cast<int>(d.integer("rpg_threshold"));
  c.rpg_ai_rate = d.bandwidth("rpg_ai_rate");
  c.rpg_hai_rate = d.bandwidth("rpg_hai_rate");
  c.rpg_min_rate = d.bandwidth("rpg_min_rate");
  c.dce_tcp_g = d.real("dce_tcp_g");
  c.dce_tcp_rtt = d.time("dce_tcp_rtt");
  c.initial_alpha = d.real("initial_alpha");
  c.min_time_between_cnps = d.time("min_time_between_cnps");
  if (paper) {
    c.rpg_byte_reset = d.bytes("rpg_byte_reset");
    d.not_applicable({"rate_reduce_monitor_period", "rate_to_set_on_first_cnp", "clamp_tgt_rate"},
                     "the paper variant cuts the rate on every CNP and always sets RT = RC "
                     "(nic.dcqcn.variant = \"paper\")");
  } else {
    c.rate_reduce_monitor_period = d.time("rate_reduce_monitor_period");
    c.rate_to_set_on_first_cnp = d.bandwidth("rate_to_set_on_first_cnp");
    c.clamp_tgt_rate = d.boolean("clamp_tgt_rate");
    d.not_applicable({"rpg_byte_reset"},
                     "the byte counter is part of nic.dcqcn.variant = \"paper\" only");
  }
  d.finish();
}

void read_switch(Keys& sw, Scenario& s) {
  BufferConfig& b = s.network.buffer;
  b.buffer = sw.bytes("buffer");
  b.reserved = sw.bytes("reserved");
  b.alpha = sw.real("alpha");
  b.resume_offset = sw.bytes("resume_offset");
  b.pfc = sw.boolean("pfc");
  const bool infiniband = s.cluster.fabric.technology == Technology::kInfiniband;
  if (infiniband) {
    // InfiniBand is lossless by credits; PFC and ECN are Ethernet mechanisms.
    b.vl_credits = sw.bytes("vl_buffer");
    if (b.pfc)
      sw.error(
          "pfc",
          "PFC does not apply to fabric.technology = \"infiniband\" (credit-based flow control)");
    s.cluster.fabric.sharp = sw.boolean("sharp");
    s.cluster.fabric.sharp_rate = sw.bandwidth("sharp_rate");
    s.cluster.fabric.sharp_trees = static_cast<int>(sw.integer("sharp_trees"));
  } else {
    sw.not_applicable({"vl_buffer"},
                      "credit-based flow control is for fabric.technology = \"infiniband\"");
    sw.not_applicable({"sharp", "sharp_rate", "sharp_trees"},
                      "in-network aggregation (SHARP) is an InfiniBand switch's: it needs "
                      "fabric.technology = \"infiniband\"");
  }
  b.lossless = priority_mask(sw.integer_list("lossless_priorities"));
  b.pause_quanta = static_cast<std::uint16_t>(sw.integer("pause_quanta"));
  b.pfc_xoff = sw.bytes("pfc_xoff");
  b.pfc_xon = sw.bytes("pfc_xon");
  if (b.pfc_xoff > Bytes(0) && b.pfc_xon >= b.pfc_xoff)
    sw.error("pfc_xon", fmt::format("must be below switch.pfc_xoff ({})", to_string(b.pfc_xoff)));
  if (sw.choice("scheduling") == "dwrr") {
    b.strict = priority_mask(sw.integer_list("strict_priorities"));
    const auto weights = sw.integer_list("dwrr_weights");
    if (weights.size() != 8) {
      sw.error("dwrr_weights",
               fmt::format("needs 8 weights, one per priority, got {}", weights.size()));
    } else {
      for (std::size_t i = 0; i < 8; ++i) b.dwrr_weight[i] = static_cast<int>(weights[i]);
    }
  } else {
    sw.not_applicable({"strict_priorities", "dwrr_weights"}, "switch.scheduling is \"strict\"");
  }
  b.pfc_watchdog = sw.time("pfc_watchdog");
  b.pfc_watchdog_drop = sw.choice("pfc_watchdog_action") == "drop";
  // Headroom: what can still arrive after XOFF is sent, for the longest cable at the link rate
  // (802.1Qbb Annex O style): the pause frame and the largest frame being sent when it is
  // generated, the cable round trip, the upstream's response time, and the frame it is
  // sending when the pause arrives.
  const FabricSpec& f = s.cluster.fabric;
  const double cable_m = std::max(f.host_cable_m, f.fabric_cable_m);
  const Time response = sw.time("pause_response_time");
  const Time round_trip = Time::from_ps(static_cast<Time::rep>(
                              2 * cable_m * static_cast<double>(f.propagation_per_m.ps()))) +
                          response;
  const Bytes frame = s.network.nic.format.mtu + s.network.nic.format.header;
  b.headroom =
      sw.bytes("headroom", kPauseFrameWireBytes + frame * 2 + bytes_in(round_trip, f.link_rate));
  b.ecn.enabled = sw.boolean("ecn");
  if (infiniband && b.ecn.enabled)
    sw.error("ecn", "ECN marking is not modelled for InfiniBand switches");
  b.ecn.kmin = sw.bytes("ecn_kmin");
  b.ecn.kmax = sw.bytes("ecn_kmax");
  b.ecn.pmax = sw.real("ecn_pmax");
  b.ecn_priorities = priority_mask(sw.integer_list("ecn_priorities", {s.network.nic.priority}));
  if (b.ecn.kmax <= b.ecn.kmin)
    sw.error("ecn_kmax", fmt::format("must be above switch.ecn_kmin ({})", to_string(b.ecn.kmin)));
}

// NCCL's environment under its own names (they override the [nic] keys they correspond to),
// and the collective model's settings.
void read_nccl(Keys& r, Scenario& s) {
  NcclConfig& c = s.nccl;
  const auto list = [&](std::string_view key, EnableTable (*parse)(std::string_view),
                        EnableTable& into) {
    if (!r.has(key)) return;
    try {
      into = parse(r.string(key, std::nullopt));
    } catch (const std::invalid_argument& e) {
      r.error(key, e.what());
    }
  };
  list("NCCL_ALGO", parse_algo_list, c.algos);
  list("NCCL_PROTO", parse_proto_list, c.protos);
  c.buffsize = r.byte_count("NCCL_BUFFSIZE");
  c.ll_buffsize = r.byte_count("NCCL_LL_BUFFSIZE");
  c.ll128_buffsize = r.byte_count("NCCL_LL128_BUFFSIZE");
  c.min_channels = static_cast<int>(r.integer("NCCL_MIN_NCHANNELS"));
  c.max_channels = static_cast<int>(r.integer("NCCL_MAX_NCHANNELS"));
  if (c.max_channels > 0 && c.min_channels > c.max_channels)
    r.error("NCCL_MIN_NCHANNELS",
            fmt::format("must not exceed NCCL_MAX_NCHANNELS ({})", c.max_channels));
  c.cross_nic = static_cast<int>(r.integer("NCCL_CROSS_NIC"));
  c.channels_per_net_peer = static_cast<int>(r.integer("NCCL_NCHANNELS_PER_NET_PEER"));
  c.p2p_net_chunksize = r.byte_count("NCCL_P2P_NET_CHUNKSIZE");
  c.p2p_pci_chunksize = r.byte_count("NCCL_P2P_PCI_CHUNKSIZE");
  c.p2p_nvl_chunksize = r.byte_count("NCCL_P2P_NVL_CHUNKSIZE");
  c.nvls_enable = static_cast<int>(r.integer("NCCL_NVLS_ENABLE"));
  c.nvls_chunksize = r.byte_count("NCCL_NVLS_CHUNKSIZE");
  c.nvls_channels = static_cast<int>(r.integer("NCCL_NVLS_NCHANNELS"));
  c.collnet_enable = static_cast<int>(r.integer("NCCL_COLLNET_ENABLE"));
  c.collnet_node_threshold = static_cast<int>(r.integer("NCCL_COLLNET_NODE_THRESHOLD"));
  c.ib_qps_per_connection = static_cast<int>(r.integer("NCCL_IB_QPS_PER_CONNECTION"));
  c.ib_split_data_on_qps = r.integer("NCCL_IB_SPLIT_DATA_ON_QPS") != 0;
  // NCCL_P2P_LEVEL (else NCCL_P2P_DISABLE) as NCCL's path types (graph/topo.h PATH_*).
  if (r.has("NCCL_P2P_DISABLE") && r.integer("NCCL_P2P_DISABLE", std::nullopt) != 0)
    s.network.host.p2p_level = 0;
  if (const auto level = r.optional_choice("NCCL_P2P_LEVEL")) {
    const std::map<std::string, int> types{{"LOC", 0}, {"NVL", 1}, {"PIX", 4},
                                           {"PXB", 5}, {"PHB", 8}, {"SYS", 9}};
    s.network.host.p2p_level = types.at(*level);
  }
  c.pxn_disable = r.integer("NCCL_PXN_DISABLE") != 0;
  s.network.host.pxn = !c.pxn_disable;
  c.p2p_pxn_level = static_cast<int>(r.integer("NCCL_P2P_PXN_LEVEL"));
  if (r.has("NCCL_NET_GDR_READ"))
    s.network.host.gdr_read = r.integer("NCCL_NET_GDR_READ", std::nullopt) != 0;
  if (const auto level = r.optional_choice("NCCL_NET_GDR_LEVEL")) {
    s.network.host.gpudirect = *level != "LOC";
    s.network.host.gdr_level = gdr_distance(*level);
  }
  if (r.has("gpudirect")) s.network.host.gpudirect = r.boolean("gpudirect", std::nullopt);
  if (r.has("NCCL_IB_TIMEOUT"))
    s.network.nic.ib_timeout = static_cast<int>(r.integer("NCCL_IB_TIMEOUT", std::nullopt));
  if (r.has("NCCL_IB_ADAPTIVE_ROUTING"))
    s.network.nic.out_of_order_placement = r.integer("NCCL_IB_ADAPTIVE_ROUTING", std::nullopt) != 0;
  const bool infiniband = s.cluster.fabric.technology == Technology::kInfiniband;
  if (r.has("NCCL_IB_TC")) {
    if (infiniband) r.error("NCCL_IB_TC", "is a RoCE traffic class; on InfiniBand use NCCL_IB_SL");
    s.network.nic.priority =
        static_cast<std::uint8_t>(r.integer("NCCL_IB_TC", std::nullopt) / 4 / 8);
  }
  if (r.has("NCCL_IB_SL")) {
    const auto sl = r.integer("NCCL_IB_SL", std::nullopt);
    if (!infiniband) r.error("NCCL_IB_SL", "is an InfiniBand service level; RoCE uses NCCL_IB_TC");
    if (sl > 7) r.error("NCCL_IB_SL", "maps to a virtual lane the model has (0 to 7)");
    s.network.nic.priority = static_cast<std::uint8_t>(sl);
  }
  if (r.has("NCCL_IB_RETRY_CNT"))
    s.network.nic.ib_retry_cnt = static_cast<int>(r.integer("NCCL_IB_RETRY_CNT", std::nullopt));
  const auto topo_file = r.file("NCCL_TOPO_FILE");
  if (topo_file) {
    // NCCL reads it as its view of the node; it must be a topology NCCL can load.
    c.topo_file = topo_file->string();
    (void)read_file_or_report(r, "NCCL_TOPO_FILE", *topo_file, import_nccl_xml, s.cluster.server);
  }
  // A topology file gives NCCL the fabric's structure: servers under one leaf go adjacent.
  c.server_list.clear();
  for (auto v : r.integer_list("server_list")) c.server_list.push_back(static_cast<int>(v));
  if (!c.server_list.empty()) {
    r.not_applicable({"server_order"}, "nccl.server_list gives the order");
    c.server_order = ServerOrder::kList;
  } else
    c.server_order = r.choice("server_order", topo_file ? "leaf" : "hostfile") == "leaf"
                         ? ServerOrder::kLeaf
                         : ServerOrder::kHostfile;
  c.ll128_enabled = r.boolean("ll128");
  {
    Keys lat = r.table("step_latency");
    const char* protos[] = {"ll", "ll128", "simple"};
    const char* links[] = {"nvlink", "pcie", "net"};
    for (int p = 0; p < 3; ++p)
      for (int l = 0; l < 3; ++l)
        c.step_latency_us[p][l] = lat.time(fmt::format("{}_{}", protos[p], links[l])).us();
    lat.finish();
    Keys launch = r.table("launch_latency");
    for (int p = 0; p < 3; ++p) c.launch_latency_us[p] = launch.time(protos[p]).us();
    launch.finish();
  }
  const std::string fallback = s.cluster.servers == 0           ? "a100"
                               : s.cluster.server.gpu_sm >= 100 ? "b200"
                               : s.cluster.server.gpu_sm >= 90  ? "h100"
                                                                : "a100";
  s.gpu = gpu_preset(r.choice("gpu", fallback));
  s.gpu.hbm = r.bandwidth("gpu_hbm", s.gpu.hbm);
  s.gpu.channel = r.bandwidth("gpu_channel_rate", s.gpu.channel);
  s.gpu.sms = static_cast<int>(r.integer("gpu_sms", s.gpu.sms));
  s.gpu.nvls_efficiency = r.real("gpu_nvls_efficiency", s.gpu.nvls_efficiency);
}

// A training step ([workload]); compute times given, or derived from a sustained GPU rate:
// forward = 2 P t / (g r), backward = 2 x forward (t tokens per server per step, g GPUs per
// server sharing the model by tensor parallelism, r the sustained FLOP rate per GPU).
void read_workload(Keys& w, Scenario& s) {
  WorkloadSpec& k = s.workload;
  k.model_params = w.real("model_params");
  const int servers = std::max(1, s.cluster.servers);
  // At least one (an invalid GPU list is already an error; nothing divides by zero meanwhile).
  const int gpus =
      std::max(1, s.cluster.servers > 0 ? static_cast<int>(s.cluster.server.gpus.size()) : 1);
  k.pipeline_stages = static_cast<int>(w.integer("pipeline_stages"));
  if (servers % k.pipeline_stages != 0)
    w.error("pipeline_stages",
            fmt::format("must divide the {} servers (stages of equal size)", servers));
  k.micro_batches = static_cast<int>(w.integer("micro_batches"));
  // Sequence shape: tokens per step = micro-batches x micro-batch size x sequence length x
  // data-parallel replicas; stage-to-stage activations per GPU = sequence length x micro-batch
  // size x hidden size x bytes per element / GPUs per server (Megatron's scatter-gather of
  // pipeline tensors across the tensor-parallel ranks).
  const auto seq = w.integer("sequence_length");
  const auto mbs = w.integer("micro_batch_size");
  const auto hidden = w.integer("hidden_size");
  const auto element = w.integer("activation_bytes_per_element");
  const int replicas = servers / std::max(1, k.pipeline_stages);
  const std::int64_t derived_tokens = seq * mbs * k.micro_batches * replicas;
  k.tokens_per_step = static_cast<std::uint64_t>(w.integer(
      "tokens_per_step", seq > 0 ? std::optional<std::int64_t>(derived_tokens) : std::nullopt));
  if (seq > 0 && w.has("tokens_per_step") &&
      k.tokens_per_step != static_cast<std::uint64_t>(derived_tokens))
    s.warnings.push_back(w.reader().message(
        "tokens_per_step",
        fmt::format("{} set by hand contradicts the shape: micro_batches × micro_batch_size × "
                    "sequence_length × data-parallel replicas = {} × {} × {} × {} = {}; the "
                    "value set by hand is used",
                    k.tokens_per_step, k.micro_batches, mbs, seq, replicas, derived_tokens)));
  const std::int64_t derived_pp = hidden > 0 ? seq * mbs * hidden * element / gpus : 0;
  k.pp_bytes = static_cast<std::uint64_t>(w.bytes("pp_bytes", Bytes(derived_pp)).count());
  if (const auto tflops = w.optional_real("sustained_tflops")) {
    const double rate = *tflops * 1e12;
    if (k.model_params <= 0)
      w.error("model_params", "is needed to derive compute time from workload.sustained_tflops");
    const double tokens = static_cast<double>(k.tokens_per_step) / servers;
    const double forward_s = 2 * k.model_params * tokens / (gpus * rate);
    k.forward = Time::from_ps(static_cast<Time::rep>(std::llround(forward_s * 1e12)));
    k.backward = k.forward * 2;
    w.not_applicable({"forward_time", "backward_time"}, "workload.sustained_tflops derives them");
  } else {
    k.forward = w.time("forward_time");
    k.backward = w.time("backward_time");
  }
  k.optimizer = w.time("optimizer_time");
  k.gradient_bytes = static_cast<std::uint64_t>(w.bytes("gradient_bytes").count());
  k.buckets = static_cast<int>(w.integer("buckets"));
  k.tp_bytes = static_cast<std::uint64_t>(w.bytes("tp_bytes").count());
  k.tp_collectives = static_cast<int>(w.integer("tp_collectives", k.tp_bytes > 0 ? 2 : 0));
  if (k.tp_bytes > 0 && k.tp_collectives == 0)
    w.error("tp_collectives", "must be at least 1 when workload.tp_bytes is set");
  k.steps = static_cast<int>(w.integer("steps"));
  const auto slow = w.integer_list("slow_gpus", {}, static_cast<std::int64_t>(servers) * gpus - 1);
  const double slow_speed = w.real("slow_gpu_speed");
  k.gpu_speed.assign(static_cast<std::size_t>(servers * gpus), 1.0);
  for (auto g : slow) k.gpu_speed[static_cast<std::size_t>(g)] = slow_speed;
}

void read_prices(Keys& pr, Scenario& s) {
  Prices& p = s.analysis.prices;
  p.server = pr.optional_real("server");
  p.switch_unit = pr.optional_real("switch");
  p.nic = pr.optional_real("nic");
  p.copper_cable = pr.optional_real("copper_cable");
  p.optical_cable = pr.optional_real("optical_cable");
  p.transceiver = pr.optional_real("transceiver");
  s.analysis.copper_max_m = pr.length_m("copper_max_length");
}

}  // namespace

Scenario read_scenario(const ConfigDocument& doc, std::string default_name) {
  Scenario s;
  std::vector<std::string> errors;
  Keys root(ConfigReader(&doc.root(), "", doc.file().string(), errors, s.resolved, s.positions),
            "");

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
  s.description = root.string("description");
  s.seed = static_cast<std::uint64_t>(root.integer("seed"));
  s.fidelity = fidelity_of(root.choice("fidelity"));
  if (root.has("flow")) {
    // Per link class efficiency of the flow level, from calibration (absent: none).
    Keys fl = root.table("flow");
    FlowEfficiency& e = s.flow_efficiency;
    e.nvlink = fl.optional_real("efficiency_nvlink").value_or(e.nvlink);
    e.pcie = fl.optional_real("efficiency_pcie").value_or(e.pcie);
    e.network = fl.optional_real("efficiency_network").value_or(e.network);
    const std::string g = fl.choice("collectives");
    s.execution.granularity = g == "slices"    ? Granularity::kSlices
                              : g == "streams" ? Granularity::kStreams
                                               : Granularity::kAuto;
    s.execution.stream_above = static_cast<std::uint64_t>(fl.integer("stream_above_primitives"));
    fl.finish();
  }

  {
    Keys sim = root.table("simulation");
    s.simulation.stop_time = sim.time("stop_time");
    s.simulation.sample_interval = sim.time("sample_interval");
    s.simulation.timeseries = sim.string_list("timeseries");
    s.simulation.deadlock_check_interval = sim.time("deadlock_check_interval");
    s.simulation.no_progress_timeout = sim.time("no_progress_timeout");
    s.simulation.seeds = static_cast<int>(sim.integer("seeds"));
    if (!s.simulation.timeseries.empty() && s.simulation.sample_interval == Time::zero())
      sim.error("sample_interval",
                "must be set (e.g. \"1us\") when simulation.timeseries selects gauges to record");
    sim.finish();
  }
  const bool has_servers = root.has("server");
  if (has_servers) {
    Keys sv = root.table("server");
    read_server(sv, s);
    sv.finish();
  }
  {
    Keys fab = root.table("fabric");
    read_fabric(fab, s, has_servers);
    fab.finish();
  }
  s.has_traffic = root.has("traffic");
  if (s.has_traffic) {
    Keys tr = root.table("traffic");
    s.traffic.pattern = to_pattern(tr.choice("pattern"));
    s.traffic.message_size = tr.bytes("message_size");
    s.traffic.messages_per_destination = static_cast<std::uint32_t>(tr.integer("messages"));
    s.traffic.shift = static_cast<std::uint32_t>(tr.integer("shift"));
    s.traffic.mean_gap = tr.time("mean_gap");
    s.traffic.start_jitter = tr.time("start_jitter");
    tr.finish();
  }
  {
    Keys nic = root.table("nic");
    read_nic(nic, s);
    nic.finish();
  }
  {
    Keys sw = root.table("switch");
    read_switch(sw, s);
    sw.finish();
  }
  root.skip("sweep");  // expanded by `fabricsim run` into one scenario per point
  s.has_workload = root.has("workload");
  if (s.has_workload) {
    Keys w = root.table("workload");
    if (!has_servers)
      root.error("workload",
                 "a [workload] trains on GPUs: it needs a [server] (e.g. preset = "
                 "\"dgx-a100\" with count)");
    read_workload(w, s);
    w.finish();
  }
  if (root.has("expected")) {
    // Values the replayed case reported, keyed by result metric: shown beside the model's.
    Keys e = root.table("expected");
    for (const auto& key : scenario_schema())
      if (key.table() == "expected" && key.type == KeyType::kReal)
        if (const auto v = e.optional_real(key.name())) s.expected.emplace_back(key.name(), *v);
    s.notes = e.string_list("notes");
    e.finish();
  }
  if (root.has("study")) {
    Keys st = root.table("study");
    s.study_sizes = st.size_list("busbw_sizes");
    s.study_ops = st.string_list("busbw_ops");
    st.finish();
  }
  {
    Keys nccl = root.table("nccl");
    read_nccl(nccl, s);
    nccl.finish();
  }
  if (root.has("prices")) {
    Keys pr = root.table("prices");
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
