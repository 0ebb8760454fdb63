#include "models/nccl/plan.hpp"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <optional>
#include <tuple>

namespace fabricsim {

namespace {

// Appends steps for one rank at a time.
class PlanWriter {
 public:
  explicit PlanWriter(CollectivePlan& plan) : plan_(plan) { plan_.step_begin.push_back(0); }

  void step(std::initializer_list<std::uint32_t> recvs, std::initializer_list<std::uint32_t> sends,
            bool reduce, std::uint32_t repeat = 1) {
    step(std::vector<std::uint32_t>(recvs), std::vector<std::uint32_t>(sends), reduce, repeat);
  }
  void step(const std::vector<std::uint32_t>& recvs, const std::vector<std::uint32_t>& sends,
            bool reduce, std::uint32_t repeat = 1, std::uint8_t lane = 0, bool after_lane0 = false,
            bool distinct = false) {
    if (repeat == 0) return;
    PlanStep s;
    s.recv_begin = static_cast<std::uint32_t>(plan_.refs.size());
    plan_.refs.insert(plan_.refs.end(), recvs.begin(), recvs.end());
    s.recv_end = s.send_begin = static_cast<std::uint32_t>(plan_.refs.size());
    plan_.refs.insert(plan_.refs.end(), sends.begin(), sends.end());
    s.send_end = static_cast<std::uint32_t>(plan_.refs.size());
    s.repeat = repeat;
    s.lane = lane;
    s.reduce = reduce;
    s.after_lane0 = after_lane0;
    s.distinct = distinct;
    plan_.steps.push_back(s);
  }
  void end_rank() { plan_.step_begin.push_back(static_cast<std::uint32_t>(plan_.steps.size())); }

 private:
  CollectivePlan& plan_;
};

// Opens an edge: appends it (rings and chains name each edge once).
std::uint32_t edge(CollectivePlan& plan, std::uint32_t from, std::uint32_t to, std::uint8_t lane,
                   std::optional<std::uint8_t> to_lane = std::nullopt) {
  plan.edges.push_back({from, to, lane, to_lane.value_or(lane)});
  return static_cast<std::uint32_t>(plan.edges.size() - 1);
}

// A tree names each edge from both of its ends: the first time opens it.
class TreeEdges {
 public:
  explicit TreeEdges(CollectivePlan& plan) : plan_(plan) {}
  std::uint32_t operator()(std::uint32_t from, std::uint32_t to, std::uint8_t lane) {
    const auto [it, fresh] = index_.try_emplace({from, to, lane}, 0);
    if (fresh) it->second = edge(plan_, from, to, lane);
    return it->second;
  }

