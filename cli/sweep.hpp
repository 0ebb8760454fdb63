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

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace fabricsim {

struct SweepAxis {
  std::string key;
  std::vector<std::string> values;  // TOML literals, as --set takes them
  std::string origin;  // where it was written: "file:line:column" or "--sweep 'k=v1,v2'"
};

struct Scenario;

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

// Runs every point; returns the exit code (0, or 1 when a point failed).
// This process's MPI rank (0 when not launched by mpirun or built without MPI).
int mpi_rank();
bool mpi_enabled();

// Runs the points; a point that fails (at build, in preflight or in the run) is reported and
// the summary is then written as summary-incomplete.txt, never as a complete summary.txt.
int run_sweep(std::vector<Scenario> points, const std::filesystem::path& out_dir, unsigned workers,
              bool force, std::ostream& out, std::ostream& err);

}  // namespace fabricsim
