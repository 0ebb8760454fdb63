#include "topo/communicator.hpp"

#include "topo/host_paths.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

namespace fabricsim {

namespace {

// The SHARP streaming-aggregation trees for a communicator, one per CollNet head index h
// (the aggregation manager builds a tree per group of NICs, NCCL opens a CollNet
// communicator per head). Tree h joins the leaf switch of head h's NIC on every server and,
// where they differ, a root among the lowest-tier switches every one of those leaves reaches
// going up (tier by tier); each leaf joins the root along the first shortest upward path (port
// order) until it meets the tree. The nodes are the switches' aggregation nodes.
//
// Limits (NVIDIA SHARP 3.13 release notes): a Quantum (HDR) switch runs one streaming
// aggregation tree at a time, a Quantum-2 (NDR) one per port. `per_switch` > 0 allows that
// many trees through a switch; 0 one per port: no two trees share a cable between two switches
// (a head's NIC is its tree's alone). Roots are tried from number h mod their count on, in
// vertex order, and the first whose tree fits beside the trees already placed is taken (the
// manager spreads trees over the spines); when none fits, the communicator gets no CollNet and
// sharp_refused says which switch or cable ran out.
void add_sharp_trees(const Topology& topo, const Routing& routing, CommLayout& layout,
                     int per_switch) {
  const auto& g = topo.graph();
  std::map<Vertex, std::uint32_t> aggregator_of;  // switch -> its aggregation node's endpoint
  for (std::size_t a = 0; a < topo.aggregators().size(); ++a)
    for (auto [e, end] = boost::out_edges(topo.aggregators()[a], g); e != end; ++e)
      aggregator_of[boost::target(*e, g)] = static_cast<std::uint32_t>(topo.endpoints().size() + a);
  const auto heads = nvls_tree_heads(layout);
  if (heads.size() < 2 || aggregator_of.empty()) return;
  const auto up_neighbors = [&](Vertex v) {
    std::vector<Vertex> out;
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
      const Vertex u = boost::target(*e, g);
      if (g[u].kind == NodeKind::kSwitch && g[u].tier > g[v].tier &&
          std::find(out.begin(), out.end(), u) == out.end())
        out.push_back(u);
    }
    return out;
  };
  const auto links_between = [&](Vertex a, Vertex b) {
    int links = 0;
    for (auto [e, end] = boost::out_edges(a, g); e != end; ++e) links += boost::target(*e, g) == b;
    return links;
  };
  std::map<std::pair<Vertex, Vertex>, int> cable_trees;  // (child, parent) -> trees placed
  std::map<Vertex, int> switch_trees;
  for (std::size_t h = 0; h < heads.front().size(); ++h) {
    std::vector<Vertex> leaf(heads.size());
    for (std::size_t p = 0; p < heads.size(); ++p)
      leaf[p] = routing.switch_vertex(routing.endpoint_switch(layout.ranks[heads[p][h]].nic));
    const std::set<Vertex> leaves(leaf.begin(), leaf.end());
    // Per leaf: every switch it reaches going up, with the first shortest way's previous hop.
    std::map<Vertex, std::map<Vertex, Vertex>> came_from;
    for (const Vertex l : leaves) {
      auto& seen = came_from[l];
      std::vector<Vertex> frontier{l};
      seen[l] = l;
      while (!frontier.empty()) {
        std::vector<Vertex> next;
        for (const Vertex v : frontier)
          for (const Vertex u : up_neighbors(v))
            if (seen.try_emplace(u, v).second) next.push_back(u);
        frontier = std::move(next);
      }
    }
    std::vector<Vertex> roots{*leaves.begin()};
    if (leaves.size() > 1) {
      roots.clear();
      for (const auto& [v, from] : came_from.begin()->second)
        if (std::all_of(leaves.begin(), leaves.end(),
                        [&](Vertex l) { return came_from[l].contains(v); }))
          roots.push_back(v);
      if (roots.empty()) {
        layout.sharp_refused = fmt::format(
            "no switch is above every leaf of head {}'s NICs, so no aggregation tree joins them",
            h);
        layout.sharp_trees.clear();
        return;
      }
      int lowest = std::numeric_limits<int>::max();
      for (const Vertex v : roots) lowest = std::min(lowest, g[v].tier);
      std::erase_if(roots, [&](Vertex v) { return g[v].tier != lowest; });
      std::rotate(roots.begin(), roots.begin() + static_cast<std::ptrdiff_t>(h % roots.size()),
                  roots.end());
    }
    // The tree under `root`: its switches (root first) with their parents, and its cables.
    struct Candidate {
      std::vector<Vertex> switches;
      std::vector<std::int32_t> parent;
      std::vector<std::pair<Vertex, Vertex>> cables;  // (child, parent)
      std::string blocked;                            // why it does not fit, "" if it does
    };
    const auto grow = [&](Vertex root) {
      Candidate c{{root}, {-1}, {}, {}};
      const auto index = [&](Vertex sw) {
        return std::find(c.switches.begin(), c.switches.end(), sw) - c.switches.begin();
      };
      for (const Vertex l : leaves) {
        std::vector<Vertex> way{root};  // down from the root to the leaf
        while (way.back() != l) way.push_back(came_from[l].at(way.back()));
        std::size_t meet = way.size() - 1;  // the first switch already in the tree
        while (index(way[meet]) == static_cast<std::ptrdiff_t>(c.switches.size())) --meet;
        for (std::size_t i = meet + 1; i < way.size(); ++i) {
          c.switches.push_back(way[i]);
          c.parent.push_back(static_cast<std::int32_t>(index(way[i - 1])));
          c.cables.emplace_back(way[i], way[i - 1]);
        }
      }
      for (const Vertex sw : c.switches)
        if (per_switch > 0 && c.blocked.empty() && switch_trees[sw] + 1 > per_switch)
          c.blocked = fmt::format(
              "switch {} would hold {} streaming-aggregation trees (one per CollNet head), more "
              "than the {} it can (switch.sharp_trees)",
              g[sw].name, switch_trees[sw] + 1, per_switch);
      for (const auto& [child, up] : c.cables)
        if (per_switch == 0 && c.blocked.empty() &&
            cable_trees[{child, up}] + 1 > links_between(child, up))
          c.blocked = fmt::format(
              "{} streaming-aggregation trees (one per CollNet head) would share the {} link(s) "
              "from {} to {}; a switch runs one tree per port (switch.sharp_trees = 0)",
              cable_trees[{child, up}] + 1, links_between(child, up), g[child].name, g[up].name);
      return c;
    };
    Candidate pick = grow(roots.front());
    for (std::size_t r = 1; r < roots.size() && !pick.blocked.empty(); ++r)
      if (Candidate c = grow(roots[r]); c.blocked.empty()) pick = std::move(c);
    if (!pick.blocked.empty()) {
      layout.sharp_refused = pick.blocked;
      return;
    }
    AggregationTree tree;
    for (std::size_t i = 0; i < pick.switches.size(); ++i) {
      tree.node.push_back(aggregator_of.at(pick.switches[i]));
      tree.parent.push_back(pick.parent[i]);
      ++switch_trees[pick.switches[i]];
    }
    for (const auto& cable : pick.cables) ++cable_trees[cable];
    for (const Vertex l : leaf)
      tree.attach.push_back(static_cast<std::uint32_t>(
          std::find(pick.switches.begin(), pick.switches.end(), l) - pick.switches.begin()));
    layout.sharp_trees.push_back(std::move(tree));
  }
}

}  // namespace