 private:
  CollectivePlan& plan_;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint8_t>, std::uint32_t> index_;
};

}  // namespace

TreeLinks nccl_btree(int n, int rank) {
  TreeLinks t;
  int bit = 1;
  for (; bit < n; bit <<= 1)
    if (bit & rank) break;
  if (rank == 0) {
    t.down1 = n > 1 ? bit >> 1 : -1;  // the root's one child: the largest power of 2 < n
    return t;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  t.up = up;
  int lowbit = bit >> 1;
  t.down0 = lowbit == 0 ? -1 : rank - lowbit;
  int down1 = lowbit == 0 ? -1 : rank + lowbit;
  while (down1 >= n) {
    lowbit >>= 1;
    down1 = lowbit == 0 ? -1 : rank + lowbit;
  }
  t.down1 = down1;
  return t;
}

TreeLinks nccl_dtree(int n, int rank) {
  // Even n: the mirror image (rank -> n-1-rank); odd n: shifted by one.
  const bool mirror = n % 2 == 0;
  const auto to = [&](int r) { return mirror ? n - 1 - r : (r - 1 + n) % n; };
  const auto back = [&](int r) { return r < 0 ? -1 : mirror ? n - 1 - r : (r + 1) % n; };
  const TreeLinks t = nccl_btree(n, to(rank));
  return {back(t.up), back(t.down0), back(t.down1)};
}

std::vector<std::uint64_t> CollectivePlan::units(const Chunker& chunker,
                                                 std::uint64_t bytes) const {
  switch (shape) {
    case Shape::kRing:
      return chunker.chunks(bytes, static_cast<std::uint32_t>(order.size()));
    case Shape::kNvls:  // loops of one chunk per head
    case Shape::kNvlsTree:
    case Shape::kCollNetDirect:
      return chunker.chunks(bytes, heads);
    default:
      return chunker.chunks(bytes);
  }
}

std::uint64_t CollectivePlan::primitives(const Chunker& chunker, std::uint64_t bytes) const {
  std::uint64_t per_unit = 0;
  for (const PlanStep& s : steps) per_unit += s.repeat;
  const auto n = static_cast<std::uint32_t>(order.size());
  switch (shape) {
    case Shape::kRing:
      return per_unit * chunker.chunk_count(bytes, n) *
             chunker.slice_count(chunker.first_chunk(bytes, n));
    case Shape::kChain:
      return per_unit * chunker.slice_count(bytes);
    case Shape::kTree:
    case Shape::kCollNetChain:
      return per_unit * chunker.chunk_count(bytes);
    case Shape::kNvls:
    case Shape::kNvlsTree:
    case Shape::kCollNetDirect:
      return per_unit * chunker.chunk_count(bytes, heads);
  }
  return per_unit;
}

CollectivePlan plan_ring(const CommChannel& ch, CollOp op) {
  CollectivePlan plan;
  plan.shape = CollectivePlan::Shape::kRing;
  plan.order = ch.ring;
  const auto n = static_cast<std::uint32_t>(ch.ring.size());
  for (std::uint32_t i = 0; i < n; ++i) edge(plan, ch.ring[i], ch.ring[(i + 1) % n], 0);
  PlanWriter w(plan);
  const bool reduce_scatter = op == CollOp::kReduceScatter;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t in = (i + n - 1) % n, out = i;  // edge i: ring[i] -> ring[i + 1]
    w.step({}, {out}, false);                           // the rank's own chunk
    if (op == CollOp::kAllReduce) {
      w.step({in}, {out}, true, n - 2);   // recvReduceSend
      w.step({in}, {out}, true);          // recvReduceCopySend
      w.step({in}, {out}, false, n - 2);  // recvCopySend
      w.step({in}, {}, false);            // recv
    } else {
      w.step({in}, {out}, reduce_scatter, n - 2);
      w.step({in}, {}, reduce_scatter);
    }
    w.end_rank();
  }
  return plan;
}

CollectivePlan plan_chain(const CommChannel& ch, bool reduce, int root) {
  CollectivePlan plan;
  plan.shape = CollectivePlan::Shape::kChain;
  // The ring in chain order: from the root for Broadcast, ending at it for Reduce (the data
  // flows towards the root).
  const auto n = static_cast<std::uint32_t>(ch.ring.size());
  const auto root_pos = static_cast<std::uint32_t>(
      std::find(ch.ring.begin(), ch.ring.end(), static_cast<std::uint32_t>(root)) -
      ch.ring.begin());
  for (std::uint32_t i = 0; i < n; ++i)
    plan.order.push_back(ch.ring[(root_pos + (reduce ? i + 1 : i)) % n]);
  for (std::uint32_t i = 0; i + 1 < n; ++i) {
    edge(plan, plan.order[i], plan.order[i + 1], 0);
    plan.fill.push_back(i);
  }
  PlanWriter w(plan);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (i == 0)
      w.step({}, {0}, false);
    else if (i + 1 < n)
      w.step({i - 1}, {i}, reduce);
    else
      w.step({i - 1}, {}, reduce);
    w.end_rank();
  }
  return plan;
}

CollectivePlan plan_tree(const CommChannel& ch) {
  CollectivePlan plan;
  plan.shape = CollectivePlan::Shape::kTree;
  plan.lanes = 2;
  const auto n = static_cast<std::uint32_t>(ch.tree_up.size());
  PlanWriter w(plan);
  TreeEdges tree_edge(plan);
  // Edges open rank by rank, children first (up on lane 0, down on lane 1), then the parent.
  for (std::uint32_t r = 0; r < n; ++r) {
    plan.order.push_back(r);
    std::vector<std::uint32_t> from_children, to_children;
    for (const std::int32_t child : ch.tree_down[r]) {
      if (child < 0) continue;
      const auto k = static_cast<std::uint32_t>(child);
      from_children.push_back(tree_edge(k, r, 0));
      to_children.push_back(tree_edge(r, k, 1));
    }
    const std::int32_t parent = ch.tree_up[r];
    std::vector<std::uint32_t> up, down;
    if (parent >= 0) {
      const auto p = static_cast<std::uint32_t>(parent);
      up.push_back(tree_edge(r, p, 0));
      down.push_back(tree_edge(p, r, 1));
    }
    w.step(from_children, up, !from_children.empty(), 1, 0);  // a leaf only sends
    w.step(down, to_children, false, 1, 1, parent < 0);       // the root: after its reduction
    w.end_rank();
  }
  // The fill: the deepest rank's way to the root (the first of the deepest in rank order),
  // up and back down.
  std::uint32_t deepest = 0;
  int max_depth = -1;
  for (std::uint32_t r = 0; r < n; ++r) {
    int depth = 0;
    for (std::uint32_t q = r; ch.tree_up[q] >= 0; q = static_cast<std::uint32_t>(ch.tree_up[q]))
      ++depth;
    if (depth > max_depth) {
      max_depth = depth;
      deepest = r;
    }
  }
  for (std::uint32_t q = deepest; ch.tree_up[q] >= 0;
       q = static_cast<std::uint32_t>(ch.tree_up[q])) {
    const auto p = static_cast<std::uint32_t>(ch.tree_up[q]);
    plan.fill.push_back(tree_edge(q, p, 0));
    plan.fill.push_back(tree_edge(p, q, 1));
  }
  return plan;
}

