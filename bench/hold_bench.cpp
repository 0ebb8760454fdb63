// The classic hold model: N events pending; each step pops the earliest and pushes one at a
// random later time (exponential increment, mean 1 us), so the queue size stays N. Three
// structures run the same stream of increments:
//   fabricsim  - the engine (Simulation + radix heap, 32-byte events, bound handler)
//   pq_function - std::priority_queue of {time, seq, std::function} (ns-3-like: a callable
//                 object per event)
//   multimap   - std::multimap<time, event> (htsim's EventList structure)
// items_per_second is events per second.

#include <benchmark/benchmark.h>

#include <functional>
#include <map>
#include <queue>

#include "sim/simulation.hpp"

using namespace fabricsim;

namespace {

// Precomputed increments so the RNG costs the same (nothing) for every structure.
std::vector<Time::rep> increments(std::size_t n) {
  Rng r(2024);
  std::vector<Time::rep> v(n);
  for (auto& x : v) x = 1 + static_cast<Time::rep>(r.exponential(1e6));
  return v;
}

constexpr std::size_t kIncrements = 1 << 20;

struct Holder {
  Simulation& sim;
  const std::vector<Time::rep>& inc;
  std::size_t i = 0;
  HandlerId self = 0;
  std::uint64_t stop_at = 0;
  void on(std::uint64_t payload) {
    sim.schedule_in(Time::from_ps(inc[i++ & (kIncrements - 1)]), self, payload + 1);
    if (sim.events_processed() == stop_at) sim.stop();
  }
};

void BM_Hold_Fabricsim(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto inc = increments(kIncrements);
  Simulation sim;
  Holder h{sim, inc};
  h.self = sim.bind<&Holder::on>(h);
  for (std::size_t k = 0; k < n; ++k)
    sim.schedule_in(Time::from_ps(inc[k & (kIncrements - 1)]), h.self, k);
  const std::uint64_t batch = 1 << 16;
  h.stop_at = n;  // warm-up: every initial event runs once
  sim.run();
  for (auto _ : state) {
    h.stop_at = sim.events_processed() + batch;
    sim.run();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(batch));
}

void BM_Hold_PriorityQueueFunction(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto inc = increments(kIncrements);
  struct Ev {
    Time::rep t;
    std::uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  std::priority_queue<Ev, std::vector<Ev>, std::greater<>> q;
  Time::rep now = 0;
  std::uint64_t seq = 0, sink = 0;
  std::size_t i = 0;
  for (std::size_t k = 0; k < n; ++k) q.push({inc[k], seq++, [&sink] { ++sink; }});
  for (auto _ : state) {
    for (int b = 0; b < 1 << 16; ++b) {
      Ev e = q.top();
      q.pop();
      now = e.t;
      e.fn();
      q.push({now + inc[i++ & (kIncrements - 1)], seq++, std::move(e.fn)});
    }
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) << 16);
}

void BM_Hold_Multimap(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto inc = increments(kIncrements);
  std::multimap<Time::rep, std::uint64_t> q;  // equal keys keep insertion order
  std::size_t i = 0;
  std::uint64_t sink = 0;
  for (std::size_t k = 0; k < n; ++k) q.emplace(inc[k], k);
  for (auto _ : state) {
    for (int b = 0; b < 1 << 16; ++b) {
      auto it = q.begin();
      const Time::rep now = it->first;
      sink += it->second;
      q.erase(it);
      q.emplace(now + inc[i++ & (kIncrements - 1)], sink);
    }
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) << 16);
}

}  // namespace

BENCHMARK(BM_Hold_Fabricsim)
    ->Arg(1'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Hold_PriorityQueueFunction)
    ->Arg(1'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Hold_Multimap)
    ->Arg(1'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);