CommLayout build_communicator(const Topology& topo, const Routing& routing,
                              const CommunicatorOptions& opt) {
  const auto& g = topo.graph();
  CommLayout layout;
  // Every GPU, by (server, index); endpoints of each server, by NIC index.
  std::map<std::pair<int, int>, Vertex> gpus;
  std::map<int, std::size_t> gpus_per_server;
  std::map<int, std::vector<std::uint32_t>> server_nics;
  for (auto [v, end] = boost::vertices(g); v != end; ++v)
    if (g[*v].kind == NodeKind::kGpu) {
      gpus[{g[*v].server, g[*v].index}] = *v;
      ++gpus_per_server[g[*v].server];
    }
  for (std::size_t e = 0; e < topo.endpoints().size(); ++e) {
    const NodeInfo& n = g[topo.endpoints()[e]];
    server_nics[gpus.empty() ? static_cast<int>(e) : n.server].push_back(
        static_cast<std::uint32_t>(e));
  }
  for (auto& [s, nics] : server_nics)
    std::sort(nics.begin(), nics.end(), [&](std::uint32_t a, std::uint32_t b) {
      return g[topo.endpoints()[a]].index < g[topo.endpoints()[b]].index;
    });
  const int total =
      gpus.empty() ? static_cast<int>(topo.endpoints().size()) : static_cast<int>(gpus.size());
  const int count = !opt.gpus.empty() ? static_cast<int>(opt.gpus.size())
                    : opt.ranks > 0   ? opt.ranks
                                      : total - opt.first_rank;
  const std::set<int> listed(opt.gpus.begin(), opt.gpus.end());
  const auto member = [&](int ordinal) {
    if (!listed.empty()) return listed.contains(ordinal);
    return ordinal >= opt.first_rank && ordinal < opt.first_rank + count;
  };
  for (int g : opt.gpus)
    if (g < 0 || g >= total)
      throw std::invalid_argument(
          fmt::format("GPU {} is not in the cluster (0 to {})", g, total - 1));
  if (opt.first_rank < 0 || count < 1 || (opt.gpus.empty() && opt.first_rank + count > total))
    throw std::invalid_argument(
        fmt::format("a communicator of {} ranks from rank {} does not fit the cluster's {} {}",
                    count, opt.first_rank, total, gpus.empty() ? "endpoints" : "GPUs"));

  // Ranks, and per rank its PCIe distance to each NIC of its server.
  std::vector<Vertex> rank_vertex;
  std::vector<std::map<std::uint32_t, int>> nic_distance;
  {
    int ordinal = 0;
    for (const auto& [key, v] : gpus) {
      if (member(ordinal)) {
        std::map<std::uint32_t, int> d;  // PCIe hops to each NIC of the server
        for (std::uint32_t e : server_nics[key.first])
          d[e] = static_cast<int>(pcie_path(g, v, topo.endpoints()[e]).size()) - 1;
        // Nearest NIC; on a tie the one paired with the GPU by index (GPU i with NIC
        // i x NICs / GPUs, as the host model pairs them).
        const auto& snics = server_nics[key.first];
        std::uint32_t nearest = snics[static_cast<std::size_t>(key.second) * snics.size() /
                                      gpus_per_server.at(key.first)];
        for (const auto& [e, hops] : d)
          if (hops < d[nearest]) nearest = e;
        layout.ranks.push_back({static_cast<std::uint32_t>(key.first),
                                static_cast<std::uint32_t>(ordinal), nearest,
                                static_cast<std::uint32_t>(key.second)});
        rank_vertex.push_back(v);
        nic_distance.push_back(std::move(d));
      }
      ++ordinal;
    }
    if (gpus.empty())
      for (int e = 0; e < total; ++e)
        if (member(e))
          layout.ranks.push_back(
              {static_cast<std::uint32_t>(e), Message::kPairedGpu, static_cast<std::uint32_t>(e)});
  }

  // Servers in ring order, each with its ranks in GPU index order.
  std::vector<int> servers;
  std::map<int, std::vector<std::uint32_t>> ranks_of;
  for (std::uint32_t r = 0; r < layout.ranks.size(); ++r) {
    const int s = static_cast<int>(layout.ranks[r].server);
    if (!ranks_of.contains(s)) servers.push_back(s);
    ranks_of[s].push_back(r);
  }
  if (opt.server_order == ServerOrder::kLeaf) {
    std::stable_sort(servers.begin(), servers.end(), [&](int a, int b) {
      return routing.endpoint_switch(server_nics[a].front()) <
             routing.endpoint_switch(server_nics[b].front());
    });
  } else if (opt.server_order == ServerOrder::kList) {
    std::vector<int> given = opt.server_list, have = servers;
    std::sort(given.begin(), given.end());
    std::sort(have.begin(), have.end());
    if (given != have)
      throw std::invalid_argument(fmt::format(
          "nccl.server_order lists servers [{}] but the communicator spans servers [{}]",
          fmt::join(opt.server_list, ", "), fmt::join(have, ", ")));
    servers = opt.server_list;
  }
  layout.servers = static_cast<int>(servers.size());

  // Each server's NICs for this communicator (NCCL's ncclTopoGetLocalNet, search.cc): the NICs
  // nearest (fewest PCIe hops) to at least one of the server's member GPUs, in NIC index order.
  // A whole DGX gets every NIC (each is some GPU's own); one GPU of a server gets its own NIC(s)
  // only, never the other socket's, which it could reach only through the CPUs.
  std::map<int, std::vector<std::uint32_t>> local_nics;
  for (const int s : servers) {
    std::set<std::uint32_t> chosen;
    for (std::uint32_t r : ranks_of[s]) {
      if (gpus.empty()) {
        chosen.insert(layout.ranks[r].nic);
        continue;
      }
      int best = std::numeric_limits<int>::max();
      for (const auto& [e, hops] : nic_distance[r]) best = std::min(best, hops);
      for (const auto& [e, hops] : nic_distance[r])
        if (hops == best) chosen.insert(e);
    }
    auto& list = local_nics[s];
    for (std::uint32_t e : server_nics[s])
      if (chosen.contains(e)) list.push_back(e);
  }

  // Channel count and the tuner's per-channel bandwidths.
  double nvlink_gbs = 0;
  if (!rank_vertex.empty()) {
    layout.nvswitch = true;
    for (auto [e, end] = boost::out_edges(rank_vertex.front(), g); e != end; ++e)
      if (g[*e].kind == LinkKind::kNvLink) {
        nvlink_gbs += static_cast<double>(g[*e].rate.bps()) / 8e9;
        layout.nvlink_links += g[*e].lanes;
        layout.nvswitch &= g[boost::target(*e, g)].kind == NodeKind::kNvSwitch;
      }
    layout.nvswitch &= layout.nvlink_links > 0 && opt.host_side;
  }
  layout.intra_link = nvlink_gbs > 0 || gpus.empty() ? LinkClass::kNvLink : LinkClass::kPcie;
  // NCCL's graphs are searched alike on every node and the channel count is the minimum over
  // nodes: two rings per local NIC (search.cc duplicates a ring found per NIC).
  std::size_t nics = std::numeric_limits<std::size_t>::max();
  for (const int s : servers) nics = std::min(nics, local_nics[s].size());
  int channels = 2 * static_cast<int>(nics);
  layout.bw_intra_gbs = nvlink_gbs > 0 ? opt.channel_gbs : 12;
  if (layout.servers == 1 && layout.nvswitch) {
    // NCCL's ring search over the switches, on NCCL's per-link figure (not the links' raw
    // rate): 12 x 30 GB/s on a DGX H100, 8 x 20 on an H800, 12 x 20 on a DGX A100, 16 x 45 on
    // a DGX B200; the communicator runs twice the graph's channels. Per communicator channel
    // the tuner's bandwidth is then half the graph's, so that channels x bw_intra is NCCL's
    // nChannels x bwIntra.
    const RingGraph ring =
        nvswitch_ring_graph(layout.nvlink_links * opt.channel_gbs, opt.sm_version);
    if (ring.channels > 0) {
      channels = 2 * ring.channels;
      layout.bw_intra_gbs = ring.bw_gbs / 2;
    }
  } else if (layout.servers == 1 && nvlink_gbs > 0) {
    channels = static_cast<int>(std::ceil(nvlink_gbs / opt.channel_gbs));
    channels += channels % 2;
  }
  channels = std::clamp(channels, 1, 64);  // MAXCHANNELS
  double nic_gbs = 0;
  for (std::uint32_t e : local_nics[servers.front()])
    nic_gbs += static_cast<double>(g[routing.endpoint_link(e)].rate.bps()) / 8e9;
  layout.bw_inter_gbs = nic_gbs / channels;
  if (!layout.ranks.empty())
    layout.nic_gbs =
        static_cast<double>(g[routing.endpoint_link(layout.ranks.front().nic)].rate.bps()) / 8e9;

  // Point-to-point channels per peer, as NCCL computes them (src/graph/paths.cc
  // ncclTopoGetNchannels, ncclTopoComputeP2pChannels; init.cc takes the minimum over ranks):
  //   a peer over NVLink: 2 x (NVLink links on the path; NCCL's path bandwidth over one
  //   link's); over PCIe: 2; over the network: NCCL_NCHANNELS_PER_NET_PEER, else
  //   max(local NICs, ceil(their GB/s / NCCL_P2P_PER_CHANNEL_NET_BW = 14));
  // the minimum over every (rank, peer), rounded up to a power of two, at most p2pnChannels
  // (the channel count rounded up to a power of two). Across servers, unless the user set
  // the per-net-peer count, halved while it x ceil(ranks / 8 peers per work batch) exceeds
  // p2pnChannels (NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8), so all peers fit one round.
  {
    const auto pow2_up = [](int v) {
      int p = 1;
      while (p < v) p <<= 1;
      return p;
    };
    int per_peer = 64;
    // Peers on the rank's own server one by one; all peers elsewhere give the same count (it
    // depends only on the rank's NICs), so it is taken once per rank: linear in ranks times
    // GPUs per server, not quadratic in ranks (16,384 GPUs).
    for (std::uint32_t a = 0; a < layout.ranks.size() && !rank_vertex.empty(); ++a) {
      const Vertex ga = rank_vertex[a];
      int nvlinks = 0;
      for (auto [e, end] = boost::out_edges(ga, g); e != end; ++e)
        if (g[*e].kind == LinkKind::kNvLink) nvlinks += g[*e].lanes;
      const auto& local = ranks_of.at(static_cast<int>(layout.ranks[a].server));
      for (const std::uint32_t b : local) {
        if (a == b) continue;
        // Through NVSwitches every pair gets all of the GPU's links; else the direct ones.
        int links = 0;
        if (const auto direct = boost::edge(ga, rank_vertex[b], g); direct.second)
          links = g[direct.first].lanes;
        else if (nvlink_connected(g, ga, rank_vertex[b]))
          links = nvlinks;
        per_peer = std::min(per_peer, links > 0 ? 2 * links : 2);
      }
      if (local.size() == layout.ranks.size()) continue;  // no peer on another server
      int net = opt.channels_per_net_peer;
      if (net <= 0) {
        double gbs = 0;
        int count = 0;
        for (const auto& [e, hops] : nic_distance[a])
          if (hops == nic_distance[a].at(layout.ranks[a].nic)) {
            ++count;
            gbs += static_cast<double>(g[routing.endpoint_link(e)].rate.bps()) / 8e9;
          }
        net = std::max(count, static_cast<int>(std::ceil(gbs / 14)));
      }
      per_peer = std::min(per_peer, net);
    }
    if (rank_vertex.empty())
      per_peer = opt.channels_per_net_peer > 0 ? opt.channels_per_net_peer : 2;
    per_peer = pow2_up(std::max(1, per_peer));
    const int p2p_channels = pow2_up(channels);
    if (layout.servers > 1 && opt.channels_per_net_peer <= 0) {
      const int rounds = static_cast<int>((layout.ranks.size() + 7) / 8);
      while (per_peer * rounds > p2p_channels && per_peer > 1) per_peer /= 2;
    } else {
      per_peer = std::min(per_peer, p2p_channels);
    }
    layout.p2p_channels = per_peer;
  }

  const auto n = layout.ranks.size();
  for (int c = 0; c < channels; ++c) {
    CommChannel ch;
    ch.nic.assign(n, 0);
    ch.tree_up.assign(n, -1);
    ch.tree_down.assign(n, {-1, -1, -1});
    std::vector<std::vector<std::uint32_t>> chains;  // per server position: ring order inside
    for (const int s : servers) {
      const auto& members = ranks_of[s];
      const auto& snics = local_nics[s];
      const std::uint32_t nic = snics[static_cast<std::size_t>(c) % snics.size()];
      std::vector<std::uint32_t> order;
      std::uint32_t exit_nic = nic;
      if (members.size() == 1 || gpus.empty()) {
        order = members;
      } else if (layout.servers == 1) {
        // One server: rotate the ring per channel.
        for (std::size_t i = 0; i < members.size(); ++i)
          order.push_back(members[(i + static_cast<std::size_t>(c)) % members.size()]);
      } else {
        // Enter at the GPU nearest the channel's NIC (among equals the GPU whose own NIC this
        // is). NCCL_CROSS_NIC=0, and 2 (NCCL's default: search.cc tries without crossing first,
        // which always succeeds on these servers): leave from the next nearest GPU through the
        // same NIC, so the ring stays on its rail. NCCL_CROSS_NIC=1: the ring visits the
        // server's GPUs in index order from the entry and leaves from the last one through
        // that GPU's own NIC (NET n -> GPU a -> ... -> GPU x -> NET m, search.cc).
        std::vector<std::uint32_t> by_distance = members;
        std::stable_sort(
            by_distance.begin(), by_distance.end(), [&](std::uint32_t a, std::uint32_t b) {
              return std::make_pair(nic_distance[a].at(nic), layout.ranks[a].nic != nic) <
                     std::make_pair(nic_distance[b].at(nic), layout.ranks[b].nic != nic);
            });
        const std::uint32_t entry = by_distance[0];
        const auto at = std::find(members.begin(), members.end(), entry) - members.begin();
        if (opt.cross_nic == 1) {
          for (std::size_t i = 0; i < members.size(); ++i)
            order.push_back(members[(static_cast<std::size_t>(at) + i) % members.size()]);
          exit_nic = layout.ranks[order.back()].nic;
        } else {
          const std::uint32_t exit = by_distance[1];
          order.push_back(entry);
          for (std::size_t i = 1; i < members.size(); ++i) {
            const std::uint32_t r = members[(static_cast<std::size_t>(at) + i) % members.size()];
            if (r != exit) order.push_back(r);
          }
          order.push_back(exit);
        }
      }
      for (std::uint32_t r : order) {
        ch.nic[r] = gpus.empty() ? layout.ranks[r].nic : nic;
        ch.ring.push_back(r);
      }
      if (!gpus.empty() && order.size() > 1) ch.nic[order.back()] = exit_nic;
      chains.push_back(std::move(order));
    }
    // Trees over server positions, chains inside.
    const int ns = layout.servers;
    for (int p = 0; p < ns; ++p) {
      const TreeLinks t = c % 2 == 0 ? nccl_btree(ns, p) : nccl_dtree(ns, p);
      const auto& chain = chains[static_cast<std::size_t>(p)];
      const std::uint32_t head = chain.front();
      int slot = 0;
      if (chain.size() > 1) ch.tree_down[head][slot++] = static_cast<std::int32_t>(chain[1]);
      for (int child : {t.down0, t.down1})
        if (child >= 0)
          ch.tree_down[head][slot++] =
              static_cast<std::int32_t>(chains[static_cast<std::size_t>(child)].front());
      ch.tree_up[head] =
          t.up >= 0 ? static_cast<std::int32_t>(chains[static_cast<std::size_t>(t.up)].front())
                    : -1;
      for (std::size_t i = 1; i < chain.size(); ++i) {
        ch.tree_up[chain[i]] = static_cast<std::int32_t>(chain[i - 1]);
        if (i + 1 < chain.size())
          ch.tree_down[chain[i]][0] = static_cast<std::int32_t>(chain[i + 1]);
      }
    }
    layout.channels.push_back(std::move(ch));
  }
  if (layout.servers >= 2 && !topo.aggregators().empty())
    add_sharp_trees(topo, routing, layout, opt.sharp_trees_per_switch);
  // NCCL's LL128 rule on this hardware (tuning.cc): NVLink between the GPUs of a server where
  // a server holds more than one rank; across servers each GPU within PXB of its NIC, or on
  // compute capability 9.0 and later anywhere PXN can reach (an NVLink peer near the NIC).
  const bool shared_server =
      std::any_of(servers.begin(), servers.end(), [&](int s) { return ranks_of[s].size() > 1; });
  const bool intra_ok = !shared_server || layout.intra_link == LinkClass::kNvLink;
  const bool pxn = opt.sm_version >= 90 && nvlink_gbs > 0;  // a peer near the NIC serves
  bool inter_ok = true;
  if (layout.servers > 1 && !pxn)
    for (std::uint32_t r = 0; r < rank_vertex.size(); ++r)
      inter_ok &= pcie_distance(g, rank_vertex[r], topo.endpoints()[layout.ranks[r].nic]) <=
                  PcieDistance::kPxb;
  layout.ll128_paths = intra_ok && inter_ok;
  return layout;
}

}  // namespace fabricsim
