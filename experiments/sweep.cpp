#include "experiments/sweep.hpp"

#include <fmt/format.h>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#ifdef FABRICSIM_MPI
#include <mpi.h>
#endif

#include "experiments/run.hpp"
#include "experiments/training.hpp"
#include "scenario/scenario.hpp"
#include "scenario/schema.hpp"

namespace fabricsim {

namespace {

std::string literal(const toml::node& n) {
  if (const auto* s = n.as_string()) return fmt::format("\"{}\"", s->get());
  if (const auto* i = n.as_integer()) return std::to_string(i->get());
  if (const auto* f = n.as_floating_point()) return fmt::format("{}", f->get());
  if (const auto* b = n.as_boolean()) return b->get() ? "true" : "false";
  throw std::invalid_argument("sweep values must be strings, numbers or booleans");
}

struct World {
  int rank = 0, size = 1;
};

World world() {
#ifdef FABRICSIM_MPI
  // Only under a launcher: a plain run never starts the MPI runtime.
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMI_SIZE") == nullptr)
    return {};
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised == 0) {
    MPI_Init(nullptr, nullptr);
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (finalized == 0) MPI_Finalize();
    });
  }
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  return w;
#else
  return {};
#endif
}

// Calls work(k) for k in [0, count) over up to `workers` threads, each taking the next k.
void parallel_for(std::size_t count, unsigned workers,
                  const std::function<void(std::size_t)>& work) {
  std::atomic<std::size_t> next{0};
  const auto loop = [&] {
    for (std::size_t k = next++; k < count; k = next++) work(k);
  };
  std::vector<std::thread> threads;
  const unsigned n = std::max(1u, std::min<unsigned>(workers, static_cast<unsigned>(count)));
  for (unsigned t = 0; t < n; ++t) threads.emplace_back(loop);
  for (auto& t : threads) t.join();
}

// A point's result as text lines (status, errors, metrics with round-trip precision), for
// gathering over MPI.
[[maybe_unused]] std::string serialise(const RunResult& r) {
  std::string out = "S\t" + r.status + "\n";
  for (const auto& e : r.errors) out += "E\t" + e + "\n";
  for (const auto& m : r.metrics)
    out += fmt::format("M\t{}\t{:.17g}\t{}\n", m.name, m.value, m.unit);
  return out;
}

[[maybe_unused]] RunResult deserialise(const std::string& text) {
  RunResult r;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto end = text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.size() < 2) continue;
    const std::string body = line.substr(2);
    if (line[0] == 'S') r.status = body;
    if (line[0] == 'E') r.errors.push_back(body);
    if (line[0] == 'M') {
      const auto a = body.find('\t'), b = body.find('\t', a + 1);
      r.metrics.push_back(
          {body.substr(0, a), std::stod(body.substr(a + 1, b - a - 1)), body.substr(b + 1)});
    }
  }
  return r;
}

}  // namespace

int mpi_rank() {
  return world().rank;
}

bool mpi_enabled() {
#ifdef FABRICSIM_MPI
  return true;
#else
  return false;
#endif
}

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
      SweepAxis axis{key, {}, where(node.value)};
      for (const auto& v : *array) axis.values.push_back(literal(v));
      axes.push_back(std::move(axis));
    }
  }
  for (const auto& s : cli_sweeps) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      throw std::invalid_argument(fmt::format("--sweep '{}' is not KEY=V1,V2,...", s));
    SweepAxis axis{s.substr(0, eq), {}, fmt::format("--sweep '{}'", s)};
    std::string rest = s.substr(eq + 1);
    for (std::size_t start = 0; start <= rest.size();) {
      const auto comma = rest.find(',', start);
      axis.values.push_back(rest.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    axes.push_back(std::move(axis));
  }
  // An axis must name a key of the schema: a typo fails here, once, before any point loads.
  for (const auto& axis : axes)
    if (find_scenario_key(axis.key) == nullptr) {
      const std::string near = nearest_scenario_key(axis.key);
      throw ConfigError(
          {fmt::format("{}: sweep: '{}' is not a scenario key{}", axis.origin, axis.key,
                       near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near))});
    }
  return axes;
}

