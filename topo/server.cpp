#include "topo/server.hpp"

#include <boost/pending/disjoint_sets.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace fabricsim {
using namespace fabricsim::literals;

Bandwidth PcieLink::rate() const {
  // GT/s per lane and coding efficiency per generation (PCI-SIG base specifications).
  static constexpr std::int64_t kMtps[] = {0, 2'500, 5'000, 8'000, 16'000, 32'000, 64'000};
  const int gen = std::clamp(generation, 1, 6);
  const std::int64_t raw = kMtps[gen] * 1'000'000LL * width;  // bits/s on the wire
  if (gen <= 2) return Bandwidth::from_bps(raw * 8 / 10);
  if (gen <= 5) return Bandwidth::from_bps(raw * 128 / 130);
  return Bandwidth::from_bps(raw * 242 / 256);
}

int ServerSpec::nvlink_count(int a, int b) const {
  if (a == b) return 0;
  if (!nvlink_pairs.empty()) return nvlink_pairs[a][b];
  int links = 0;
  for (int l : nvswitch_links) links += l;  // through NVSwitch every pair gets all links
  return links;
}

int ServerSpec::socket_of(const ServerDevice& d) const {
  return d.pcie_switch >= 0 ? pcie_switches[d.pcie_switch].socket : d.socket;
}

namespace {

// DGX A100 (DGX A100 User Guide DU-09821-001; NVIDIA NVLink page): 8 x A100-SXM4 with 12
// NVLink 3 links each, 2 to each of 6 NVSwitches, 25 GB/s per link per direction (600 GB/s
// bidirectional per GPU); 4 PCIe Gen4 switches with 2 GPUs and 2 compute NICs each (two-level
// switches: GPU<->NIC is PXB); 8 x 200G ConnectX-6 compute NICs; 2 x AMD EPYC 7742 (64 cores),
// modelled in NPS1 (one NUMA node per socket). Storage NICs are not modelled.
ServerSpec dgx_a100() {
  ServerSpec s;
  s.model = "dgx-a100";
  s.gpu_name = "A100-SXM4-40GB";
  s.gpu_sm = 80;
  s.sockets = 2;
  s.cores_per_socket = 64;
  // xGMI between the two EPYC sockets: not verified; an estimate, configurable per server.
  s.inter_socket_rate = 800_Gbps;
  s.inter_socket_latency = 200_ns;
  s.pcie_switches = {{0, 2}, {0, 2}, {1, 2}, {1, 2}};
  s.gpu_pcie = s.nic_pcie = s.uplink_pcie = PcieLink{4, 16};
  s.pcie_latency = 250_ns;  // estimate per PCIe hop (switch traversal + link); configurable
  for (int g = 0; g < 8; ++g) s.gpus.push_back({g / 2, 0});
  for (int n = 0; n < 8; ++n) {
    s.nics.push_back({n / 2, 0});
    s.nic_names.push_back(fmt::format("mlx5_{}", n));
  }
  s.nic_rate = 200_Gbps;
  s.nvlink_rate = 200_Gbps;   // 25 GB/s per link per direction
  s.nvlink_latency = 150_ns;  // estimate per NVLink/NVSwitch hop; configurable
  s.nvswitch_links = {2, 2, 2, 2, 2, 2};
  return s;
}

// DGX H100: 8 x H100-SXM5 with 18 NVLink 4 links (5, 5, 4, 4 to 4 NVSwitches, as public NCCL
// topology dumps show), 25 GB/s per link per direction (900 GB/s bidirectional per GPU);
// PCIe Gen5; 8 x 400G ConnectX-7, one per GPU on its PCIe switch (PIX, nccl#1357);
// 2 x Xeon Platinum 8480C (56 cores).
ServerSpec dgx_h100() {
  ServerSpec s = dgx_a100();
  s.model = "dgx-h100";
  s.gpu_name = "H100-SXM5-80GB";
  s.gpu_sm = 90;
  s.cores_per_socket = 56;
  // Eight PCIe Gen5 switches, four per socket, each with one GPU and its one compute NIC
  // (GPU i and NIC i are PIX; other NICs of the socket are NODE, the other socket's SYS).
  s.pcie_switches.clear();
  s.gpus.clear();
  s.nics.clear();
  for (int i = 0; i < 8; ++i) {
    s.pcie_switches.push_back({i / 4, 1});
    s.gpus.push_back({i, 0});
    s.nics.push_back({i, 0});
  }
  s.gpu_pcie = s.nic_pcie = s.uplink_pcie = PcieLink{5, 16};
  s.nic_rate = 400_Gbps;
  s.nvswitch_links = {5, 5, 4, 4};
  return s;
}

// NVIDIA DGX B200 (DGX B200 user guide): 8 x B200 with fifth-generation NVLink, 18 links of
// 50 GB/s per direction per GPU, 9 to each of the 2 NVLink-5 switch chips; otherwise the
// DGX H100 layout (PCIe Gen5, one 400G ConnectX-7 per GPU under its switch), 2 x Xeon
// Platinum 8570 (56 cores).
ServerSpec dgx_b200() {
  ServerSpec s = dgx_h100();
  s.model = "dgx-b200";
  s.gpu_name = "B200";
  s.gpu_sm = 100;
  s.nvlink_rate = 400_Gbps;  // 50 GB/s per link per direction
  s.nvswitch_links = {9, 9};
  return s;
}

// A generic PCIe-only 8-GPU server (e.g. 8 x A100-PCIe or L40S): 4 PCIe Gen4 switches with two
// GPUs each, one 100G NIC per switch, two sockets, no NVLink.
ServerSpec pcie_8gpu() {
  ServerSpec s = dgx_a100();
  s.model = "pcie-8gpu";
  s.gpu_name = "A100-PCIE-40GB";
  s.pcie_switches = {{0, 1}, {0, 1}, {1, 1}, {1, 1}};
  s.nics.clear();
  s.nic_names.clear();
  for (int n = 0; n < 4; ++n) {
    s.nics.push_back({n, 0});
    s.nic_names.push_back(fmt::format("mlx5_{}", n));
  }
  s.nic_rate = 100_Gbps;
  s.nvswitch_links.clear();
  s.nvlink_pairs.assign(8, std::vector<int>(8, 0));
  return s;
}

}  // namespace

