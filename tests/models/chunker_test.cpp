// The one chunker (models/nccl/nccl.hpp): every cut a collective's bytes get, from NCCL's
// buffer size through step_sizing.

#include <gtest/gtest.h>

#include <numeric>

#include "models/nccl/nccl.hpp"

using namespace fabricsim;

namespace {

StepSizing sizing(Bytes::rep chunk, Bytes::rep slice) {
  StepSizing s;
  s.chunk = Bytes(chunk);
  s.slice = Bytes(slice);
  return s;
}

}  // namespace

TEST(Chunker, RingLoopsMoveFullChunksThenSplitTheRestEvenly) {
  const Chunker c(sizing(1000, 250));
  // 4 ranks, 9000 B: two loops of 4 x 1000, then 1000 B left split as 4 x 250.
  EXPECT_EQ(c.chunks(9000, 4), (std::vector<std::uint64_t>{1000, 1000, 250}));
  EXPECT_EQ(c.first_chunk(9000, 4), 1000u);
  EXPECT_EQ(c.slices(1000), (std::vector<std::uint64_t>{250, 250, 250, 250}));
  EXPECT_EQ(c.slices(600), (std::vector<std::uint64_t>{250, 250, 100}));
  EXPECT_EQ(c.slices(0), (std::vector<std::uint64_t>{0}));
  EXPECT_EQ(c.first_slice(100), 100u);
  // Chains and trees: one chunk per loop, the last what is left; never an empty cut.
  EXPECT_EQ(c.chunks(2500), (std::vector<std::uint64_t>{1000, 1000, 500}));
  EXPECT_EQ(c.chunks(0), (std::vector<std::uint64_t>{1}));
}

TEST(Chunker, CountsAgreeWithTheCutsAndTheCutsCoverTheBytes) {
  // NCCL's defaults: Simple ring chunk = 4 steps of buffsize / 8, slice = 2 steps.
  NcclConfig cfg;
  const Chunker c(step_sizing(CollOp::kAllReduce, Algo::kRing, Proto::kSimple, cfg));
  EXPECT_EQ(c.first_chunk(1ull << 40), static_cast<std::uint64_t>(cfg.buffsize.count() / 2));
  for (const std::uint32_t ranks : {1u, 2u, 3u, 8u, 16u})
    for (std::uint64_t bytes = 1; bytes < (64ull << 20); bytes = bytes * 3 + 7) {
      const auto chunks = c.chunks(bytes, ranks);
      EXPECT_EQ(c.chunk_count(bytes, ranks), chunks.size()) << bytes << " / " << ranks;
      const std::uint64_t moved =
          std::accumulate(chunks.begin(), chunks.end(), std::uint64_t{0}) * ranks;
      EXPECT_GE(moved, bytes);
      EXPECT_LT(moved - bytes, ranks * chunks.size()) << "rounding is at most a byte per cut";
      EXPECT_EQ(c.slice_count(chunks.front()), c.slices(chunks.front()).size());
    }
}
