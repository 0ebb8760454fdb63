#pragma once
// One channel of a collective as NCCL's kernels run it, built once per algorithm and read by
// both executions of the collective engine (models/nccl/collective.hpp): the primitive
// executor expands it into one primitive per slice, the streamed approximation derives its
// pipeline (members, rate cap, floor and fill) from the same edges and steps. So an algorithm
// is written once, here.
//
// A plan has
//   - the ranks in the order their thread blocks ("streams") are made, each with `lanes`
//     blocks (a tree runs its reduce and broadcast passes in separate blocks: lanes 0 and 1);
//   - the edges (connections) in the order they are opened, which fixes each one's queue pair
//     and so its ECMP path at packet level;
//   - per rank its steps: runs of `repeat` identical primitives, each receiving on some edges
//     and sending on others, reducing or copying, applied to every unit of data (a ring loop's
//     chunk, or a chunk), slice by slice where the shape is sliced (ring, chain) or the whole
//     chunk (tree);
//   - the fill path: the edges a unit crosses before the last rank has it (chain: all of
//     them; tree: the deepest rank's way up and down), empty for a ring (every rank sends
//     from the first step on).
//
// Ring (prims in NCCL's all_reduce.h): a rank sends its own chunk, then AllReduce runs
// n-2 recvReduceSend, one recvReduceCopySend, n-2 recvCopySend and a final recv per chunk
// (2(n-1) sends); AllGather and ReduceScatter run n-2 recv(Reduce)Send and a final
// recv(Reduce). Chain (Broadcast from the root along the ring; Reduce along it towards the
// root): send, n-2 recv(Reduce)Send, recv(Reduce). Tree (NCCL's split tree): lane 0 receives
// every child's partial sum, adds its own and sends it to the parent (a leaf only sends);
// lane 1 receives the result from the parent (the root: waits for its own lane 0) and sends
// it to every child.
//
// NVLS (NVLink SHARP, one server; NCCL's all_reduce.h RunWorkColl<..., NCCL_ALGO_NVLS, ...>
// oneNode branch): every GPU is a head owning 1/n of each loop of n chunks. Its scatter warps
// (lane 0) put each chunk where head h's multimem load will find it, its reduce warps (lane
// 1) pull head h's chunk reduced over all GPUs through the NVSwitch (multimem.ld_reduce) and
// store the result to every GPU at once (multimem.st), its gather warps (lane 2) copy every
// head's result out. The NVSwitch appears as pseudo-ranks n + h (one per head, ranks past the
// communicator's): lane 0 receives head h's chunk from all n GPUs and sends the reduction to
// h; lane 1 receives h's result and sends it to all n. Edges to and from a pseudo-rank are
// halves of an NVLink transfer (GPU to switch, switch to GPU), so per loop every GPU sends
// n + 1 chunks and receives n + 1: per byte of data (1 + 1/n) each way, against a ring's
// 2 (n - 1) / n.
//
// NVLSTree (NVLS inside each server, trees across them; all_reduce.h RunWorkColl<...,
// NCCL_ALGO_NVLS_TREE, ...>, connect.cc connectNvls): a server's heads are its GPUs with a NIC
// of their own (search.cc: one NVLS graph channel per NIC), H of them; a loop is H chunks,
// head h owning chunk h. Every GPU scatters its H chunks to its server's switch side of each
// head (pseudo-rank N + s H + h for server s, N ranks), whose reduction goes to head h's
// reduce lane (1). Head h of every server is a node of NCCL's double binary tree over the
// servers (tree c mod 2, ncclGetDtree): its reduce lane adds its children's partial sums
// (received over the network, through each head's own NIC) to the switch's and sends the sum
// to its parent; the root's reduce lane instead stores the result through the switch
// (multimem.st) and sends it to its children; a non-root head's broadcast lane (3) receives it
// from the parent, stores it and passes it on. Gather (lane 2) as NVLS. Per loop each head's
// NVLink carries H + 1 chunks each way, as NVLS; its NIC one chunk each way per tree edge.
//
// CollNet (SHARP: reductions in the InfiniBand switches; all_reduce.h RunWorkColl<...,
// NCCL_ALGO_COLLNET_DIRECT / _CHAIN, ...>, connect.cc connectCollNet). The network part is the
// same for both: head h of every server (CommLayout::sharp_trees[h]) sends its partial sum to
// the aggregation node of its leaf switch; each node (a pseudo-rank past the communicator's,
// run by the switch, no thread block) receives its children's (heads' or nodes') data on lane
// 0, reduces it and sends it to its parent; the root instead sends the sum back down, and a
// node's lane 1 copies what comes from its parent to every child, so every head receives the
// result. A server's data crosses each head's NIC once each way, against a ring's 2 (N-1)/N.
//   Direct (needs NVSwitches): as NVLS with the heads' blocks doing the reduction: a loop is
//     H chunks, head h's. Every GPU scatters (lane 0) chunk h to head h (its own it keeps);
//     head h's reduce lane (1) sums the server's chunk h and sends it into tree h; its
//     broadcast lane (3) receives the result and copies it to every other GPU, whose gather
//     lane (2) receives it.
//   Chain: channel c uses tree c mod H. Inside a server the GPUs form a chain in the channel's
//     ring order ending at the head; lane 0 reduces up the chain (the head into the tree),
//     lane 1 broadcasts the result from the head back down.

#include <cstdint>
#include <span>
#include <vector>