std::vector<std::string> server_preset_names() {
  return {"dgx-a100", "dgx-h100", "dgx-b200", "pcie-8gpu"};
}

ServerSpec server_preset(std::string_view name) {
  if (name == "dgx-a100") return dgx_a100();
  if (name == "dgx-h100") return dgx_h100();
  if (name == "dgx-b200") return dgx_b200();
  if (name == "pcie-8gpu") return pcie_8gpu();
  throw std::invalid_argument(fmt::format("unknown server preset \"{}\"", name));
}

std::vector<Vertex> add_server(Topology& topo, const ServerSpec& s, int server) {
  const auto name = [&](std::string_view what, int i) {
    return fmt::format("server{}.{}{}", server, what, i);
  };
  std::vector<Vertex> cpus, pcie, gpus, nvswitches, nics;
  for (int c = 0; c < s.sockets; ++c)
    cpus.push_back(topo.add_node({NodeKind::kCpu, name("cpu", c), server, c, 0, 0, c}));
  for (int a = 0; a < s.sockets; ++a)
    for (int b = a + 1; b < s.sockets; ++b)
      topo.add_link(cpus[a], cpus[b],
                    {LinkKind::kInterSocket, s.inter_socket_rate, s.inter_socket_latency, 1, 0});
  for (std::size_t p = 0; p < s.pcie_switches.size(); ++p) {
    const int socket = s.pcie_switches[p].socket;
    pcie.push_back(topo.add_node({NodeKind::kPcieSwitch, name("pcie", static_cast<int>(p)), server,
                                  static_cast<int>(p), 0, 0, socket, s.pcie_switches[p].levels}));
    topo.add_link(pcie.back(), cpus[socket],
                  {LinkKind::kPcie, s.uplink_pcie.rate(), s.pcie_latency, 1, 0});
  }
  const auto attach = [&](Vertex v, const ServerDevice& d, const PcieLink& link) {
    const Vertex up = d.pcie_switch >= 0 ? pcie[d.pcie_switch] : cpus[d.socket];
    topo.add_link(v, up, {LinkKind::kPcie, link.rate(), s.pcie_latency, 1, 0});
  };
  for (std::size_t g = 0; g < s.gpus.size(); ++g) {
    gpus.push_back(topo.add_node({NodeKind::kGpu, name("gpu", static_cast<int>(g)), server,
                                  static_cast<int>(g), 0, 0, s.socket_of(s.gpus[g])}));
    attach(gpus.back(), s.gpus[g], s.gpu_pcie);
  }
  for (std::size_t w = 0; w < s.nvswitch_links.size(); ++w) {
    nvswitches.push_back(topo.add_node({NodeKind::kNvSwitch, name("nvswitch", static_cast<int>(w)),
                                        server, static_cast<int>(w), 0, 0, 0}));
    for (const Vertex g : gpus)
      topo.add_link(g, nvswitches.back(),
                    {LinkKind::kNvLink, s.nvlink_rate * s.nvswitch_links[w], s.nvlink_latency,
                     s.nvswitch_links[w], 0});
  }
  for (std::size_t a = 0; a < s.nvlink_pairs.size(); ++a)
    for (std::size_t b = a + 1; b < s.nvlink_pairs.size(); ++b)
      if (const int n = s.nvlink_pairs[a][b]; n > 0)
        topo.add_link(gpus[a], gpus[b],
                      {LinkKind::kNvLink, s.nvlink_rate * n, s.nvlink_latency, n, 0});
  for (std::size_t n = 0; n < s.nics.size(); ++n) {
    nics.push_back(
        topo.add_node({NodeKind::kNic, fmt::format("server{}.{}", server, s.nic_names[n]), server,
                       static_cast<int>(n), 0, 0, s.socket_of(s.nics[n])}));
    attach(nics.back(), s.nics[n], s.nic_pcie);
  }
  return nics;
}