CollectivePlan plan_nvls(std::uint32_t n) {
  CollectivePlan plan;
  plan.shape = CollectivePlan::Shape::kNvls;
  plan.lanes = 3;
  plan.switch_ranks_from = n;
  plan.heads = n;
  // Edges per head h (the switch's pseudo-rank n + h): every GPU's chunk up (scatter lane to
  // the switch's reduce lane), the reduction down to h (to h's reduce lane), h's store up,
  // and its copies down to every GPU's gather lane.
  std::vector<std::vector<std::uint32_t>> up(n), fan_out(n);
  std::vector<std::uint32_t> reduced(n), stored(n);
  for (std::uint32_t h = 0; h < n; ++h) {
    for (std::uint32_t g = 0; g < n; ++g) up[h].push_back(edge(plan, g, n + h, 0));
    reduced[h] = edge(plan, n + h, h, 0, 1);
    stored[h] = edge(plan, h, n + h, 1);
    for (std::uint32_t g = 0; g < n; ++g) fan_out[h].push_back(edge(plan, n + h, g, 1, 2));
  }
  PlanWriter w(plan);
  for (std::uint32_t g = 0; g < n; ++g) {
    plan.order.push_back(g);
    // One scatter and one gather primitive per loop, each over all n heads with a chunk of
    // its own for each (prims.scatter / prims.gather).
    std::vector<std::uint32_t> to_heads, from_heads;
    for (std::uint32_t h = 0; h < n; ++h) {
      to_heads.push_back(up[h][g]);
      from_heads.push_back(fan_out[h][g]);
    }
    w.step({}, to_heads, false, 1, 0, false, true);
    w.step({reduced[g]}, {stored[g]}, false, 1, 1);  // multimem ld_reduce, then st
    w.step(from_heads, {}, false, 1, 2, false, true);
    w.end_rank();
  }
  for (std::uint32_t h = 0; h < n; ++h) {
    plan.order.push_back(n + h);
    w.step(up[h], {reduced[h]}, true, 1, 0);       // the switch reduces what all GPUs sent
    w.step({stored[h]}, fan_out[h], false, 1, 1);  // and multicasts the head's store
    w.end_rank();
  }
  // A chunk's way: GPU 0 up, reduced down to head 0, stored up, copied down to GPU 0.
  plan.fill = {up[0][0], reduced[0], stored[0], fan_out[0][0]};
  return plan;
}

std::vector<std::vector<std::uint32_t>> nvls_tree_heads(const CommLayout& layout) {
  std::vector<std::uint32_t> server_ids;  // in the order of their first rank
  std::vector<std::vector<std::uint32_t>> ranks_of, heads;
  for (std::uint32_t r = 0; r < layout.ranks.size(); ++r) {
    const std::uint32_t s = layout.ranks[r].server;
    auto it = std::find(server_ids.begin(), server_ids.end(), s);
    if (it == server_ids.end()) {
      server_ids.push_back(s);
      ranks_of.emplace_back();
      heads.emplace_back();
      it = server_ids.end() - 1;
    }
    const auto pos = static_cast<std::size_t>(it - server_ids.begin());
    auto& on_nic = heads[pos];
    const bool nic_taken = std::any_of(on_nic.begin(), on_nic.end(), [&](std::uint32_t h) {
      return layout.ranks[h].nic == layout.ranks[r].nic;
    });
    if (!nic_taken) on_nic.push_back(r);
    ranks_of[pos].push_back(r);
  }
  std::size_t fewest = SIZE_MAX;
  for (std::size_t i = 0; i < heads.size(); ++i) {
    if (ranks_of[i].size() != ranks_of.front().size()) return {};
    fewest = std::min(fewest, heads[i].size());
  }
  for (auto& h : heads) h.resize(fewest);
  return heads;
}

