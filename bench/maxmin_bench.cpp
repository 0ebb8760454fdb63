// The max-min solver's cost per event (one flow starting, then ending, and the re-solve each
// triggers) as the number of active flows elsewhere grows. The network: `components`
// independent leaf-spine-like islands of 8 links with 32 flows each (every flow crosses two
// links of its island); the event touches one island. Cost per event should stay flat:
// only the touched component is re-solved.

#include <benchmark/benchmark.h>

#include "solver/maxmin.hpp"

using namespace fabricsim;

static void BM_MaxMin_EventWithIdleFlowsElsewhere(benchmark::State& state) {
  const auto components = static_cast<int>(state.range(0));
  MaxMinSolver s;
  std::vector<std::vector<MaxMinSolver::Res>> links(static_cast<std::size_t>(components));
  for (auto& island : links) {
    for (int l = 0; l < 8; ++l) island.push_back(s.add_resource(100.0 + l));
    for (int f = 0; f < 32; ++f)
      s.add_variable(std::vector{island[static_cast<std::size_t>(f % 8)],
                                 island[static_cast<std::size_t>((f * 3 + 1) % 8)]});
  }
  s.solve();
  std::size_t resolved = 0;
  for (auto _ : state) {
    const auto v = s.add_variable(std::vector{links[0][0], links[0][5]});
    resolved += s.solve();
    s.remove_variable(v);
    resolved += s.solve();
  }
  state.counters["active_flows"] = static_cast<double>(s.variables());
  state.counters["flows_resolved_per_event"] =
      static_cast<double>(resolved) / (2.0 * static_cast<double>(state.iterations()));
}
BENCHMARK(BM_MaxMin_EventWithIdleFlowsElsewhere)->RangeMultiplier(8)->Range(1, 32768);

// The same event when every flow shares one component (one big island): the cost grows with
// the component, which is what max-min requires (any flow's rate may change).
static void BM_MaxMin_EventInOneComponent(benchmark::State& state) {
  const auto flows = static_cast<int>(state.range(0));
  MaxMinSolver s;
  std::vector<MaxMinSolver::Res> links;
  for (int l = 0; l < 64; ++l) links.push_back(s.add_resource(100.0 + l));
  for (int f = 0; f < flows; ++f)
    s.add_variable(std::vector{links[static_cast<std::size_t>(f % 64)],
                               links[static_cast<std::size_t>((f * 7 + 3) % 64)]});
  s.solve();
  for (auto _ : state) {
    const auto v = s.add_variable(std::vector{links[0], links[5]});
    s.solve();
    s.remove_variable(v);
    s.solve();
  }
  state.counters["active_flows"] = static_cast<double>(s.variables());
}
BENCHMARK(BM_MaxMin_EventInOneComponent)->RangeMultiplier(8)->Range(64, 32768);
