#include "report/trace.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace fabricsim {

namespace {

// Trace time stamps are microseconds; a picosecond Time is exact in a double up to 104 days.
double us(Time t) {
  return static_cast<double>(t.ps()) * 1e-6;
}

toml::table metadata(const char* kind, int pid, std::optional<int> tid, const std::string& name) {
  toml::table t{{"name", kind}, {"ph", "M"}, {"pid", pid}, {"args", toml::table{{"name", name}}}};
  if (tid) t.insert("tid", *tid);
  return t;
}

// A counter track: one event per change of value (Perfetto holds a value until the next).
void add_counter(toml::array& events, int pid, const std::string& name, const char* key,
                 const std::vector<Time>& times, const std::vector<double>& values) {
  std::optional<double> last;
  for (std::size_t k = 0; k < values.size() && k < times.size(); ++k) {
    if (last && *last == values[k]) continue;
    last = values[k];
    events.push_back(toml::table{{"name", name},
                                 {"ph", "C"},
                                 {"ts", us(times[k])},
                                 {"pid", pid},
                                 {"args", toml::table{{key, values[k]}}}});
  }
}

}  // namespace

std::string trace_cap_notice(const TrainingTrace& trace) {
  if (trace.primitives_dropped == 0) return {};
  return fmt::format(
      "the trace shows the first {} collective primitives; {} more are left out (the step "
      "timeline and the network tracks are complete)",
      trace.primitive_limit, trace.primitives_dropped);
}

std::string chrome_trace(const TrainingTrace& trace) {
  toml::array events;
  const auto track = [](int t) {
    const char* named[] = {"compute", "TP AllReduce", "DP AllReduce", "PP send"};
    return t < 4 ? std::string(named[t]) : fmt::format("GPU {} primitives", t - 4);
  };
  std::map<int, std::set<int>> tracks_of;  // server -> the tracks it uses
  for (const auto& sp : trace.spans) tracks_of[sp.server].insert(sp.track);
  for (const auto& [server, tracks] : tracks_of) {
    events.push_back(
        metadata("process_name", server, std::nullopt, fmt::format("server {}", server)));
    for (const int t : tracks) events.push_back(metadata("thread_name", server, t, track(t)));
  }
  Time last_primitive{};
  std::int64_t primitives = 0;
  for (const auto& sp : trace.spans) {
    events.push_back(toml::table{{"name", sp.name},
                                 {"cat", sp.track < 4 ? track(sp.track) : "collective"},
                                 {"ph", "X"},
                                 {"ts", us(sp.start)},
                                 {"dur", us(sp.duration)},
                                 {"pid", sp.server},
                                 {"tid", sp.track}});
    if (sp.track < 4) continue;
    ++primitives;
    last_primitive = std::max(last_primitive, sp.start + sp.duration);
  }

  // Network layers after the servers, in the order their first link sorts.
  const int first_pid = tracks_of.empty() ? 0 : tracks_of.rbegin()->first + 1;
  std::map<std::string, int> layer_pid;
  std::map<int, int> links_of;                            // pid -> its links so far
  std::map<std::string, std::pair<int, int>> link_track;  // link -> pid, tid
  const auto place = [&](const std::string& layer, const std::string& link) {
    auto [it, added] = layer_pid.emplace(layer, first_pid + static_cast<int>(layer_pid.size()));
    if (added)
      events.push_back(
          metadata("process_name", it->second, std::nullopt, fmt::format("network: {}", layer)));
    auto [lt, new_link] = link_track.emplace(link, std::pair(it->second, 0));
    if (new_link) {
      lt->second.second = ++links_of[it->second];
      events.push_back(metadata("thread_name", it->second, lt->second.second, link));
    }
    return lt->second;
  };
  for (const auto& l : trace.links) {
    const int pid = place(l.layer, l.name).first;
    add_counter(events, pid, l.name + " utilization", "utilization", trace.times, l.utilization);
    add_counter(events, pid, l.name + " queue", "bytes", trace.times, l.queue_bytes);
  }
  for (const auto& p : trace.pauses) {
    const auto [pid, tid] = place(p.layer, p.port);
    events.push_back(toml::table{{"name", fmt::format("PFC pause (priority {})", p.priority)},
                                 {"cat", "PFC"},
                                 {"ph", "X"},
                                 {"ts", us(p.start)},
                                 {"dur", us(p.end - p.start)},
                                 {"pid", pid},
                                 {"tid", tid}});
  }
  if (trace.primitives_dropped > 0)
    events.push_back(toml::table{{"name", trace_cap_notice(trace)},
                                 {"ph", "i"},
                                 {"s", "g"},
                                 {"ts", us(last_primitive)},
                                 {"pid", 0},
                                 {"tid", 0}});

  const toml::table root{
      {"displayTimeUnit", "ms"},
      {"otherData",
       toml::table{{"primitives_shown", primitives},
                   {"primitives_left_out", static_cast<std::int64_t>(trace.primitives_dropped)},
                   {"network_links", static_cast<std::int64_t>(trace.links.size())},
                   {"pfc_pauses", static_cast<std::int64_t>(trace.pauses.size())},
                   {"sample_interval_us", us(trace.interval)}}},
      {"traceEvents", std::move(events)}};
  std::ostringstream out;
  out << toml::json_formatter(
             root, toml::json_formatter::default_flags & ~toml::format_flags::indentation)
      << '\n';
  return out.str();
}

}  // namespace fabricsim