// ---------------------------------------------------------------------------------------------
// nvidia-smi topo -m

namespace {

constexpr std::string_view kLegend =
    "Legend:\n\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., "
    "QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
    "within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
    "Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n";

std::string pcie_relation(const ServerSpec& s, const ServerDevice& a, const ServerDevice& b) {
  if (a.pcie_switch >= 0 && a.pcie_switch == b.pcie_switch)
    return s.pcie_switches[a.pcie_switch].levels > 1 ? "PXB" : "PIX";
  if (s.socket_of(a) != s.socket_of(b)) return "SYS";
  // One host bridge per socket: a device on the root complex reaches anything else of its
  // socket through that bridge (PHB); two different PCIe switches hang off different host
  // bridges of the socket (NODE), as in DGX systems.
  if (a.pcie_switch < 0 || b.pcie_switch < 0) return "PHB";
  return "NODE";
}

bool is_relation(std::string_view t) {
  static const std::regex nv("NV[0-9]+");
  return t == "X" || t == "PIX" || t == "PXB" || t == "PHB" || t == "NODE" || t == "SYS" ||
         t == "SOC" || std::regex_match(std::string(t), nv);
}

// mlx5_2 before mlx5_10: names compared with their trailing numbers as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  const auto split = [](const std::string& x) {
    std::size_t d = x.size();
    while (d > 0 && std::isdigit(static_cast<unsigned char>(x[d - 1]))) --d;
    const long n = d < x.size() ? std::stol(x.substr(d)) : -1;
    return std::pair{x.substr(0, d), n};
  };
  return split(a) < split(b);
}

std::vector<std::string> split_ws(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

}  // namespace

TopoMatrix topo_matrix(const ServerSpec& s) {
  TopoMatrix m;
  const int g = static_cast<int>(s.gpus.size());
  std::vector<const ServerDevice*> dev;
  for (int i = 0; i < g; ++i) {
    m.devices.push_back(fmt::format("GPU{}", i));
    dev.push_back(&s.gpus[i]);
  }
  // Storage NICs go back between the compute NICs in the order of their names, as the driver
  // lists them (mlx5_0, mlx5_1, ...), so an imported matrix exports unchanged.
  std::vector<std::pair<const ServerDevice*, const std::string*>> nics;
  for (std::size_t i = 0; i < s.nics.size(); ++i) nics.emplace_back(&s.nics[i], &s.nic_names[i]);
  for (std::size_t i = 0; i < s.storage_nics.size(); ++i)
    nics.emplace_back(&s.storage_nics[i], &s.storage_nic_names[i]);
  if (!s.storage_nics.empty())
    std::stable_sort(nics.begin(), nics.end(), [](const auto& a, const auto& b) {
      return natural_less(*a.second, *b.second);
    });
  for (std::size_t i = 0; i < nics.size(); ++i) {
    m.devices.push_back(fmt::format("NIC{}", i));
    dev.push_back(nics[i].first);
    m.nic_names.push_back(*nics[i].second);
  }
  const int total = static_cast<int>(dev.size());
  m.relation.assign(total, std::vector<std::string>(total));
  for (int a = 0; a < total; ++a) {
    for (int b = 0; b < total; ++b) {
      if (a == b) {
        m.relation[a][b] = "X";
      } else if (a < g && b < g && s.nvlink_count(a, b) > 0) {
        m.relation[a][b] = fmt::format("NV{}", s.nvlink_count(a, b));
      } else {
        m.relation[a][b] = pcie_relation(s, *dev[a], *dev[b]);
      }
    }
    const int socket = s.socket_of(*dev[a]);
    const bool given = a < g && static_cast<std::size_t>(a) < s.gpu_cpu_affinity.size() &&
                       !s.gpu_cpu_affinity[a].empty();
    m.cpu_affinity.push_back(a >= g  ? ""
                             : given ? s.gpu_cpu_affinity[a]
                                     : fmt::format("{}-{}", socket * s.cores_per_socket,
                                                   (socket + 1) * s.cores_per_socket - 1));
    m.numa_affinity.push_back(a < g ? fmt::format("{}", dev[a]->numa >= 0 ? dev[a]->numa : socket)
                                    : "");
  }
  return m;
}