#include "models/nccl/collective.hpp"

namespace fabricsim {

// NCCL's binary tree over n ranks (ncclGetBtree): parent and two children of `rank`, -1 for
// none; nccl_dtree gives the second tree of the double binary tree (ncclGetDtree).
struct TreeLinks {
  int up = -1, down0 = -1, down1 = -1;
};
TreeLinks nccl_btree(int n, int rank);
TreeLinks nccl_dtree(int n, int rank);

struct PlanEdge {
  std::uint32_t from = 0, to = 0;  // ranks of the communicator (NVLS: or its NVSwitch)
  std::uint8_t lane = 0;           // the sender's block
  std::uint8_t to_lane = 0;        // the receiver's (the same lane but for NVLS)
};

struct PlanStep {
  std::uint32_t recv_begin = 0, recv_end = 0;  // edges it receives on (CollectivePlan::refs)
  std::uint32_t send_begin = 0, send_end = 0;  // edges it sends on
  std::uint32_t repeat = 1;                    // primitives of this kind in a row
  std::uint8_t lane = 0;
  bool reduce = false;       // reduces what it receives with its own data (else copies)
  bool after_lane0 = false;  // waits for its rank's lane-0 primitive of the same unit
  // Each edge carries data of its own (NVLS scatter, gather), so the block copies the unit
  // once per edge; otherwise the same data goes to every edge it sends on.
  bool distinct = false;
};

struct CollectivePlan {
  enum class Shape { kRing, kChain, kTree, kNvls, kNvlsTree, kCollNetDirect, kCollNetChain };
  Shape shape = Shape::kRing;
  int lanes = 1;
  std::vector<std::uint32_t> order;  // ranks
  std::vector<PlanEdge> edges;
  std::vector<std::uint32_t> refs;        // edge indices the steps point into
  std::vector<PlanStep> steps;            // every rank's, rank order[p] at step_begin[p]
  std::vector<std::uint32_t> step_begin;  // order.size() + 1 entries
  std::vector<std::uint32_t> fill;        // edge indices

  std::span<const PlanStep> steps_of(std::size_t position) const {
    return {steps.data() + step_begin[position], steps.data() + step_begin[position + 1]};
  }
  std::span<const std::uint32_t> recvs(const PlanStep& s) const {
    return {refs.data() + s.recv_begin, refs.data() + s.recv_end};
  }
  std::span<const std::uint32_t> sends(const PlanStep& s) const {
    return {refs.data() + s.send_begin, refs.data() + s.send_end};
  }
  // Whether primitives move slices of a unit (ring, chain) or the whole unit (tree, NVLS).
  bool sliced() const { return shape == Shape::kRing || shape == Shape::kChain; }
  // NVLS, NVLSTree: ranks at or past this one are the NVSwitches' pseudo-ranks (else none),
  // and the heads per server (a loop's chunks).
  std::uint32_t switch_ranks_from = UINT32_MAX;
  std::uint32_t heads = 0;
  bool nvls() const { return shape == Shape::kNvls || shape == Shape::kNvlsTree; }
  // CollNet: ranks at or past this one are aggregation nodes, pseudo-rank r the fabric endpoint
  // endpoints[r - aggregators_from].
  std::uint32_t aggregators_from = UINT32_MAX;
  std::vector<std::uint32_t> endpoints;
  bool collnet() const { return shape == Shape::kCollNetDirect || shape == Shape::kCollNetChain; }
  bool aggregator(std::uint32_t rank) const { return rank >= aggregators_from; }
  // The units `bytes` of one channel are cut into (one chunker makes every cut).
  std::vector<std::uint64_t> units(const Chunker& chunker, std::uint64_t bytes) const;
  // Primitives the plan runs on `bytes` of one channel, counted without cutting them.
  std::uint64_t primitives(const Chunker& chunker, std::uint64_t bytes) const;
};

// `ranks` is the communicator's size (a tree channel spans all of it).
CollectivePlan plan_ring(const CommChannel& ch, CollOp op);
CollectivePlan plan_chain(const CommChannel& ch, bool reduce, int root);
CollectivePlan plan_tree(const CommChannel& ch);
CollectivePlan plan_nvls(std::uint32_t ranks);
// Per server position (servers in the order of their first rank, NCCL's node index) its NVLS
// heads: its ranks with a NIC of their own (the first rank on each NIC), the same number on
// every server (the fewest any has). Empty unless every server has as many ranks.
std::vector<std::vector<std::uint32_t>> nvls_tree_heads(const CommLayout& layout);
// With `sharp` (NCCL's NVLS algorithm across servers, which needs CollNet): the heads' network
// part is the layout's SHARP tree per head instead of the double binary tree between heads.
CollectivePlan plan_nvls_tree(const CommLayout& layout, int channel, bool sharp);
// CollNet over the layout's SHARP trees (one per head; needs as many heads on every server).
CollectivePlan plan_collnet_direct(const CommLayout& layout);
CollectivePlan plan_collnet_chain(const CommLayout& layout, int channel);
// The plan NCCL runs for `op` with `algo` on channel c of `layout` (Tree, NVLS, NVLSTree and
// CollNet only for AllReduce; Broadcast and Reduce as chains; the rest as rings). Not for
// point-to-point operations.
CollectivePlan plan_collective(const CommLayout& layout, int c, CollOp op, Algo algo, int root);

}  // namespace fabricsim
