#include <gtest/gtest.h>

#include "sim/simulation.hpp"

using namespace fabricsim;
using namespace fabricsim::literals;

TEST(Probes, GlobPatternsSelectByName) {
  EXPECT_TRUE(glob_match("switch0.port*.queue_bytes", "switch0.port12.queue_bytes"));
  EXPECT_TRUE(glob_match("*", "anything"));
  EXPECT_TRUE(glob_match("host?.nic.*", "host3.nic.tx_bytes"));
  EXPECT_FALSE(glob_match("host?.nic.*", "host13.nic.tx_bytes"));
  EXPECT_FALSE(glob_match("switch0.*.queue_bytes", "switch0.port1.tx_bytes"));
  EXPECT_TRUE(glob_match("a*b*c", "aXbYbZc"));
}

TEST(Probes, ANameCanBeRegisteredOnlyOnce) {
  ProbeRegistry r;
  r.counter("x.count");
  EXPECT_THROW(r.gauge("x.count"), std::logic_error);
}

TEST(Probes, CountersAreListedInNameOrder) {
  ProbeRegistry r;
  r.counter("b").add(2);
  r.counter("a").add();
  const auto all = r.counters();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "a");
  EXPECT_EQ(all[1].value, 2u);
}

TEST(Probes, SamplerRecordsSelectedGaugesOnlyWhileTheModelHasWork) {
  Simulation sim;
  Gauge& q = sim.probes().gauge("port.queue_bytes");
  sim.probes().gauge("port.other");
  struct Model {
    Gauge& q;
    void on(std::uint64_t v) { q.set(static_cast<double>(v)); }
  } m{q};
  const HandlerId h = sim.bind<&Model::on>(m);
  sim.schedule_at(15_ns, h, 3);
  sim.schedule_at(35_ns, h, 7);
  GaugeSampler sampler(sim, {"*.queue_bytes"}, 10_ns);
  sim.run();
  ASSERT_EQ(sampler.names(), std::vector<std::string>{"port.queue_bytes"});
  // Samples at 0, 10, 20, 30 ns while model events are pending. The 40 ns sample is scheduled
  // (the 35 ns event was still pending at 30 ns) but is a background event: once the last
  // model event has run, the simulation is idle and it never runs.
  const std::vector<Time> times{0_ns, 10_ns, 20_ns, 30_ns};
  EXPECT_EQ(sampler.times(), times);
  EXPECT_EQ(sampler.values()[0], (std::vector<double>{0, 0, 3, 3}));
  EXPECT_EQ(sim.now(), 35_ns);
}

TEST(Probes, RefreshersBringDerivedCountersUpToDateWhenRead) {
  ProbeRegistry probes;
  Counter& derived = probes.counter("link.tx_bytes");
  std::uint64_t state = 0;
  int owner = 0;
  probes.set_refresher(&owner, [&] { derived.value = state * 2; });
  state = 21;
  EXPECT_EQ(probes.counters().front().value, 42u);  // computed on read, not when state moved
  probes.set_refresher(&owner, [&] { derived.value = state; });  // replaces, never stacks
  EXPECT_EQ(probes.counters().front().value, 21u);
  probes.clear_refresher(&owner);
  state = 5;
  EXPECT_EQ(probes.counters().front().value, 21u);  // cleared: the value stays as last set
}

TEST(Probes, AttachedProbesAreReadFromTheModelsOwnStorage) {
  ProbeRegistry probes;
  Counter owned;  // inside a model's hot state, as a port keeps its counters
  Gauge level;
  probes.attach("port.tx_packets", owned);
  probes.attach("port.queue_bytes", level);
  owned.add(3);
  level.set(1500);
  EXPECT_EQ(probes.counters().front().value, 3u);
  const auto gauges = probes.gauges_matching({"port.*"});
  ASSERT_EQ(gauges.size(), 1u);
  EXPECT_EQ(gauges.front().second(), 1500);  // reads the model's own storage
  level.set(42);
  EXPECT_EQ(gauges.front().second(), 42);
  EXPECT_THROW(probes.attach("port.tx_packets", owned), std::logic_error);  // names stay unique
  EXPECT_THROW(probes.counter("port.queue_bytes"), std::logic_error);
}

TEST(Probes, DerivedGaugesAreComputedWhenReadAndListedInNameOrder) {
  ProbeRegistry probes;
  double load = 0.25;
  probes.gauge("b.queue_bytes").set(7);
  int enumerations = 0;
  probes.set_gauge_source(&load, [&](const ProbeRegistry::GaugeVisitor& visit) {
    ++enumerations;
    visit("c.utilization", [] { return 1.0; });
    visit("a.utilization", [&load] { return load; });
  });
  EXPECT_EQ(enumerations, 0);  // nothing is named until someone looks
  const auto gauges = probes.gauges_matching({"*.utilization", "b.*"});
  ASSERT_EQ(gauges.size(), 3u);
  EXPECT_EQ(gauges[0].first, "a.utilization");
  EXPECT_EQ(gauges[1].first, "b.queue_bytes");
  EXPECT_EQ(gauges[2].first, "c.utilization");
  EXPECT_EQ(gauges[0].second(), 0.25);
  load = 0.75;
  EXPECT_EQ(gauges[0].second(), 0.75);
  EXPECT_EQ(probes.gauge_names(),
            (std::vector<std::string>{"a.utilization", "b.queue_bytes", "c.utilization"}));
  probes.clear_gauge_source(&load);
  EXPECT_EQ(probes.gauge_names(), std::vector<std::string>{"b.queue_bytes"});
}
