// Collective plans (models/nccl/plan.hpp): the one description of each algorithm that the
// primitive executor and the streamed approximation both read.

#include <gtest/gtest.h>

#include <numeric>

#include "models/nccl/plan.hpp"

namespace fabricsim {
namespace {

// Four ranks in ring order 2, 0, 3, 1; a tree 0 <- 1 <- 2 and 0 <- 3 (rank 0 the root).
CommChannel channel() {
  CommChannel ch;
  ch.ring = {2, 0, 3, 1};
  ch.nic = {0, 1, 2, 3};
  ch.tree_up = {-1, 0, 1, 0};
  ch.tree_down = {{{1, 3, -1}}, {{2, -1, -1}}, {{-1, -1, -1}}, {{-1, -1, -1}}};
  return ch;
}

std::uint32_t count(const CollectivePlan& plan, std::size_t p,
                    bool (*pick)(const CollectivePlan&, const PlanStep&)) {
  std::uint32_t c = 0;
  for (const PlanStep& s : plan.steps_of(p))
    if (pick(plan, s)) c += s.repeat;
  return c;
}

TEST(Plan, RingAllReduceIsNcclsStepSequence) {
  const CollectivePlan plan = plan_ring(channel(), CollOp::kAllReduce);
  ASSERT_EQ(plan.order, (std::vector<std::uint32_t>{2, 0, 3, 1}));
  ASSERT_EQ(plan.edges.size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(plan.edges[i].from, plan.order[i]);
    EXPECT_EQ(plan.edges[i].to, plan.order[(i + 1) % 4]);
  }
  const auto all = [](const CollectivePlan&, const PlanStep&) { return true; };
  const auto sending = [](const CollectivePlan& p, const PlanStep& s) {
    return !p.sends(s).empty();
  };
  const auto reducing = [](const CollectivePlan&, const PlanStep& s) { return s.reduce; };
  for (std::size_t p = 0; p < 4; ++p) {
    EXPECT_EQ(count(plan, p, all), 2u * 4 - 1);        // 2n - 1 primitives per chunk
    EXPECT_EQ(count(plan, p, sending), 2u * (4 - 1));  // 2(n - 1) sends
    EXPECT_EQ(count(plan, p, reducing), 4u - 1);       // n - 1 reductions
    // It sends its own chunk first and ends with a receive from its predecessor.
    const auto steps = plan.steps_of(p);
    EXPECT_TRUE(plan.recvs(steps.front()).empty());
    EXPECT_TRUE(plan.sends(steps.back()).empty());
    EXPECT_EQ(plan.recvs(steps.back()).front(), (p + 3) % 4);
  }
  EXPECT_TRUE(plan.fill.empty());
  const CollectivePlan rs = plan_ring(channel(), CollOp::kReduceScatter);
  EXPECT_EQ(count(rs, 0, all), 4u);
  EXPECT_EQ(count(rs, 0, reducing), 3u);  // the final receive reduces too
  EXPECT_TRUE(rs.steps_of(0).back().reduce);
}

TEST(Plan, ChainsRunFromTheBroadcastRootAndEndAtTheReduceRoot) {
  const CollectivePlan bcast = plan_chain(channel(), false, 3);
  EXPECT_EQ(bcast.order, (std::vector<std::uint32_t>{3, 1, 2, 0}));
  const CollectivePlan reduce = plan_chain(channel(), true, 3);
  EXPECT_EQ(reduce.order, (std::vector<std::uint32_t>{1, 2, 0, 3}));
  EXPECT_EQ(reduce.fill, (std::vector<std::uint32_t>{0, 1, 2}));  // every edge, in order
  EXPECT_FALSE(reduce.steps_of(0).front().reduce);                // the first rank only sends
  EXPECT_TRUE(reduce.steps_of(1).front().reduce);
  EXPECT_TRUE(reduce.steps_of(3).front().reduce);  // the root reduces what it receives
  EXPECT_FALSE(bcast.steps_of(3).front().reduce);
}

TEST(Plan, TreeReducesUpAndBroadcastsDownOnTwoLanes) {
  const CollectivePlan plan = plan_tree(channel());
  EXPECT_EQ(plan.lanes, 2);
  EXPECT_EQ(plan.edges.size(), 6u);  // each of 3 tree links up and down, opened once
  // Opened rank by rank, children first: 1->0 up, 0->1 down, 3->0, 0->3, then rank 1's child.
  EXPECT_EQ(plan.edges[0].from, 1u);
  EXPECT_EQ(plan.edges[0].to, 0u);
  EXPECT_EQ(plan.edges[0].lane, 0);
  EXPECT_EQ(plan.edges[1].from, 0u);
  EXPECT_EQ(plan.edges[1].lane, 1);
  const auto root = plan.steps_of(0);
  EXPECT_TRUE(root[0].reduce);
  EXPECT_EQ(plan.recvs(root[0]).size(), 2u);  // both children's partial sums
  EXPECT_TRUE(plan.sends(root[0]).empty());
  EXPECT_TRUE(root[1].after_lane0);  // the root broadcasts its own reduction
  const auto leaf = plan.steps_of(2);
  EXPECT_FALSE(leaf[0].reduce);  // a leaf only sends
  EXPECT_FALSE(leaf[1].after_lane0);
  // The fill is the deepest rank's way: 2 -> 1 -> 0 up, and back down.
  ASSERT_EQ(plan.fill.size(), 4u);
  EXPECT_EQ(plan.edges[plan.fill[0]].from, 2u);
  EXPECT_EQ(plan.edges[plan.fill[2]].from, 1u);
  EXPECT_EQ(plan.edges[plan.fill[3]].lane, 1);
}

TEST(Plan, PrimitiveCountsFollowTheStepsAndTheChunker) {
  const Chunker chunker(step_sizing(CollOp::kAllReduce, Algo::kRing, Proto::kSimple, NcclConfig{}));
  const std::uint64_t bytes = 16u << 20;
  const CollectivePlan ring = plan_ring(channel(), CollOp::kAllReduce);
  // n (2n - 1) primitives per ring loop of n chunks, per slice of a chunk.
  EXPECT_EQ(
      ring.primitives(chunker, bytes),
      4u * 7 * chunker.chunk_count(bytes, 4) * chunker.slice_count(chunker.first_chunk(bytes, 4)));
  const CollectivePlan tree = plan_tree(channel());
  EXPECT_EQ(tree.primitives(chunker, bytes), 4u * 2 * chunker.chunk_count(bytes));
  // A ring loop's unit is one rank's chunk (the loop moves n of them); a tree's, a chunk.
  const auto loops = ring.units(chunker, bytes);
  EXPECT_EQ(4 * std::accumulate(loops.begin(), loops.end(), std::uint64_t{0}), bytes);
  const auto chunks = tree.units(chunker, bytes);
  EXPECT_EQ(std::accumulate(chunks.begin(), chunks.end(), std::uint64_t{0}), bytes);
}

}  // namespace
}  // namespace fabricsim
