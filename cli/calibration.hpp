#pragma once
// `fabricsim calibrate`, `validate` and `diagnose`: measurements of a real cluster (a folder
// of nccl-tests outputs, perftest outputs, `nvidia-smi topo -m`, `ethtool -S`, NCCL_DEBUG
// logs; validation/parsers.hpp) against the model of a scenario.
//
// Calibration fits model parameters to the nccl-tests rows (validation/fit.hpp: robust, in
// relative error): per link class the flow level's bandwidth efficiency
// (`flow.efficiency_nvlink`, `flow.efficiency_network`) and NCCL's launch latency per protocol
// (`nccl.launch_latency.*`). It simulates every measured (binary, ranks, size) at flow level on
// the scenario's cluster, rank count mapped as the measurement ran (n <= GPUs per server: one
// server; else whole servers), and writes an overlay that `extends` the scenario.

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "cli/experiment.hpp"
#include "loader/scenario.hpp"
#include "models/nccl.hpp"
#include "validation/fit.hpp"

namespace fabricsim {

struct Measurement {
  std::string source;  // file:line
  std::string binary;  // "all_reduce_perf"
  CollOp op = CollOp::kAllReduce;
  int ranks = 0;
  std::uint64_t bytes = 0;
  double time_us = 0;  // out-of-place
};

struct MeasurementSet {
  std::vector<Measurement> collectives;  // nccl-tests rows
  std::vector<std::string> notes;        // what was read, what was skipped and why
  // Other evidence, for diagnose: perftest peak bandwidth (Gb/s) per file, PFC pause frames
  // per ethtool file, NVLink pairs of nvidia-smi, ...
  std::vector<std::pair<std::string, double>> rdma_gbps;
  std::vector<std::pair<std::string, std::uint64_t>> pause_frames;
  std::vector<std::string> topology_findings;
};

// Reads every regular file of `dir` (sorted by name) that one of the parsers recognises.
// Throws validation::ParseError for a malformed file, std::invalid_argument for an empty set.
MeasurementSet load_measurements(const std::filesystem::path& dir);

// The calibrated parameters and how to apply them to a scenario.
struct CalibrationParameter {
  std::string key;  // scenario key, e.g. "flow.efficiency_network"
  double min = 0, max = 0;
  bool time_us = false;  // written as a time ("9.1us") rather than a number
  double get(const Scenario& s) const;
  void set(Scenario& s, double v) const;
};
std::vector<CalibrationParameter> calibration_parameters();

// Simulated time (us) of each measurement on scenario `s` (at its fidelity).
std::vector<double> simulate_measurements(const Scenario& s,
                                          const std::vector<Measurement>& measurements);
// The same on an already built cluster of `s` (a fit simulates many times).
std::vector<double> simulate_measurements(const Scenario& s, const BuiltCluster& cluster,
                                          const std::vector<Measurement>& measurements);

struct Calibration {
  std::vector<CalibrationParameter> params;
  validation::FitResult fit;
};
Calibration calibrate(const Scenario& s, const std::vector<Measurement>& measurements);
// The overlay file: `extends` the scenario, the fitted values with their uncertainty.
std::string calibration_overlay(const Calibration& c, const std::filesystem::path& scenario,
                                const std::filesystem::path& out, std::size_t rows,
                                const std::string& from);

struct CalibrationCli {
  std::string measurements, scenario, out = "calibrated.toml", fidelity, report;
  double holdout = 0, max_error = 0;
};
int run_calibrate(const CalibrationCli& c, std::ostream& out, std::ostream& err);
int run_validate(const CalibrationCli& c, std::ostream& out, std::ostream& err);
int run_diagnose(const CalibrationCli& c, std::ostream& out, std::ostream& err);

}  // namespace fabricsim
