#include "report/trace.hpp"

#include <fmt/format.h>
#include <map>
#include <set>

namespace fabricsim {

std::string chrome_trace(const std::vector<TraceSpan>& spans) {
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  const auto track = [](int t) {
    const char* named[] = {"compute", "TP AllReduce", "DP AllReduce", "PP send"};
    return t < 4 ? std::string(named[t]) : fmt::format("GPU {} primitives", t - 4);
  };
  std::map<int, std::set<int>> tracks_of;  // server -> the tracks it uses
  for (const auto& sp : spans) tracks_of[sp.server].insert(sp.track);
  bool first = true;
  const auto add = [&](const std::string& event) {
    out += (first ? "  " : ",\n  ") + event;
    first = false;
  };
  for (const auto& [server, tracks] : tracks_of) {
    add(fmt::format(
        R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": "server {}"}}}})",
        server, server));
    for (const int t : tracks)
      add(fmt::format(
          R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": "{}"}}}})",
          server, t, track(t)));
  }
  for (const auto& sp : spans)
    add(fmt::format(
        R"({{"name": "{}", "cat": "{}", "ph": "X", "ts": {:.3f}, "dur": {:.3f}, "pid": {}, "tid": {}}})",
        sp.name, sp.track < 4 ? track(sp.track) : "collective", sp.start.us(), sp.duration.us(),
        sp.server, sp.track));
  out += "\n]}\n";
  return out;
}

}  // namespace fabricsim
