#include "sim/probes.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <stdexcept>

#include "sim/simulation.hpp"

namespace fabricsim {

bool glob_match(std::string_view pattern, std::string_view name) {
  // Iterative matcher with single-star backtracking: O(|pattern| * |name|) worst case.
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

void ProbeRegistry::claim(const std::string& name) {
  if (counters_.contains(name) || gauges_.contains(name))
    throw std::logic_error(fmt::format("probe \"{}\" is registered twice", name));
}

Counter& ProbeRegistry::counter(const std::string& name) {
  claim(name);
  Counter& c = counter_store_.emplace_back();
  counters_.emplace(name, &c);
  return c;
}

Gauge& ProbeRegistry::gauge(const std::string& name) {
  claim(name);
  Gauge& g = gauge_store_.emplace_back();
  gauges_.emplace(name, &g);
  return g;
}

std::uint32_t ProbeRegistry::span_name(std::string name) {
  span_names_.push_back(std::move(name));
  return static_cast<std::uint32_t>(span_names_.size() - 1);
}

void ProbeRegistry::attach(const std::string& name, Counter& owned) {
  claim(name);
  counters_.emplace(name, &owned);
}

void ProbeRegistry::attach(const std::string& name, Gauge& owned) {
  claim(name);
  gauges_.emplace(name, &owned);
}

void ProbeRegistry::set_gauge_source(const void* owner,
                                     std::function<void(const GaugeVisitor&)> enumerate) {
  clear_gauge_source(owner);
  gauge_sources_.emplace_back(owner, std::move(enumerate));
}

void ProbeRegistry::clear_gauge_source(const void* owner) {
  std::erase_if(gauge_sources_, [owner](const auto& s) { return s.first == owner; });
}

std::vector<std::string> ProbeRegistry::gauge_names() const {
  std::vector<std::string> out;
  for (const auto& [name, g] : gauges_) out.push_back(name);
  for (const auto& [owner, enumerate] : gauge_sources_)
    enumerate([&out](std::string name, const GaugeReader&) { out.push_back(std::move(name)); });
  std::sort(out.begin(), out.end());
  return out;
}

void ProbeRegistry::set_refresher(const void* owner, std::function<void()> refresh) {
  clear_refresher(owner);
  refreshers_.emplace_back(owner, std::move(refresh));
}

void ProbeRegistry::clear_refresher(const void* owner) {
  std::erase_if(refreshers_, [owner](const auto& r) { return r.first == owner; });
}

std::vector<ProbeRegistry::NamedCounter> ProbeRegistry::counters() const {
  for (const auto& [owner, refresh] : refreshers_) refresh();
  std::vector<NamedCounter> out;
  out.reserve(counters_.size());
  for (const auto& [name, c] : counters_) out.push_back({name, c->value});
  return out;
}

std::vector<std::pair<std::string, ProbeRegistry::GaugeReader>> ProbeRegistry::gauges_matching(
    const std::vector<std::string>& patterns) const {
  const auto wanted = [&](std::string_view name) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const std::string& p) { return glob_match(p, name); });
  };
  std::vector<std::pair<std::string, GaugeReader>> out;
  for (const auto& [name, g] : gauges_)
    if (wanted(name))
      out.emplace_back(name, [g = static_cast<const Gauge*>(g)] { return g->value; });
  for (const auto& [owner, enumerate] : gauge_sources_)
    enumerate([&](std::string name, GaugeReader read) {
      if (wanted(name)) out.emplace_back(std::move(name), std::move(read));
    });
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

GaugeSampler::GaugeSampler(Simulation& sim, const std::vector<std::string>& patterns, Time interval)
    : sim_(sim), interval_(interval), handler_(sim.bind<&GaugeSampler::tick>(*this)) {
  for (auto& [name, g] : sim.probes().gauges_matching(patterns)) {
    names_.push_back(name);
    gauges_.push_back(g);
  }
  values_.resize(gauges_.size());
  if (!gauges_.empty() && interval_ > Time::zero())
    sim_.schedule_background_in(Time::zero(), handler_, 0, /*priority=*/0);
}

void GaugeSampler::tick(std::uint64_t) {
  times_.push_back(sim_.now());
  for (std::size_t i = 0; i < gauges_.size(); ++i) values_[i].push_back(gauges_[i]());
  if (sim_.pending_events() > 0)
    sim_.schedule_background_in(interval_, handler_, 0, /*priority=*/0);
}

}  // namespace fabricsim