namespace {

// Each server position's ranks (servers in the order of their first rank, as nvls_tree_heads).
std::vector<std::vector<std::uint32_t>> ranks_by_server(
    const CommLayout& layout, const std::vector<std::vector<std::uint32_t>>& heads) {
  std::vector<std::vector<std::uint32_t>> local(heads.size());
  for (std::uint32_t r = 0; r < layout.ranks.size(); ++r)
    for (std::size_t s = 0; s < heads.size(); ++s)
      if (layout.ranks[heads[s].front()].server == layout.ranks[r].server) {
        local[s].push_back(r);
        break;
      }
  return local;
}

// An aggregation tree's edges in a plan: per server position the head's edge into its node
// and back, per node its edges to and from its children (heads' and nodes') and its parent.
struct TreeWiring {
  std::uint32_t first = 0;                                       // pseudo-rank of node 0
  std::vector<std::uint32_t> head_up, head_down;                 // per server position
  std::vector<std::vector<std::uint32_t>> from_below, to_below;  // per node
  std::vector<std::uint32_t> up, down;                           // per node, UINT32_MAX at the root
};

// Opens tree t's edges: the heads' (sending on head_lane_up, receiving on head_lane_down),
// then the nodes' towards their parents. A node's result lane is 0 at the root (it reduces
// and sends back down in one step), else 1.
TreeWiring wire_tree(CollectivePlan& plan, const AggregationTree& t,
                     const std::vector<std::uint32_t>& head_of, std::uint8_t head_lane_up,
                     std::uint8_t head_lane_down) {
  TreeWiring w;
  w.first = plan.aggregators_from + static_cast<std::uint32_t>(plan.endpoints.size());
  plan.endpoints.insert(plan.endpoints.end(), t.node.begin(), t.node.end());
  const auto nodes = t.node.size();
  w.from_below.resize(nodes);
  w.to_below.resize(nodes);
  w.up.assign(nodes, UINT32_MAX);
  w.down.assign(nodes, UINT32_MAX);
  const auto result_lane = [&](std::size_t i) -> std::uint8_t { return t.parent[i] < 0 ? 0 : 1; };
  for (std::size_t p = 0; p < head_of.size(); ++p) {
    const std::uint32_t n = t.attach[p];
    w.head_up.push_back(edge(plan, head_of[p], w.first + n, head_lane_up, 0));
    w.head_down.push_back(edge(plan, w.first + n, head_of[p], result_lane(n), head_lane_down));
    w.from_below[n].push_back(w.head_up.back());
    w.to_below[n].push_back(w.head_down.back());
  }
  for (std::size_t i = 0; i < nodes; ++i) {
    if (t.parent[i] < 0) continue;
    const auto q = static_cast<std::uint32_t>(t.parent[i]);
    w.up[i] = edge(plan, w.first + static_cast<std::uint32_t>(i), w.first + q, 0, 0);
    w.down[i] = edge(plan, w.first + q, w.first + static_cast<std::uint32_t>(i), result_lane(q), 1);
    w.from_below[q].push_back(w.up[i]);
    w.to_below[q].push_back(w.down[i]);
  }
  return w;
}

// The nodes' steps (after every rank's): lane 0 sums what comes from below and sends it up
// (the root: back down), lane 1 copies what comes from above to every child.
void write_tree_steps(CollectivePlan& plan, PlanWriter& w, const TreeWiring& t) {
  for (std::size_t i = 0; i < t.from_below.size(); ++i) {
    plan.order.push_back(t.first + static_cast<std::uint32_t>(i));
    const bool sums = t.from_below[i].size() > 1;
    if (t.up[i] == UINT32_MAX) {
      w.step(t.from_below[i], t.to_below[i], sums, 1, 0);
    } else {
      w.step(t.from_below[i], {t.up[i]}, sums, 1, 0);
      w.step({t.down[i]}, t.to_below[i], false, 1, 1);
    }
    w.end_rank();
  }
}

// A unit's way through tree `t` from the head of server position p: into its node, up to the
// root, back down and out to the head (edge indices).
std::vector<std::uint32_t> tree_way(const AggregationTree& tree, const TreeWiring& t,
                                    std::size_t p) {
  std::vector<std::uint32_t> way{t.head_up[p]}, back;
  std::uint32_t n = tree.attach[p];
  for (; tree.parent[n] >= 0; n = static_cast<std::uint32_t>(tree.parent[n])) {
    way.push_back(t.up[n]);
    back.push_back(t.down[n]);
  }
  way.insert(way.end(), back.rbegin(), back.rend());
  way.push_back(t.head_down[p]);
  return way;
}

// The server position whose head's node is deepest in `tree` (the first of equals).
std::size_t deepest_server(const AggregationTree& tree) {
  std::size_t best = 0;
  int best_depth = -1;
  for (std::size_t p = 0; p < tree.attach.size(); ++p) {
    int depth = 0;
    for (std::int32_t n = static_cast<std::int32_t>(tree.attach[p]); tree.parent[n] >= 0;
         n = tree.parent[n])
      ++depth;
    if (depth > best_depth) {
      best_depth = depth;
      best = p;
    }
  }
  return best;
}

// Each rank's server position and place on its server (its index in local[server]).
struct Place {
  std::uint32_t server = 0, index = 0;
};
std::vector<Place> places(const std::vector<std::vector<std::uint32_t>>& local, std::uint32_t n) {
  std::vector<Place> out(n);
  for (std::uint32_t s = 0; s < local.size(); ++s)
    for (std::uint32_t i = 0; i < local[s].size(); ++i) out[local[s][i]] = {s, i};
  return out;
}

// Every head's tree: head h of each server into layout.sharp_trees[h], sending from its lane 1
// and receiving on lane 3 (CollNetDirect's and NVLS's reduce and broadcast roles).
std::vector<TreeWiring> wire_head_trees(CollectivePlan& plan, const CommLayout& layout,
                                        const std::vector<std::vector<std::uint32_t>>& heads) {
  std::vector<TreeWiring> trees;
  for (std::size_t h = 0; !heads.empty() && h < heads.front().size(); ++h) {
    std::vector<std::uint32_t> head_of;
    for (const auto& server : heads) head_of.push_back(server[h]);
    trees.push_back(wire_tree(plan, layout.sharp_trees[h], head_of, 1, 3));
  }
  return trees;
}

}  // namespace

