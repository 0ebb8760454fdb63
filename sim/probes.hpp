#pragma once
// Typed probes. Models register named counters and gauges at build time and update them on
// the hot path with a plain add or store; they never print or decide what is kept. The
// scenario decides what is recorded: every counter ends up in results.json, and gauges whose
// names match the scenario's `record.timeseries` patterns are sampled periodically by a
// GaugeSampler into a time series (CSV).
//
// Names are dot-separated paths ("switch0.port3.queue_bytes"); they are unique per registry.
// References returned by counter()/gauge() stay valid for the registry's lifetime.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sim/units.hpp"

namespace fabricsim {

class Simulation;

struct Counter {
  std::uint64_t value = 0;
  void add(std::uint64_t n = 1) { value += n; }
};

struct Gauge {
  double value = 0;
  void set(double v) { value = v; }
};

// A state a model was in from `start` to `end` (a port's priority paused by PFC); `end` is
// Time::max() while the state lasts. `name` is the registry's span name id.
struct SpanRecord {
  std::uint32_t name = 0;
  Time start{}, end = Time::max();
};

// Glob match with '*' (any run of characters) and '?' (one character).
bool glob_match(std::string_view pattern, std::string_view name);

class ProbeRegistry {
 public:
  Counter& counter(const std::string& name);
  Gauge& gauge(const std::string& name);
  // A probe whose storage the model owns, inside its own hot state (a port updates its
  // counters on every packet: a counter kept here would cost it one more cache miss). The
  // registry only points at it; the model must outlive every read of the registry (results
  // are collected while the models live, as refreshers already require).
  void attach(const std::string& name, Counter& owned);
  void attach(const std::string& name, Gauge& owned);
  // Gauges computed when sampled from a model's own state (a flow-level link's share of its
  // capacity in use: the solver holds the rates, nothing is stored on every change). The model
  // registers one enumerator; it runs only when gauges are looked up (a run that records no
  // time series never names them), calling `visit(name, reader)` once per gauge, each name
  // unique and none a stored gauge's. The model must clear it before it dies.
  using GaugeReader = std::function<double()>;
  using GaugeVisitor = std::function<void(std::string name, GaugeReader read)>;
  void set_gauge_source(const void* owner, std::function<void(const GaugeVisitor&)> enumerate);
  void clear_gauge_source(const void* owner);

  struct NamedCounter {
    std::string_view name;
    std::uint64_t value;
  };
  // Counters in name order (deterministic output). Refreshers run first.
  std::vector<NamedCounter> counters() const;
  // A model whose counters are derived from its own state (computed when read, not on the hot
  // path) registers a refresher that brings them up to date; it must clear it before it dies.
  void set_refresher(const void* owner, std::function<void()> refresh);
  void clear_refresher(const void* owner);
  // Spans: a model names its kinds of span at build time (span_name) and, at each transition,
  // asks for span_log(), which is null unless the scenario records spans (a trace does), so a
  // run that records none pays one test per transition. open_span returns the record's index
  // (npos when not recording), close_span ends it.
  static constexpr std::uint32_t kNoSpan = 0xffffffffu;
  std::uint32_t span_name(std::string name);
  const std::string& span_name_of(std::uint32_t id) const { return span_names_[id]; }
  void record_spans(bool on) { recording_spans_ = on; }
  std::uint32_t open_span(std::uint32_t name, Time start) {
    if (!recording_spans_) return kNoSpan;
    spans_.push_back({name, start, Time::max()});
    return static_cast<std::uint32_t>(spans_.size() - 1);
  }
  void close_span(std::uint32_t index, Time end) {
    if (index != kNoSpan) spans_[index].end = end;
  }
  // In the order they opened (deterministic: the simulation's event order).
  const std::vector<SpanRecord>& spans() const { return spans_; }

  // Gauge names matching any pattern, in name order, with a reader of each.
  std::vector<std::pair<std::string, GaugeReader>> gauges_matching(
      const std::vector<std::string>& patterns) const;
  // Every gauge's name, in name order (for messages about a pattern that matches none).
  std::vector<std::string> gauge_names() const;

 private:
  void claim(const std::string& name);
  std::deque<Counter> counter_store_;
  std::deque<Gauge> gauge_store_;
  std::map<std::string, Counter*, std::less<>> counters_;
  std::map<std::string, Gauge*, std::less<>> gauges_;
  std::vector<std::pair<const void*, std::function<void(const GaugeVisitor&)>>> gauge_sources_;
  std::vector<std::pair<const void*, std::function<void()>>> refreshers_;
  std::vector<std::string> span_names_;
  std::vector<SpanRecord> spans_;
  bool recording_spans_ = false;
};

// Samples the selected gauges every `interval` while the simulation has model work pending; its
// events are background events, so sampling never keeps a finished simulation running. Values are
// recorded as they are at the sampling instant, before events of that instant with later priority
// run.
class GaugeSampler {
 public:
  GaugeSampler(Simulation& sim, const std::vector<std::string>& patterns, Time interval);
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<Time>& times() const { return times_; }
  // values()[i] is the series of names()[i], aligned with times().
  const std::vector<std::vector<double>>& values() const { return values_; }

 private:
  void tick(std::uint64_t);
  Simulation& sim_;
  Time interval_;
  std::uint32_t handler_;
  std::vector<std::string> names_;
  std::vector<ProbeRegistry::GaugeReader> gauges_;
  std::vector<Time> times_;
  std::vector<std::vector<double>> values_;
};

}  // namespace fabricsim