std::string format_topo_matrix(const TopoMatrix& m) {
  std::string out = "\t";
  for (const auto& d : m.devices) out += d + "\t";
  out += "CPU Affinity\tNUMA Affinity\tGPU NUMA ID\n";
  for (std::size_t a = 0; a < m.devices.size(); ++a) {
    out += m.devices[a];
    for (const auto& r : m.relation[a]) out += "\t" + (r == "X" ? std::string(" X ") : r);
    const bool gpu = m.devices[a].starts_with("GPU");
    if (gpu) out += fmt::format("\t{}\t{}\t\tN/A", m.cpu_affinity[a], m.numa_affinity[a]);
    out += "\n";
  }
  out += "\n";
  out += kLegend;
  if (!m.nic_names.empty()) {
    out += "\nNIC Legend:\n\n";
    for (std::size_t i = 0; i < m.nic_names.size(); ++i)
      out += fmt::format("  NIC{}: {}\n", i, m.nic_names[i]);
  }
  return out;
}

TopoMatrix parse_topo_matrix(std::string_view text) {
  TopoMatrix m;
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start <= text.size();) {
    const auto nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl == std::string_view::npos ? text.npos : nl - start));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  const auto fail = [](std::size_t line, const std::string& why) {
    throw std::invalid_argument(fmt::format("line {}: {}", line + 1, why));
  };
  static const std::regex device_re("(GPU[0-9]+|NIC[0-9]+|mlx[0-9]+_[0-9]+|[a-z]+[0-9]*_[0-9]+)");
  std::size_t header = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto t = split_ws(lines[i]);
    if (!t.empty() && t[0] == "GPU0") {
      header = i;
      break;
    }
  }
  if (header == lines.size())
    fail(0, "no header row starting with GPU0: not `nvidia-smi topo -m` output");
  for (const auto& t : split_ws(lines[header])) {
    if (!std::regex_match(t, device_re)) break;
    m.devices.push_back(t);
  }
  const std::size_t n = m.devices.size();
  m.relation.assign(n, {});
  m.cpu_affinity.assign(n, "");
  m.numa_affinity.assign(n, "");
  std::size_t row = 0, i = header + 1;
  for (; i < lines.size() && row < n; ++i) {
    auto t = split_ws(lines[i]);
    if (t.empty()) continue;
    if (t[0] != m.devices[row])
      fail(i, fmt::format("expected the row of {}, found \"{}\"", m.devices[row], t[0]));
    if (t.size() < n + 1)
      fail(i, fmt::format("{} has {} relations, expected {}", t[0], t.size() - 1, n));
    for (std::size_t c = 0; c < n; ++c) {
      std::string r = t[c + 1];
      if (!is_relation(r))
        fail(i, fmt::format("unknown relation \"{}\" between {} and {} (expected X, NV#, PIX, PXB, "
                            "PHB, NODE, SYS or SOC)",
                            r, m.devices[row], m.devices[c]));
      if (r == "SOC") r = "SYS";  // older drivers
      m.relation[row].push_back(r);
    }
    if (t.size() > n + 1) m.cpu_affinity[row] = t[n + 1];
    if (t.size() > n + 2) m.numa_affinity[row] = t[n + 2] == "N/A" ? "" : t[n + 2];
    ++row;
  }
  if (row < n) fail(i, fmt::format("the matrix ends after {} of {} rows", row, n));
  for (std::size_t a = 0; a < n; ++a) {
    if (m.relation[a][a] != "X")
      fail(header + 1 + a, fmt::format("{} is not X to itself", m.devices[a]));
    for (std::size_t b = 0; b < n; ++b)
      if (m.relation[a][b] != m.relation[b][a])
        fail(header + 1 + a,
             fmt::format("{}-{} is {} but {}-{} is {}", m.devices[a], m.devices[b],
                         m.relation[a][b], m.devices[b], m.devices[a], m.relation[b][a]));
  }
  // NIC legend ("NIC0: mlx5_0"); mlx5_N column names are their own names.
  static const std::regex legend_re(R"(\s*(NIC[0-9]+):\s*(\S+)\s*)");
  std::map<std::string, std::string> legend;
  for (; i < lines.size(); ++i) {
    std::cmatch match;
    const std::string line(lines[i]);
    if (std::regex_match(line.c_str(), match, legend_re)) legend[match[1]] = match[2];
  }
  for (const auto& d : m.devices) {
    if (d.starts_with("GPU")) continue;
    if (d.starts_with("NIC")) {
      const auto it = legend.find(d);
      m.nic_names.push_back(it != legend.end() ? it->second : d);
    } else {
      m.nic_names.push_back(d);
    }
  }
  return m;
}