CollectivePlan plan_nvls_tree(const CommLayout& layout, int channel, bool sharp) {
  CollectivePlan plan;
  plan.shape = CollectivePlan::Shape::kNvlsTree;
  plan.lanes = 4;  // scatter, reduce, gather, broadcast
  const auto n = static_cast<std::uint32_t>(layout.ranks.size());
  const std::vector<std::vector<std::uint32_t>> heads = nvls_tree_heads(layout);
  const auto servers = static_cast<std::uint32_t>(heads.size());
  const auto nh = static_cast<std::uint32_t>(heads.empty() ? 0 : heads.front().size());
  plan.switch_ranks_from = n;
  plan.heads = nh;
  const std::vector<std::vector<std::uint32_t>> local = ranks_by_server(layout, heads);
  const std::vector<Place> place = places(local, n);
  const auto sw = [&](std::uint32_t s, std::uint32_t h) { return n + s * nh + h; };
  if (sharp) plan.aggregators_from = n + servers * nh;
  std::vector<TreeLinks> tree(servers);
  for (std::uint32_t s = 0; s < servers; ++s)
    tree[s] = channel % 2 == 0 ? nccl_btree(static_cast<int>(servers), static_cast<int>(s))
                               : nccl_dtree(static_cast<int>(servers), static_cast<int>(s));
  // With SHARP no head is a root: every one sends into its tree and receives the result.
  const auto is_root = [&](std::uint32_t s) { return !sharp && tree[s].up < 0; };
  const auto children = [&](std::uint32_t s) {
    std::vector<std::uint32_t> out;
    for (const int k : {tree[s].down0, tree[s].down1})
      if (k >= 0) out.push_back(static_cast<std::uint32_t>(k));
    return out;
  };
  // The lane a head sends the result on: the root's reduce lane, else its broadcast lane.
  const auto result_lane = [&](std::uint32_t s) -> std::uint8_t { return is_root(s) ? 1 : 3; };
  // Edges, server by server and head by head: as NVLS inside the server (the store from the
  // lane holding the result), then the head's tree edge to its parent, up and down.
  const auto at = [&](std::uint32_t s, std::uint32_t h) { return s * nh + h; };
  std::vector<std::vector<std::uint32_t>> up(servers * nh), fan_out(servers * nh);
  std::vector<std::uint32_t> reduced(servers * nh), stored(servers * nh);
  std::vector<std::uint32_t> net_up(servers * nh, UINT32_MAX), net_down(servers * nh, UINT32_MAX);
  for (std::uint32_t s = 0; s < servers; ++s)
    for (std::uint32_t h = 0; h < nh; ++h) {
      const std::uint32_t head = heads[s][h], i = at(s, h);
      for (const std::uint32_t g : local[s]) up[i].push_back(edge(plan, g, sw(s, h), 0));
      reduced[i] = edge(plan, sw(s, h), head, 0, 1);
      stored[i] = edge(plan, head, sw(s, h), result_lane(s), 1);
      for (const std::uint32_t g : local[s]) fan_out[i].push_back(edge(plan, sw(s, h), g, 1, 2));
      if (!is_root(s) && !sharp) {
        const auto p = static_cast<std::uint32_t>(tree[s].up);
        net_up[i] = edge(plan, head, heads[p][h], 1, 1);
        net_down[i] = edge(plan, heads[p][h], head, result_lane(p), 3);
      }
    }
  const std::vector<TreeWiring> sharp_trees =  // per head, with SHARP
      sharp ? wire_head_trees(plan, layout, heads) : std::vector<TreeWiring>{};
  PlanWriter w(plan);
  for (std::uint32_t r = 0; r < n; ++r) {
    plan.order.push_back(r);
    const std::uint32_t s = place[r].server, g = place[r].index;
    std::vector<std::uint32_t> to_heads, from_heads;
    for (std::uint32_t h = 0; h < nh; ++h) {
      to_heads.push_back(up[at(s, h)][g]);
      from_heads.push_back(fan_out[at(s, h)][g]);
    }
    w.step({}, to_heads, false, 1, 0, false, true);
    const auto h_it = std::find(heads[s].begin(), heads[s].end(), r);
    if (h_it != heads[s].end()) {
      const auto h = static_cast<std::uint32_t>(h_it - heads[s].begin());
      if (sharp) {  // the switch's reduction into the tree, the tree's result stored
        w.step({reduced[at(s, h)]}, {sharp_trees[h].head_up[s]}, false, 1, 1);
        w.step({sharp_trees[h].head_down[s]}, {stored[at(s, h)]}, false, 1, 3);
      } else {
        std::vector<std::uint32_t> from_below{reduced[at(s, h)]}, to_children;
        for (const std::uint32_t k : children(s)) {
          from_below.push_back(net_up[at(k, h)]);
          to_children.push_back(net_down[at(k, h)]);
        }
        std::vector<std::uint32_t> result{stored[at(s, h)]};
        result.insert(result.end(), to_children.begin(), to_children.end());
        const bool sums = from_below.size() > 1;  // else it forwards the switch's reduction
        if (is_root(s)) {
          w.step(from_below, result, sums, 1, 1);
        } else {
          w.step(from_below, {net_up[at(s, h)]}, sums, 1, 1);
          w.step({net_down[at(s, h)]}, result, false, 1, 3);
        }
      }
    }
    w.step(from_heads, {}, false, 1, 2, false, true);
    w.end_rank();
  }
  for (std::uint32_t s = 0; s < servers; ++s)
    for (std::uint32_t h = 0; h < nh; ++h) {
      plan.order.push_back(sw(s, h));
      w.step(up[at(s, h)], {reduced[at(s, h)]}, true, 1, 0);
      w.step({stored[at(s, h)]}, fan_out[at(s, h)], false, 1, 1);
      w.end_rank();
    }
  for (const TreeWiring& t : sharp_trees) write_tree_steps(plan, w, t);
  if (nh == 0) return plan;
  if (sharp) {
    // A chunk's way: the deepest server's first GPU to head 0's switch, its reduction to the
    // head, through tree 0 and back, the head's store and the copy out.
    const std::size_t p = deepest_server(layout.sharp_trees[0]);
    plan.fill = {up[at(static_cast<std::uint32_t>(p), 0)].front(),
                 reduced[at(static_cast<std::uint32_t>(p), 0)]};
    for (const std::uint32_t e : tree_way(layout.sharp_trees[0], sharp_trees[0], p))
      plan.fill.push_back(e);
    plan.fill.push_back(stored[at(static_cast<std::uint32_t>(p), 0)]);
    plan.fill.push_back(fan_out[at(static_cast<std::uint32_t>(p), 0)].front());
    return plan;
  }
  // A chunk's way: from the deepest server's first GPU up to head 0's switch, its reduction,
  // the tree up to the root, the root's store, back down, the store there and the copy out.
  std::uint32_t deepest = 0;
  int max_depth = -1;
  for (std::uint32_t s = 0; s < servers; ++s) {
    int depth = 0;
    for (std::uint32_t q = s; !is_root(q); q = static_cast<std::uint32_t>(tree[q].up)) ++depth;
    if (depth > max_depth) {
      max_depth = depth;
      deepest = s;
    }
  }
  plan.fill = {up[at(deepest, 0)].front(), reduced[at(deepest, 0)]};
  std::vector<std::uint32_t> way_down;
  std::uint32_t q = deepest;
  for (; !is_root(q); q = static_cast<std::uint32_t>(tree[q].up)) {
    plan.fill.push_back(net_up[at(q, 0)]);
    way_down.push_back(net_down[at(q, 0)]);
  }
  plan.fill.push_back(stored[at(q, 0)]);
  if (!way_down.empty()) {
    plan.fill.insert(plan.fill.end(), way_down.rbegin(), way_down.rend());
    plan.fill.push_back(stored[at(deepest, 0)]);
  }
  plan.fill.push_back(fan_out[at(deepest, 0)].front());
  return plan;
}

