#pragma once
// Result files and the text report. Files are written to a temporary name in the target
// folder and renamed into place, so an interrupted run never leaves a half-written result.
// results.json is a pure function of the scenario and seed (no wall-clock time, no paths of
// the output folder), so runs can be compared byte for byte.

#include <filesystem>
#include <ostream>
#include <string>

#include "experiments/run.hpp"
#include "experiments/sweep.hpp"

namespace fabricsim {

// What a run's fidelity level models and what it does not, for the report header and
// results.json ("fidelity"): `inactive` names mechanisms the scenario switches on that the
// level cannot act on (PFC, ECN, DCQCN at flow level), so no report claims them.
struct FidelityScope {
  std::string level;  // "packet" or "flow"
  std::vector<std::string> models, inactive, ignores;
};
FidelityScope fidelity_scope(const Scenario& scenario);

// With `seeds` (a run over several seeds; `result` is its first), also a "seeds" table:
// the seeds, each metric's mean, min, max and spread, and the warnings.
std::string results_json(const Scenario& scenario, const RunResult& result,
                         const SeedsResult* seeds = nullptr);
// The per-metric table of a run over several seeds, and its warnings, for the text report.
std::string seeds_report(const SeedsResult& seeds);
std::string timeseries_csv(const RunResult& result);
std::string text_report(const Scenario& scenario, const RunResult& result);
// Every metric name of `results`, in first-seen order.
std::vector<std::string> metric_names(const std::vector<RunResult>& results);
// `fabricsim compare`: one column per scenario, one row per metric; where a scenario gives
// the replayed case's value ([expected]) it is shown in brackets.
std::string compare_report(const std::vector<Scenario>& scenarios,
                           const std::vector<RunResult>& results);

// The same metrics in long form, for notebooks (pandas.read_csv, R's read.csv): one row per
// scenario (or sweep point) and metric, with `axis_keys` (the swept keys) as columns holding
// each point's value of them, and the replayed case's value where [expected] gives one:
//   scenario,fidelity,<axis keys...>,metric,value,expected
// Values are written as the shortest decimal that reads back to the same double.
std::string long_csv(const std::vector<Scenario>& scenarios, const std::vector<RunResult>& results,
                     const std::vector<std::string>& axis_keys = {});

// `fabricsim topo`: the summary as text and JSON, and the graph for Graphviz.
std::string topology_report(const Scenario& scenario, const TopologySummary& summary);
std::string topology_json(const Scenario& scenario, const TopologySummary& summary);
std::string topology_dot(const Topology& topology);

// Writes results.json (and timeseries.csv when gauges were recorded) into `dir`.
void write_results(const std::filesystem::path& dir, const Scenario& scenario,
                   const RunResult& result, const SeedsResult* seeds = nullptr);
// The sweep's summary (compare_report of the points, then each point's folder and whether it
// failed), printed on `out` and written to OUT/summary.txt with its long form OUT/summary.csv
// (long_csv, a column per swept key), or to OUT/summary-incomplete.txt and .csv (removing an
// older summary.txt and .csv) when a point failed, each failure also on `err`. Returns the exit
// code: 0, or 1 when a point failed.
int write_sweep_summary(const std::filesystem::path& out_dir, const std::vector<Scenario>& points,
                        const std::vector<std::string>& axis_keys, const SweepOutcome& outcome,
                        std::ostream& out, std::ostream& err);
// Writes `content` to `file` through a temporary file and a rename.
void write_file_atomically(const std::filesystem::path& file, const std::string& content);

}  // namespace fabricsim