std::vector<int> spread_nvswitch_links(int links, int switches) {
  if (switches <= 0 || links <= 0) return {};
  std::vector<int> out(switches, links / switches);
  for (int i = 0; i < links % switches; ++i) ++out[i];
  return out;
}

ServerSpec server_from_matrix(const TopoMatrix& m, const ServerSpec& defaults,
                              const ImportOptions& options) {
  ServerSpec s = defaults;
  s.model = "imported";
  const std::size_t n = m.devices.size();
  std::vector<std::size_t> gpu_idx, nic_idx;
  for (std::size_t i = 0; i < n; ++i)
    (m.devices[i].starts_with("GPU") ? gpu_idx : nic_idx).push_back(i);
  const auto rel = [&](std::size_t a, std::size_t b) -> const std::string& {
    return m.relation[a][b];
  };
  // NUMA node per device as printed (GPUs only; "" or "N/A" unknown).
  std::vector<int> numa(n, -1);
  static const std::regex node_re("[0-9]+");
  for (std::size_t i = 0; i < n; ++i)
    if (std::regex_match(m.numa_affinity[i], node_re)) numa[i] = std::stoi(m.numa_affinity[i]);

  // Sockets: devices connected by anything but SYS share a socket, and so do devices of one
  // NUMA node (union-find). GPUs only NVLinked to each other carry no PCIe information among
  // themselves; NICs or their NUMA nodes tie them.
  boost::disjoint_sets_with_storage<> sets(n);
  for (std::size_t i = 0; i < n; ++i) sets.make_set(i);
  const auto find = [&](std::size_t x) { return sets.find_set(x); };
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b)
      if (rel(a, b) == "PIX" || rel(a, b) == "PXB" || rel(a, b) == "PHB" || rel(a, b) == "NODE" ||
          (numa[a] >= 0 && numa[a] == numa[b]))
        sets.union_set(a, b);
  std::map<std::size_t, int> socket_of_root;
  std::vector<int> socket(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto root = find(i);
    auto it = socket_of_root.find(root);
    if (it == socket_of_root.end())
      it = socket_of_root.emplace(root, static_cast<int>(socket_of_root.size())).first;
    socket[i] = it->second;
  }
  s.sockets = std::max<int>(1, static_cast<int>(socket_of_root.size()));
  // A NIC's node is that of the GPUs of its socket when they agree on one.
  for (auto i : nic_idx) {
    std::set<int> nodes;
    for (auto gpu : gpu_idx)
      if (socket[gpu] == socket[i] && numa[gpu] >= 0) nodes.insert(numa[gpu]);
    if (nodes.size() == 1) numa[i] = *nodes.begin();
  }

  // PCIe switches: connected groups of devices that are PIX/PXB to each other (a GPU pair that
  // shows NV# still shares a switch through the NICs they are both PIX/PXB to).
  for (std::size_t i = 0; i < n; ++i) sets.make_set(i);  // start again: one set per device
  const auto under_switch = [&](std::size_t a, std::size_t b) {
    return rel(a, b) == "PIX" || rel(a, b) == "PXB";
  };
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b)
      if (under_switch(a, b)) sets.union_set(a, b);
  std::vector<int> switch_of(n, -1);
  std::map<std::size_t, int> switch_of_root;
  s.pcie_switches.clear();
  for (std::size_t a = 0; a < n; ++a) {
    bool grouped = false;
    for (std::size_t b = 0; b < n; ++b) grouped |= under_switch(a, b);
    if (!grouped) continue;
    auto [it, inserted] =
        switch_of_root.try_emplace(find(a), static_cast<int>(s.pcie_switches.size()));
    if (inserted) s.pcie_switches.push_back({socket[a], 1});
    switch_of[a] = it->second;
  }
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b)
      if (rel(a, b) == "PXB") s.pcie_switches[switch_of[a]].levels = 2;
  const auto device = [&](std::size_t i) { return ServerDevice{switch_of[i], socket[i], numa[i]}; };
  s.gpus.clear();
  s.gpu_cpu_affinity.clear();
  for (auto i : gpu_idx) {
    s.gpus.push_back(device(i));
    s.gpu_cpu_affinity.push_back(m.cpu_affinity[i]);
  }

  // Compute NICs and storage NICs (ImportOptions).
  for (const auto& name : options.compute_nics)
    if (std::find(m.nic_names.begin(), m.nic_names.end(), name) == m.nic_names.end())
      throw std::invalid_argument(
          fmt::format("compute NIC \"{}\" is not in the matrix (its NICs: {})", name,
                      fmt::join(m.nic_names, ", ")));
  std::vector<bool> beside_gpu(nic_idx.size());
  for (std::size_t k = 0; k < nic_idx.size(); ++k)
    beside_gpu[k] = std::any_of(gpu_idx.begin(), gpu_idx.end(),
                                [&](std::size_t gpu) { return under_switch(nic_idx[k], gpu); });
  const bool any_beside = std::find(beside_gpu.begin(), beside_gpu.end(), true) != beside_gpu.end();
  const auto is_compute = [&](std::size_t k) {
    if (options.include_storage_nics) return true;
    if (!options.compute_nics.empty())
      return std::find(options.compute_nics.begin(), options.compute_nics.end(), m.nic_names[k]) !=
             options.compute_nics.end();
    return !any_beside || beside_gpu[k];
  };
  s.nics.clear();
  s.nic_names.clear();
  s.storage_nics.clear();
  s.storage_nic_names.clear();
  for (std::size_t k = 0; k < nic_idx.size(); ++k) {
    const bool compute = is_compute(k);
    (compute ? s.nics : s.storage_nics).push_back(device(nic_idx[k]));
    (compute ? s.nic_names : s.storage_nic_names).push_back(m.nic_names[k]);
  }
  static const std::regex range_re("([0-9]+)-([0-9]+)");
  std::smatch range;
  for (auto i : gpu_idx)
    if (std::regex_match(m.cpu_affinity[i], range, range_re)) {
      s.cores_per_socket = std::stoi(range[2]) - std::stoi(range[1]) + 1;
      break;
    }

  // NVLink: the same NV# between every GPU pair is read as an NVSwitch system; anything else as
  // direct bonded links.
  const std::size_t g = gpu_idx.size();
  std::vector<std::vector<int>> nv(g, std::vector<int>(g, 0));
  bool uniform = g > 2;
  int first = -1;
  for (std::size_t a = 0; a < g; ++a)
    for (std::size_t b = 0; b < g; ++b) {
      const auto& r = rel(gpu_idx[a], gpu_idx[b]);
      if (r.starts_with("NV")) nv[a][b] = std::stoi(r.substr(2));
      if (a != b) {
        if (first < 0) first = nv[a][b];
        uniform &= nv[a][b] == first && first > 0;
      }
    }
  s.nvswitch_links.clear();
  s.nvlink_pairs.clear();
  if (uniform) {
    // The matrix gives the links per GPU, not how many chips they go to: lspci's count when
    // known, else the preset's split when it has as many links, else one chip.
    int preset_links = 0;
    for (int l : defaults.nvswitch_links) preset_links += l;
    s.nvswitch_links = options.nvswitches > 0  ? spread_nvswitch_links(first, options.nvswitches)
                       : preset_links == first ? defaults.nvswitch_links
                                               : std::vector<int>{first};
  } else {
    s.nvlink_pairs = nv;
  }
  return s;
}

}  // namespace fabricsim