CollectivePlan plan_collnet_direct(const CommLayout& layout) {
  CollectivePlan plan;
  plan.shape = CollectivePlan::Shape::kCollNetDirect;
  plan.lanes = 4;  // scatter, reduce into the tree, gather, broadcast from it
  const auto n = static_cast<std::uint32_t>(layout.ranks.size());
  const std::vector<std::vector<std::uint32_t>> heads = nvls_tree_heads(layout);
  const std::vector<std::vector<std::uint32_t>> local = ranks_by_server(layout, heads);
  const std::size_t servers = heads.size(), nh = heads.empty() ? 0 : heads.front().size();
  plan.aggregators_from = n;
  plan.heads = static_cast<std::uint32_t>(nh);
  // Per (server, head): the edges from every other GPU of the server to the head (scatter)
  // and from the head to them (broadcast), indexed by the GPU's place on its server.
  std::vector<std::vector<std::vector<std::uint32_t>>> scatter(servers), bcast(servers);
  for (std::size_t s = 0; s < servers; ++s) {
    scatter[s].resize(nh);
    bcast[s].resize(nh);
    for (std::size_t h = 0; h < nh; ++h) {
      const std::uint32_t head = heads[s][h];
      for (const std::uint32_t g : local[s]) {
        scatter[s][h].push_back(g == head ? UINT32_MAX : edge(plan, g, head, 0, 1));
        bcast[s][h].push_back(g == head ? UINT32_MAX : edge(plan, head, g, 3, 2));
      }
    }
  }
  const std::vector<TreeWiring> trees = wire_head_trees(plan, layout, heads);
  const std::vector<Place> place = places(local, n);
  PlanWriter w(plan);
  for (std::uint32_t r = 0; r < n; ++r) {
    plan.order.push_back(r);
    const std::size_t s = place[r].server, g = place[r].index;
    std::vector<std::uint32_t> to_heads, from_heads;
    for (std::size_t h = 0; h < nh; ++h)
      if (scatter[s][h][g] != UINT32_MAX) {
        to_heads.push_back(scatter[s][h][g]);
        from_heads.push_back(bcast[s][h][g]);
      }
    if (!to_heads.empty()) w.step({}, to_heads, false, 1, 0, false, true);
    const auto h_it = std::find(heads[s].begin(), heads[s].end(), r);
    if (h_it != heads[s].end()) {
      const auto h = static_cast<std::size_t>(h_it - heads[s].begin());
      std::vector<std::uint32_t> from_peers, to_peers;
      for (std::size_t k = 0; k < local[s].size(); ++k)
        if (scatter[s][h][k] != UINT32_MAX) {
          from_peers.push_back(scatter[s][h][k]);
          to_peers.push_back(bcast[s][h][k]);
        }
      w.step(from_peers, {trees[h].head_up[s]}, !from_peers.empty(), 1, 1);
      w.step({trees[h].head_down[s]}, to_peers, false, 1, 3);
    }
    if (!from_heads.empty()) w.step(from_heads, {}, false, 1, 2, false, true);
    w.end_rank();
  }
  for (const TreeWiring& t : trees) write_tree_steps(plan, w, t);
  // A chunk's way: from a GPU of the deepest server to head 0 (if it is not head 0 itself),
  // through tree 0 and back out to that GPU.
  if (nh == 0) return plan;
  const std::size_t p = deepest_server(layout.sharp_trees[0]);
  const std::size_t g = local[p].size() > 1 && local[p][0] == heads[p][0] ? 1 : 0;
  if (scatter[p][0][g] != UINT32_MAX) plan.fill.push_back(scatter[p][0][g]);
  for (const std::uint32_t e : tree_way(layout.sharp_trees[0], trees[0], p)) plan.fill.push_back(e);
  if (bcast[p][0][g] != UINT32_MAX) plan.fill.push_back(bcast[p][0][g]);
  return plan;
}

