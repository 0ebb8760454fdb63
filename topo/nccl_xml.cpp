#include "topo/nccl_xml.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>

namespace fabricsim {
namespace pt = boost::property_tree;

namespace {

constexpr std::string_view kNvSwitchClass = "0x068000";
constexpr std::string_view kGpuClass = "0x030200";
constexpr std::string_view kBridgeClass = "0x060400";
constexpr std::string_view kNicClass = "0x020700";

std::string bus(int n) {
  return fmt::format("0000:{:02x}:00.0", n);
}
std::string gpu_bus(int g) {
  return bus(0x80 + g);
}
std::string nic_bus(int n) {
  return bus(0xa0 + n);
}
std::string nvswitch_bus(int w) {
  return bus(0xc0 + w);
}

std::string link_speed(const PcieLink& l) {
  static constexpr const char* kSpeed[] = {"", "2.5", "5.0", "8.0", "16.0", "32.0", "64.0"};
  return fmt::format("{} GT/s PCIe", kSpeed[std::clamp(l.generation, 1, 6)]);
}

int generation_of(const std::string& speed) {
  const double gts = std::stod(speed);
  if (gts <= 2.5) return 1;
  if (gts <= 5) return 2;
  if (gts <= 8) return 3;
  if (gts <= 16) return 4;
  if (gts <= 32) return 5;
  return 6;
}

pt::ptree& pci(pt::ptree& parent, const std::string& busid, std::string_view cls,
               const PcieLink& l) {
  pt::ptree& node = parent.add_child("pci", pt::ptree{});
  node.put("<xmlattr>.busid", busid);
  node.put("<xmlattr>.class", std::string(cls));
  node.put("<xmlattr>.link_speed", link_speed(l));
  node.put("<xmlattr>.link_width", l.width);
  return node;
}

std::string cpu_affinity_mask(int socket, int cores) {
  // One bit per core of this socket, as NCCL prints cpusets (32-bit groups, comma separated).
  const int first = socket * cores, last = first + cores - 1;
  const int words = last / 32 + 1;
  std::string out;
  for (int w = words - 1; w >= 0; --w) {
    std::uint32_t bits = 0;
    for (int b = 0; b < 32; ++b)
      if (w * 32 + b >= first && w * 32 + b <= last) bits |= 1u << b;
    out += fmt::format("{}{:08x}", out.empty() ? "" : ",", bits);
  }
  return out;
}

}  // namespace

std::string export_nccl_xml(const ServerSpec& s) {
  pt::ptree root;
  pt::ptree& system = root.add_child("system", pt::ptree{});
  system.put("<xmlattr>.version", 1);
  std::vector<pt::ptree*> cpus, switches;
  for (int c = 0; c < s.sockets; ++c) {
    pt::ptree& cpu = system.add_child("cpu", pt::ptree{});
    cpu.put("<xmlattr>.numaid", c);
    cpu.put("<xmlattr>.affinity", cpu_affinity_mask(c, s.cores_per_socket));
    cpu.put("<xmlattr>.arch", "x86_64");
    cpus.push_back(&cpu);
  }
  for (std::size_t p = 0; p < s.pcie_switches.size(); ++p)
    switches.push_back(&pci(*cpus[s.pcie_switches[p].socket], bus(0x10 + static_cast<int>(p)),
                            kBridgeClass, s.uplink_pcie));
  // A device's parent: its switch (through a second bridge when the switch is two-level) or
  // its CPU's root complex.
  int next_bridge = 0x40;
  const auto parent_of = [&](const ServerDevice& d, const PcieLink& l) -> pt::ptree& {
    if (d.pcie_switch < 0) return *cpus[d.socket];
    pt::ptree& sw = *switches[d.pcie_switch];
    if (s.pcie_switches[d.pcie_switch].levels > 1)
      return pci(sw, bus(next_bridge++), kBridgeClass, l);
    return sw;
  };
  for (std::size_t g = 0; g < s.gpus.size(); ++g) {
    pt::ptree& dev =
        pci(parent_of(s.gpus[g], s.gpu_pcie), gpu_bus(static_cast<int>(g)), kGpuClass, s.gpu_pcie);
    pt::ptree& gpu = dev.add_child("gpu", pt::ptree{});
    gpu.put("<xmlattr>.dev", g);
    gpu.put("<xmlattr>.sm", s.gpu_sm);
    gpu.put("<xmlattr>.rank", g);
    gpu.put("<xmlattr>.gdr", 1);
    const auto nvlink = [&](const std::string& target, int count, std::string_view tclass) {
      pt::ptree& l = gpu.add_child("nvlink", pt::ptree{});
      l.put("<xmlattr>.target", target);
      l.put("<xmlattr>.count", count);
      l.put("<xmlattr>.tclass", std::string(tclass));
    };
    for (std::size_t w = 0; w < s.nvswitch_links.size(); ++w)
      nvlink(nvswitch_bus(static_cast<int>(w)), s.nvswitch_links[w], kNvSwitchClass);
    for (std::size_t p = 0; p < s.nvlink_pairs.size(); ++p)
      if (s.nvlink_pairs[g][p] > 0)
        nvlink(gpu_bus(static_cast<int>(p)), s.nvlink_pairs[g][p], kGpuClass);
  }
  for (std::size_t n = 0; n < s.nics.size(); ++n) {
    pt::ptree& dev =
        pci(parent_of(s.nics[n], s.nic_pcie), nic_bus(static_cast<int>(n)), kNicClass, s.nic_pcie);
    pt::ptree& net = dev.add_child("nic", pt::ptree{}).add_child("net", pt::ptree{});
    net.put("<xmlattr>.name", s.nic_names[n]);
    net.put("<xmlattr>.dev", n);
    net.put("<xmlattr>.speed", s.nic_rate.bps() / 1'000'000);
    net.put("<xmlattr>.port", 1);
    net.put("<xmlattr>.gdr", 1);
  }
  std::ostringstream out;
  pt::write_xml(out, root, pt::xml_writer_make_settings<std::string>(' ', 2));
  return out.str();
}

ServerSpec import_nccl_xml(std::string_view xml, const ServerSpec& defaults) {
  pt::ptree root;
  std::istringstream in{std::string(xml)};
  try {
    pt::read_xml(in, root, pt::xml_parser::trim_whitespace);
  } catch (const pt::xml_parser_error& e) {
    throw std::invalid_argument(fmt::format("line {}: not valid XML: {}", e.line(), e.message()));
  }
  const auto system = root.get_child_optional("system");
  if (!system) throw std::invalid_argument("no <system> element: not an NCCL topology file");

  ServerSpec s = defaults;
  s.model = "imported";
  s.gpus.clear();
  s.nics.clear();
  s.nic_names.clear();
  s.pcie_switches.clear();
  s.nvswitch_links.clear();
  s.nvlink_pairs.clear();
  struct GpuLinks {
    int dev;
    std::vector<std::pair<std::string, int>> nvswitch, direct;  // (target busid, count)
    std::string busid;
  };
  std::vector<GpuLinks> gpu_links;
  std::vector<std::pair<int, ServerDevice>> gpus, nics;  // (dev index, placement)
  std::map<int, std::string> nic_name;
  std::map<std::string, int> gpu_index_of_bus;
  int sockets = 0;

  // Walks a pci subtree. `sw` is the PCIe switch this subtree is under (-1 at the CPU), `depth`
  // the number of bridges between the switch's top bridge and here.
  std::function<void(const pt::ptree&, int, int, int)> walk = [&](const pt::ptree& node, int socket,
                                                                  int sw, int depth) {
    for (const auto& [tag, child] : node) {
      if (tag != "pci") continue;
      const std::string cls = child.get<std::string>("<xmlattr>.class", "");
      if (const auto width = child.get_optional<int>("<xmlattr>.link_width")) {
        const auto speed = child.get<std::string>("<xmlattr>.link_speed", "16.0 GT/s PCIe");
        const PcieLink link{generation_of(speed), *width};
        if (child.get_child_optional("gpu"))
          s.gpu_pcie = link;
        else if (child.get_child_optional("nic"))
          s.nic_pcie = link;
        else if (sw < 0)
          s.uplink_pcie = link;
      }
      const ServerDevice placement{sw, socket};
      if (const auto gpu = child.get_child_optional("gpu")) {
        const auto dev = gpu->get_optional<int>("<xmlattr>.dev");
        if (!dev) throw std::invalid_argument("a <gpu> element has no dev attribute");
        s.gpu_sm = gpu->get<int>("<xmlattr>.sm", s.gpu_sm);
        GpuLinks links{*dev, {}, {}, child.get<std::string>("<xmlattr>.busid", "")};
        for (const auto& [ltag, l] : *gpu) {
          if (ltag != "nvlink") continue;
          const auto target = l.get<std::string>("<xmlattr>.target", "");
          const int count = l.get<int>("<xmlattr>.count", 1);
          (l.get<std::string>("<xmlattr>.tclass", "") == kNvSwitchClass ? links.nvswitch
                                                                        : links.direct)
              .emplace_back(target, count);
        }
        gpu_index_of_bus[links.busid] = *dev;
        gpu_links.push_back(std::move(links));
        gpus.emplace_back(*dev, placement);
      } else if (const auto nic = child.get_child_optional("nic")) {
        for (const auto& [ntag, net] : *nic) {
          if (ntag != "net") continue;
          const int dev = net.get<int>("<xmlattr>.dev", static_cast<int>(nics.size()));
          nic_name[dev] = net.get<std::string>("<xmlattr>.name", fmt::format("net{}", dev));
          s.nic_rate = Bandwidth::from_bps(net.get<std::int64_t>("<xmlattr>.speed", 0) * 1'000'000);
          nics.emplace_back(dev, placement);
        }
      } else if (cls.starts_with("0x0604")) {
        if (sw < 0) {
          s.pcie_switches.push_back({socket, 1});
          walk(child, socket, static_cast<int>(s.pcie_switches.size()) - 1, 0);
        } else {
          s.pcie_switches[sw].levels = std::max(s.pcie_switches[sw].levels, depth + 2);
          walk(child, socket, sw, depth + 1);
        }
      }
    }
  };
  for (const auto& [tag, cpu] : *system) {
    if (tag != "cpu") continue;
    const int socket = sockets++;
    walk(cpu, socket, -1, 0);
  }
  if (gpus.empty() && nics.empty())
    throw std::invalid_argument("the topology has no GPU and no NIC");
  s.sockets = std::max(1, sockets);
  std::sort(gpus.begin(), gpus.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::sort(nics.begin(), nics.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (auto& [dev, d] : gpus) s.gpus.push_back(d);
  for (auto& [dev, d] : nics) {
    s.nics.push_back(d);
    s.nic_names.push_back(nic_name[dev]);
  }
  // NVLink: switch links in target order of the first GPU; direct links into a pair matrix.
  std::sort(gpu_links.begin(), gpu_links.end(), [](auto& a, auto& b) { return a.dev < b.dev; });
  bool direct = false;
  for (const auto& g : gpu_links) direct |= !g.direct.empty();
  if (direct) {
    s.nvlink_pairs.assign(gpus.size(), std::vector<int>(gpus.size(), 0));
    for (const auto& g : gpu_links)
      for (const auto& [target, count] : g.direct)
        if (const auto it = gpu_index_of_bus.find(target); it != gpu_index_of_bus.end())
          s.nvlink_pairs[g.dev][it->second] = count;
  } else if (!gpu_links.empty()) {
    for (const auto& [target, count] : gpu_links.front().nvswitch)
      s.nvswitch_links.push_back(count);
  }
  return s;
}

}  // namespace fabricsim
