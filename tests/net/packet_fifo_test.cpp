// The intrusive packet queue the ports use (issue 19): FIFO order, reuse after emptying, and
// iteration as the deadlock monitor reads a queue.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "net/packet.hpp"

namespace fabricsim {
namespace {

std::vector<std::uint32_t> psns(const PacketFifo& q) {
  std::vector<std::uint32_t> out;
  for (const Packet* p : q) out.push_back(p->psn);
  return out;
}

TEST(PacketFifo, KeepsArrivalOrderAndEmptiesCleanly) {
  std::array<Packet, 4> packets{};
  for (std::uint32_t i = 0; i < packets.size(); ++i) packets[i].psn = i;
  PacketFifo q;
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.begin(), q.end());
  for (Packet& p : packets) q.push_back(&p);
  EXPECT_EQ(psns(q), (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(q.pop_front()->psn, 0u);
  EXPECT_EQ(q.pop_front()->psn, 1u);
  q.push_back(&packets[0]);  // a popped packet can join again, at the back
  EXPECT_EQ(psns(q), (std::vector<std::uint32_t>{2, 3, 0}));
  EXPECT_EQ(q.front()->psn, 2u);
  while (!q.empty()) q.pop_front();
  EXPECT_EQ(q.begin(), q.end());
  q.push_back(&packets[3]);  // the tail was reset with the head
  EXPECT_EQ(psns(q), (std::vector<std::uint32_t>{3}));
  EXPECT_EQ(q.pop_front()->fifo_next, nullptr);
}

TEST(PacketFifo, APacketHeaderIsOneCacheLine) {
  EXPECT_EQ(sizeof(Packet), 64u);
  EXPECT_EQ(alignof(Packet), 64u);
}

}  // namespace
}  // namespace fabricsim