CollectivePlan plan_collnet_chain(const CommLayout& layout, int channel) {
  CollectivePlan plan;
  plan.shape = CollectivePlan::Shape::kCollNetChain;
  plan.lanes = 2;  // reduce up, broadcast down
  const auto n = static_cast<std::uint32_t>(layout.ranks.size());
  const std::vector<std::vector<std::uint32_t>> heads = nvls_tree_heads(layout);
  const std::vector<std::vector<std::uint32_t>> local = ranks_by_server(layout, heads);
  const std::size_t servers = heads.size(), nh = heads.empty() ? 0 : heads.front().size();
  plan.aggregators_from = n;
  plan.heads = 1;
  if (nh == 0) return plan;
  const std::size_t t = static_cast<std::size_t>(channel) % nh;
  const CommChannel& ch =
      layout.channels[static_cast<std::size_t>(channel) % layout.channels.size()];
  // Per server the chain: its ranks in the channel's ring order after the head, the head last.
  std::vector<std::vector<std::uint32_t>> chain(servers);
  std::vector<std::uint32_t> head_of(servers);
  for (std::size_t s = 0; s < servers; ++s) {
    head_of[s] = heads[s][t];
    const auto at = std::find(ch.ring.begin(), ch.ring.end(), head_of[s]) - ch.ring.begin();
    for (std::size_t i = 1; i <= ch.ring.size(); ++i) {
      const std::uint32_t r = ch.ring[(static_cast<std::size_t>(at) + i) % ch.ring.size()];
      if (std::find(local[s].begin(), local[s].end(), r) != local[s].end()) chain[s].push_back(r);
    }
  }
  // Chain edges: link i joins chain[i] and chain[i + 1], up on lane 0, down on lane 1.
  std::vector<std::vector<std::uint32_t>> up(servers), down(servers);
  for (std::size_t s = 0; s < servers; ++s)
    for (std::size_t i = 0; i + 1 < chain[s].size(); ++i) {
      up[s].push_back(edge(plan, chain[s][i], chain[s][i + 1], 0));
      down[s].push_back(edge(plan, chain[s][i + 1], chain[s][i], 1));
    }
  const TreeWiring tree = wire_tree(plan, layout.sharp_trees[t], head_of, 0, 1);
  PlanWriter w(plan);
  for (std::uint32_t r = 0; r < n; ++r) {
    plan.order.push_back(r);
    std::size_t s = 0;
    while (std::find(chain[s].begin(), chain[s].end(), r) == chain[s].end()) ++s;
    const auto i =
        static_cast<std::size_t>(std::find(chain[s].begin(), chain[s].end(), r) - chain[s].begin());
    const bool head = i + 1 == chain[s].size();
    std::vector<std::uint32_t> from_below, to_below;
    if (i > 0) {
      from_below.push_back(up[s][i - 1]);
      to_below.push_back(down[s][i - 1]);
    }
    const std::uint32_t to_above = head ? tree.head_up[s] : up[s][i];
    const std::uint32_t from_above = head ? tree.head_down[s] : down[s][i];
    w.step(from_below, {to_above}, i > 0, 1, 0);
    w.step({from_above}, to_below, false, 1, 1);
    w.end_rank();
  }
  write_tree_steps(plan, w, tree);
  // A chunk's way: from the deepest server's chain start up the chain, through the tree, and
  // back down the chain.
  const std::size_t p = deepest_server(layout.sharp_trees[t]);
  plan.fill = up[p];
  for (const std::uint32_t e : tree_way(layout.sharp_trees[t], tree, p)) plan.fill.push_back(e);
  plan.fill.insert(plan.fill.end(), down[p].rbegin(), down[p].rend());
  return plan;
}

CollectivePlan plan_collective(const CommLayout& layout, int c, CollOp op, Algo algo, int root) {
  const CommChannel& ch = layout.channels[static_cast<std::size_t>(c) % layout.channels.size()];
  if (op == CollOp::kAllReduce && algo == Algo::kNvlsTree) return plan_nvls_tree(layout, c, false);
  if (op == CollOp::kAllReduce && algo == Algo::kNvls && layout.servers > 1)
    return plan_nvls_tree(layout, c, true);
  if (op == CollOp::kAllReduce && algo == Algo::kCollNetDirect) return plan_collnet_direct(layout);
  if (op == CollOp::kAllReduce && algo == Algo::kCollNetChain) return plan_collnet_chain(layout, c);
  if (op == CollOp::kAllReduce && algo == Algo::kNvls)
    return plan_nvls(static_cast<std::uint32_t>(ch.ring.size()));
  if (op == CollOp::kAllReduce && algo == Algo::kTree) return plan_tree(ch);
  if (op == CollOp::kBroadcast || op == CollOp::kReduce)
    return plan_chain(ch, op == CollOp::kReduce, root);
  return plan_ring(ch, op);
}

}  // namespace fabricsim
