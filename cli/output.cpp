#include "cli/output.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "fabricsim/version.hpp"

namespace fabricsim {
namespace fs = std::filesystem;

std::string results_json(const Scenario& scenario, const RunResult& result) {
  toml::table metrics;
  for (const auto& m : result.metrics) metrics.insert_or_assign(m.name, m.value);
  toml::table counters;
  for (const auto& [name, value] : result.counters)
    counters.insert_or_assign(name, static_cast<std::int64_t>(value));
  toml::array series;
  for (const auto& n : result.series_names) series.push_back(n);

  toml::table root{
      {"fabricsim_version", kVersion},
      {"scenario", scenario.resolved},
      {"seed", static_cast<std::int64_t>(scenario.seed)},
      {"status", result.status},
      {"sim_time_ps", result.sim_time.ps()},
      {"events", static_cast<std::int64_t>(result.events)},
      {"metrics", std::move(metrics)},
      {"counters", std::move(counters)},
      {"timeseries", toml::table{{"file", result.series_names.empty() ? "" : "timeseries.csv"},
                                 {"series", std::move(series)}}},
  };
  std::ostringstream out;
  out << toml::json_formatter(root) << '\n';
  return out.str();
}

std::string timeseries_csv(const RunResult& result) {
  std::string out = "time_ps";
  for (const auto& n : result.series_names) out += "," + n;
  out += '\n';
  for (std::size_t row = 0; row < result.series_times.size(); ++row) {
    out += fmt::format("{}", result.series_times[row].ps());
    for (const auto& column : result.series_values) out += fmt::format(",{}", column[row]);
    out += '\n';
  }
  return out;
}

std::string text_report(const Scenario& scenario, const RunResult& result) {
  std::string out = fmt::format("fabricsim {} - scenario '{}' (seed {})\n", kVersion, scenario.name,
                                scenario.seed);
  if (!scenario.description.empty()) out += fmt::format("  {}\n", scenario.description);
  out += fmt::format("  fabric: star, {} hosts at {}, port buffer {}, MTU {} + {} overhead\n",
                     scenario.fabric.hosts, to_string(scenario.fabric.link_rate),
                     to_string(scenario.fabric.port_buffer), to_string(scenario.fabric.format.mtu),
                     to_string(scenario.fabric.format.header));
  out += fmt::format("  status: {} at simulated time {} after {} events\n\n", result.status,
                     to_string(result.sim_time), result.events);
  std::size_t width = 0;
  for (const auto& m : result.metrics) width = std::max(width, m.name.size());
  for (const auto& m : result.metrics) {
    const bool whole = m.value == std::floor(m.value) && std::fabs(m.value) < 1e15;
    out += whole ? fmt::format("  {:<{}}  {:>14.0f} {}\n", m.name, width, m.value, m.unit)
                 : fmt::format("  {:<{}}  {:>14.3f} {}\n", m.name, width, m.value, m.unit);
  }
  return out;
}

void write_file_atomically(const fs::path& file, const std::string& content) {
  const fs::path tmp = file.string() + fmt::format(".tmp.{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error(fmt::format("cannot write {}", tmp.string()));
    }
  }
  fs::rename(tmp, file);
}

void write_results(const fs::path& dir, const Scenario& scenario, const RunResult& result) {
  fs::create_directories(dir);
  write_file_atomically(dir / "results.json", results_json(scenario, result));
  if (!result.series_names.empty())
    write_file_atomically(dir / "timeseries.csv", timeseries_csv(result));
}

}  // namespace fabricsim