std::vector<Scenario> sweep_points(const std::filesystem::path& file,
                                   const std::vector<std::string>& overrides,
                                   const std::vector<SweepAxis>& axes, bool force) {
  std::uint64_t count = 1;
  std::string shape;
  for (const auto& axis : axes) {
    count *= axis.values.size();
    shape += fmt::format("{}{} ({})", shape.empty() ? "" : " x ", axis.values.size(), axis.key);
  }
  if (count > kMaxSweepPoints && !force)
    throw ConfigError({fmt::format(
        "{}: sweep: {} points ({}) is over the {} a sweep runs; sweep fewer values, or pass "
        "--force to run anyway",
        axes.front().origin, count, shape, kMaxSweepPoints)});
  // The points, first axis slowest: (axis, value) indices.
  std::vector<std::vector<std::size_t>> points{{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<std::size_t>> next;
    for (const auto& p : points)
      for (std::size_t v = 0; v < axis.values.size(); ++v) {
        auto q = p;
        q.push_back(v);
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  // Every point must load before any runs (a typo fails fast, with its point).
  std::vector<Scenario> scenarios;
  for (const auto& p : points) {
    LoadOptions o{.overrides = overrides};
    std::vector<std::pair<std::string, std::string>> assigned;  // "--set 'k=v'" label, origin
    std::string label;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const std::string assignment = axes[a].key + "=" + axes[a].values[p[a]];
      o.overrides.push_back(assignment);
      assigned.emplace_back(fmt::format("--set '{}'", assignment),
                            fmt::format("{}: [sweep] {}", axes[a].origin, assignment));
      // Named by its values (strings without their TOML quotes).
      std::string shown = assignment;
      std::erase(shown, '"');
      label += (label.empty() ? "" : " ") + shown;
    }
    try {
      scenarios.push_back(load_scenario(file, o));
    } catch (const ConfigError& e) {
      // The point's values reach the loader as overrides; blame the sweep that wrote them.
      std::vector<std::string> messages;
      for (std::string m : e.messages()) {
        for (const auto& [as_set, origin] : assigned)
          if (m.starts_with(as_set)) m = origin + m.substr(as_set.size());
        messages.push_back(std::move(m));
      }
      throw ConfigError(std::move(messages));
    }
    scenarios.back().name = label;
  }
  return scenarios;
}

SweepOutcome run_sweep(const std::vector<Scenario>& scenarios, unsigned workers, bool force,
                       const SweepPointDone& done, std::ostream& err) {
  SweepOutcome outcome;
  auto& results = outcome.results;
  auto& failures = outcome.failures;
  results.resize(scenarios.size());
  failures.resize(scenarios.size());
  const World w = world();
  std::vector<std::size_t> mine;  // this rank's points
  for (std::size_t i = 0; i < scenarios.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(w.size)) == w.rank) mine.push_back(i);
  std::mutex io;
  parallel_for(mine.size(), workers, [&](std::size_t k) {
    const std::size_t i = mine[k];
    try {
      const BuiltCluster cluster(scenarios[i]);
      preflight(scenarios[i], cluster, force);
      results[i] = scenarios[i].has_workload ? run_training(scenarios[i], cluster)
                                             : run_scenario(scenarios[i], cluster);
      if (done) done(i, scenarios[i], results[i]);
    } catch (const std::exception& e) {
      failures[i] = e.what();
    }
    const std::lock_guard lock(io);
    err << fmt::format("  point {}/{} done: {}\n", i + 1, scenarios.size(), scenarios[i].name)
        << std::flush;
  });
#ifdef FABRICSIM_MPI
  if (w.size > 1) {
    // Every rank sends "index\nlength\ntext" records of its points; rank 0 reads them back.
    std::string mine_text;
    for (const std::size_t i : mine) {
      const std::string t =
          failures[i].empty() ? serialise(results[i]) : "F\t" + failures[i] + "\n";
      mine_text += fmt::format("{}\n{}\n{}", i, t.size(), t);
    }
    int length = static_cast<int>(mine_text.size());
    std::vector<int> lengths(static_cast<std::size_t>(w.size)), offsets(lengths.size());
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string all;
    if (w.rank == 0) {
      int total = 0;
      for (std::size_t r = 0; r < lengths.size(); ++r) {
        offsets[r] = total;
        total += lengths[r];
      }
      all.resize(static_cast<std::size_t>(total));
    }
    MPI_Gatherv(mine_text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                MPI_CHAR, 0, MPI_COMM_WORLD);
    if (w.rank != 0) {  // rank 0 reports for everyone
      outcome.reporting = false;
      return outcome;
    }
    for (std::size_t pos = 0; pos < all.size();) {
      const auto a = all.find('\n', pos), b = all.find('\n', a + 1);
      const auto i = static_cast<std::size_t>(std::stoull(all.substr(pos, a - pos)));
      const auto n = static_cast<std::size_t>(std::stoull(all.substr(a + 1, b - a - 1)));
      const std::string text = all.substr(b + 1, n);
      pos = b + 1 + n;
      if (text.starts_with("F\t"))
        failures[i] = text.substr(2, text.size() - 3);
      else
        results[i] = deserialise(text);
    }
  }
#endif
  return outcome;
}

CompareOutcome run_compare(const std::vector<Scenario>& scenarios, unsigned workers, bool force,
                           int seeds, std::ostream& err,
                           const std::function<ProgressFn(std::size_t)>& progress) {
  CompareOutcome outcome;
  outcome.results.resize(scenarios.size());
  std::vector<std::vector<std::string>> notes(scenarios.size());
  std::vector<std::exception_ptr> failures(scenarios.size());
  // Every scenario is built and checked before any runs: a study that cannot run says so
  // at once, not after its other options have run for minutes.
  std::vector<std::unique_ptr<BuiltCluster>> clusters;
  for (const Scenario& sc : scenarios) {
    clusters.push_back(std::make_unique<BuiltCluster>(sc));
    preflight(sc, *clusters.back(), force);
  }
  std::mutex io;
  const auto say = [&](const std::string& line) {
    const std::lock_guard lock(io);
    err << line << std::flush;
  };
  parallel_for(scenarios.size(), workers, [&](std::size_t i) {
    const Scenario& sc = scenarios[i];
    say(fmt::format("  running {} ({}/{}, {} level)\n", sc.name, i + 1, scenarios.size(),
                    to_string(sc.fidelity)));
    const auto started = std::chrono::steady_clock::now();
    try {
      const BuiltCluster& cluster = *clusters[i];
      const ProgressFn report = progress ? progress(i) : ProgressFn{};
      const RunFn run = [&report](const Scenario& s, const BuiltCluster& c) {
        return s.has_workload ? run_training(s, c, report) : run_scenario(s, c, report);
      };
      const int count = seeds > 0 ? seeds : sc.simulation.seeds;
      if (count > 1) {
        const SeedsResult sr = run_seeds(sc, cluster, count, run);
        outcome.results[i] = sr.mean_run();
        for (const auto& w : sr.warnings) notes[i].push_back(sc.name + ": " + w);
      } else {
        outcome.results[i] = run(sc, cluster);
      }
    } catch (...) {
      failures[i] = std::current_exception();
    }
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - started;
    say(fmt::format("  {} {} in {:.1f} s\n", failures[i] ? "failed" : "done", sc.name,
                    wall.count()));
  });
  for (const auto& f : failures)
    if (f) std::rethrow_exception(f);
  for (auto& n : notes)
    for (auto& line : n) outcome.spread_notes.push_back(std::move(line));
  return outcome;
}

}  // namespace fabricsim
