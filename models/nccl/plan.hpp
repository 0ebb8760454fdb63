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

#include <cstdint>
#include <span>
#include <vector>

#include "models/nccl/collective.hpp"

namespace fabricsim {

struct PlanEdge {
  std::uint32_t from = 0, to = 0;  // ranks of the communicator
  std::uint8_t lane = 0;           // the block both ends run it on
};

struct PlanStep {
  std::uint32_t recv_begin = 0, recv_end = 0;  // edges it receives on (CollectivePlan::refs)
  std::uint32_t send_begin = 0, send_end = 0;  // edges it sends on
  std::uint32_t repeat = 1;                    // primitives of this kind in a row
  std::uint8_t lane = 0;
  bool reduce = false;       // reduces what it receives with its own data (else copies)
  bool after_lane0 = false;  // waits for its rank's lane-0 primitive of the same unit
};

struct CollectivePlan {
  enum class Shape { kRing, kChain, kTree };
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
  // Whether primitives move slices of a unit (ring, chain) or the whole unit (tree).
  bool sliced() const { return shape != Shape::kTree; }
  // The units `bytes` of one channel are cut into (one chunker makes every cut).
  std::vector<std::uint64_t> units(const Chunker& chunker, std::uint64_t bytes) const;
  // Primitives the plan runs on `bytes` of one channel, counted without cutting them.
  std::uint64_t primitives(const Chunker& chunker, std::uint64_t bytes) const;
};

// `ranks` is the communicator's size (a tree channel spans all of it).
CollectivePlan plan_ring(const CommChannel& ch, CollOp op);
CollectivePlan plan_chain(const CommChannel& ch, bool reduce, int root);
CollectivePlan plan_tree(const CommChannel& ch);
// The plan NCCL runs for `op` with `algo` (Tree only for AllReduce; Broadcast and Reduce as
// chains; the rest as rings). Not for point-to-point operations.
CollectivePlan plan_collective(const CommChannel& ch, CollOp op, Algo algo, int root);

}  // namespace fabricsim
