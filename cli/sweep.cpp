#include "cli/sweep.hpp"

#include <fmt/format.h>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "cli/output.hpp"
#include "cli/training.hpp"
#include "loader/scenario.hpp"

namespace fabricsim {

namespace {

std::string literal(const toml::node& n) {
  if (const auto* s = n.as_string()) return fmt::format("\"{}\"", s->get());
  if (const auto* i = n.as_integer()) return std::to_string(i->get());
  if (const auto* f = n.as_floating_point()) return fmt::format("{}", f->get());
  if (const auto* b = n.as_boolean()) return b->get() ? "true" : "false";
  throw std::invalid_argument("sweep values must be strings, numbers or booleans");
}

}  // namespace

std::vector<SweepAxis> sweep_axes(const std::filesystem::path& file,
                                  const std::vector<std::string>& cli_sweeps) {
  std::vector<SweepAxis> axes;
  const ConfigDocument doc = ConfigDocument::load_file(file);
  if (const ConfigNode* sweep = doc.root().child("sweep")) {
    for (const auto& [key, node] : sweep->children) {
      const auto* array = node.value != nullptr ? node.value->as_array() : nullptr;
      if (array == nullptr || array->empty())
        throw std::invalid_argument(fmt::format(
            "{}: sweep.\"{}\" must be a non-empty array of values", file.string(), key));
      SweepAxis axis{key, {}};
      for (const auto& v : *array) axis.values.push_back(literal(v));
      axes.push_back(std::move(axis));
    }
  }
  for (const auto& s : cli_sweeps) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      throw std::invalid_argument(fmt::format("--sweep '{}' is not KEY=V1,V2,...", s));
    SweepAxis axis{s.substr(0, eq), {}};
    std::string rest = s.substr(eq + 1);
    for (std::size_t start = 0; start <= rest.size();) {
      const auto comma = rest.find(',', start);
      axis.values.push_back(rest.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

int run_sweep(const std::filesystem::path& file, const std::vector<std::string>& overrides,
              const std::vector<SweepAxis>& axes, const std::filesystem::path& out_dir,
              unsigned workers, std::ostream& out, std::ostream& err) {
  // The points, first axis slowest.
  std::vector<std::vector<std::string>> points{{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<std::string>> next;
    for (const auto& p : points)
      for (const auto& v : axis.values) {
        auto q = p;
        q.push_back(axis.key + "=" + v);
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  // Every point must load before any runs (a typo fails fast, with its point).
  std::vector<Scenario> scenarios;
  for (const auto& p : points) {
    LoadOptions o{.overrides = overrides};
    o.overrides.insert(o.overrides.end(), p.begin(), p.end());
    scenarios.push_back(load_scenario(file, o));
    // Named by its values (strings without their TOML quotes).
    std::string label;
    for (const auto& assignment : p) {
      std::string shown = assignment;
      std::erase(shown, '"');
      label += (label.empty() ? "" : " ") + shown;
    }
    scenarios.back().name = label;
  }
  std::vector<RunResult> results(points.size());
  std::vector<std::string> failures(points.size());
  std::atomic<std::size_t> next{0};
  std::mutex io;
  const auto work = [&] {
    for (std::size_t i = next++; i < points.size(); i = next++) {
      try {
        const BuiltCluster cluster(scenarios[i]);
        results[i] = scenarios[i].has_workload ? run_training(scenarios[i], cluster)
                                               : run_scenario(scenarios[i], cluster);
        write_results(out_dir / fmt::format("point-{:03}", i), scenarios[i], results[i]);
      } catch (const std::exception& e) {
        failures[i] = e.what();
      }
      const std::lock_guard lock(io);
      err << fmt::format("  point {}/{} done: {}\n", i + 1, points.size(), scenarios[i].name)
          << std::flush;
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0;
       t < std::max(1u, std::min<unsigned>(workers, static_cast<unsigned>(points.size()))); ++t)
    threads.emplace_back(work);
  for (auto& t : threads) t.join();
  int code = 0;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (!failures[i].empty()) {
      err << fmt::format("fabricsim: point {} ({}) failed: {}\n", i, scenarios[i].name,
                         failures[i]);
      code = 1;
    }
  std::string summary = compare_report(scenarios, results);
  for (std::size_t i = 0; i < points.size(); ++i)
    summary += fmt::format("point-{:03}: {}\n", i, scenarios[i].name);
  std::filesystem::create_directories(out_dir);
  write_file_atomically(out_dir / "summary.txt", summary);
  out << summary;
  return code;
}

}  // namespace fabricsim
