#pragma once
// Parameter sweeps: `[sweep]` in a scenario ("key.path" = [v1, v2, ...]) and/or
// `--sweep key=v1,v2,...` on the command line. The cartesian product of the axes (first axis
// slowest) runs in parallel over the local cores; every point is the scenario with that
// point's values as overrides, its results written to OUT/point-NNN/, and a summary table
// (one column per point) printed and written to OUT/summary.txt. Points are independent
// simulations, so the results do not depend on how they were scheduled.
// Under `mpirun -np N` (when built with OpenMPI) the points are spread over the ranks (point i
// on rank i mod N, each rank using its local cores); every rank writes its points' folders and
// rank 0 gathers the metrics and writes the one summary, identical to a single-machine run.
// The summary and the point folders are written by report/results.hpp (write_sweep_summary).

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "experiments/run.hpp"

namespace fabricsim {

struct SweepAxis {
  std::string key;
  std::vector<std::string> values;  // TOML literals, as --set takes them
  std::string origin;  // where it was written: "file:line:column" or "--sweep 'k=v1,v2'"
};

// Every point of the sweep, loaded (first axis slowest), each named by its values. Refuses,
// before loading any, more than kMaxSweepPoints points unless `force`; an error in a point
// is reported at its axis' origin, not as a command-line override.
std::vector<Scenario> sweep_points(const std::filesystem::path& file,
                                   const std::vector<std::string>& overrides,
                                   const std::vector<SweepAxis>& axes, bool force);

// The axes of `file`'s [sweep] table, then those of `--sweep` arguments. Throws
// std::invalid_argument naming a malformed one.
std::vector<SweepAxis> sweep_axes(const std::filesystem::path& file,
                                  const std::vector<std::string>& cli_sweeps);

// This process's MPI rank (0 when not launched by mpirun or built without MPI).
int mpi_rank();
bool mpi_enabled();

// What a sweep's points gave: per point its result, or why it failed ("" when it did not).
struct SweepOutcome {
  std::vector<RunResult> results;
  std::vector<std::string> failures;
  // False on MPI ranks other than 0: rank 0 holds (and reports) every point.
  bool reporting = true;
};
// Called by the worker that ran point `i`, as soon as it completes (e.g. to write its results
// folder, so that nothing finished is lost when a later point fails); an exception it throws
// fails the point.
using SweepPointDone = std::function<void(std::size_t i, const Scenario&, const RunResult&)>;

// Runs the points (this rank's share, over `workers` threads, a progress line per point on
// `err`); a point that fails at build, in preflight or in the run is recorded in `failures`,
// the others still run.
SweepOutcome run_sweep(const std::vector<Scenario>& points, unsigned workers, bool force,
                       const SweepPointDone& done, std::ostream& err);

// `fabricsim compare`: each scenario run once, or over its seeds (`seeds` > 0: that many;
// else its simulation.seeds) with the mean taken, up to `workers` at a time, a line on `err`
// as each starts and ends. Results are in the scenarios' order whatever the scheduling
// (every run is its own simulation); the first failure in that order is thrown after all
// have run. Every scenario is built and preflighted (see preflight) before any runs.
struct CompareOutcome {
  std::vector<RunResult> results;
  std::vector<std::string> spread_notes;  // "<scenario>: <warning>" for a metric spread by seed
};
// `progress(i)` (when set) gives scenario i's progress callback, called from its worker thread.
CompareOutcome run_compare(const std::vector<Scenario>& scenarios, unsigned workers, bool force,
                           int seeds, std::ostream& err,
                           const std::function<ProgressFn(std::size_t)>& progress = {});

}  // namespace fabricsim
