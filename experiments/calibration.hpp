#pragma once
// `fabricsim calibrate`, `validate` and `diagnose`: measurements of a real cluster (a folder
// of nccl-tests outputs, perftest outputs, `nvidia-smi topo -m`, `ethtool -S`, NCCL_DEBUG
// logs; validation/parsers.hpp) against the model of a scenario.
//
// Calibration fits model parameters to the nccl-tests rows (validation/fit.hpp: robust, in
// relative error): per link class the flow level's bandwidth efficiency
// (`flow.efficiency_nvlink`, `flow.efficiency_network`), NCCL's launch latency per protocol
// (`nccl.launch_latency.*`) and step latency per protocol and link class
// (`nccl.step_latency.*`), each with a prior over its physical range and judged against it
// (Calibration::problems). It simulates every measured (binary, ranks, size) at flow level on
// the scenario's cluster, rank count mapped as the measurement ran (n <= GPUs per server: one
// server; else whole servers), and writes an overlay that `extends` the scenario. Parameters a
// single measurement gives directly (DirectEstimate) are set before the fit.

#include <fmt/format.h>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "experiments/perftest.hpp"
#include "experiments/run.hpp"
#include "models/nccl/nccl.hpp"
#include "scenario/scenario.hpp"
#include "scenario/schema.hpp"
#include "validation/fit.hpp"
#include "validation/harness/bench_report.hpp"
#include "validation/parsers.hpp"

namespace fabricsim {

// One measured row: an nccl-tests size, or a perftest size, ranks 2: a latency row (binary
// "ib_write_lat" or "ib_send_lat", time the typical one-way latency) or a bandwidth row
// ("ib_write_bw", "ib_send_bw", time per message of the stream: bytes / average bandwidth).
struct Measurement {
  std::string source;  // file:line
  std::string binary;  // "all_reduce_perf", "ib_write_lat"
  CollOp op = CollOp::kAllReduce;
  int ranks = 0;
  std::uint64_t bytes = 0;
  double time_us = 0;                                      // out-of-place
  bool rdma() const { return binary.starts_with("ib_"); }  // a perftest row
  bool rdma_latency() const { return rdma() && binary.ends_with("_lat"); }
  bool rdma_stream() const { return rdma() && binary.ends_with("_bw"); }
};

struct MeasurementSet {
  std::vector<Measurement> collectives;  // nccl-tests rows
  std::vector<std::string> notes;        // what was read, what was skipped and why
  // Other evidence, for diagnose: perftest peak bandwidth (Gb/s) per file, PFC pause frames
  // per ethtool file, NVLink pairs of nvidia-smi, ...
  std::vector<std::pair<std::string, double>> rdma_gbps;
  std::vector<std::pair<std::string, std::uint64_t>> pause_frames;
  std::vector<std::string> topology_findings;
  // fabricsim-bench --micro figures per JSON file: PCIe copy bandwidth, HBM copy, launch.
  std::vector<std::pair<std::string, bench::Micro>> micro;
  // fabricsim's own results.json: the model's link loads, for diagnose.
  std::vector<std::pair<std::string, validation::SimulationResults>> simulations;
};

// Reads every regular file of `dir` (sorted by name) that one of the parsers recognises.
// Throws validation::ParseError for a malformed file, std::invalid_argument for an empty set.
MeasurementSet load_measurements(const std::filesystem::path& dir);

// A calibrated parameter: a schema row with a FitSpec (scenario/schema.hpp), and how to apply
// it to a scenario (the row's KeyNumber).
struct CalibrationParameter {
  std::string key;          // scenario key, e.g. "flow.efficiency_network"
  double min = 0, max = 0;  // the fit's search bounds
  bool time_us = false;     // written as a time ("9.1us") rather than a number
  double start = 0;         // where the fit starts when the scenario's value is below min
  // In the default set always, only with RDMA latency (bandwidth) rows, or only when named
  // (--fit).
  using Use = FitSpec::Use;
  Use use = Use::kDefault;
  // The physical range (FitSpec::low, high) and its evidence.
  double low = 0, high = 0;
  std::string basis;
  double get(const Scenario& s) const;
  void set(Scenario& s, double v) const;
  // What a fitted value at one of the bounds means ("" inside them): its uncertainty is not.
  std::string at_bound(double v) const;
  // What is wrong with a fitted value against its physical range ("" inside it).
  std::string outside_range(double v) const;
  // The fit's prior on ln(value): centred on the scenario's value (where the fit starts)
  // pulled into the physical range, standard deviation half the range's width (in ln).
  validation::FitParameter fit_parameter(const Scenario& s) const;
};
// Perftest rows are simulated as `fabricsim perftest` runs them (experiments/perftest.hpp).
// One nccl-tests row's time (us) on the scenario's cluster at its fidelity, the ranks placed as
// the measurement ran (n <= GPUs per server: one server; else whole servers).
double nccl_tests_row_us(const Scenario& s, const BuiltCluster& cluster, const Measurement& m);

// Every parameter calibration can fit.
std::vector<CalibrationParameter> calibration_parameters();
// Those named (`--fit`): empty, the default set (efficiencies and launch latencies); "all";
// else the listed keys. Throws std::invalid_argument naming an unknown key.
// The default set adds nic.message_overhead when `rows` hold RDMA latency rows to fit it to,
// nic.message_rate_mpps when they hold RDMA bandwidth rows.
std::vector<CalibrationParameter> calibration_parameters(const std::vector<std::string>& keys,
                                                         const std::vector<Measurement>& rows = {});

// Simulated time (us) of each measurement on scenario `s` (at its fidelity).
std::vector<double> simulate_measurements(const Scenario& s,
                                          const std::vector<Measurement>& measurements);
// The same on an already built cluster of `s` (a fit simulates many times).
std::vector<double> simulate_measurements(const Scenario& s, const BuiltCluster& cluster,
                                          const std::vector<Measurement>& measurements);

// A parameter read off one measurement rather than fitted: fabricsim-bench's single-GPU
// figures give the PCIe copy efficiency (h2d/d2h against the GPU's PCIe path rate) and the
// effective HBM bandwidth (2 x the device-to-device copy rate: it reads and writes each byte).
struct DirectEstimate {
  std::string key;  // "flow.efficiency_pcie", "nccl.gpu_hbm"
  double value = 0;
  std::string evidence;
  void apply(Scenario& s) const;
  std::string toml_value() const;  // as the overlay writes it
};
// Payload rate (GB/s) of a GPU's host path: its PCIe link and, under a PCIe switch, the
// switch's uplink to the CPU (a pinned host copy crosses both).
double host_path_gbs(const ServerSpec& sv);
// The estimates the measurements allow on this scenario; what they do not allow, and why, is
// added to `notes`.
std::vector<DirectEstimate> direct_estimates(const Scenario& s, const MeasurementSet& set,
                                             std::vector<std::string>& notes);

struct Calibration {
  std::vector<DirectEstimate> direct;  // applied before the fit
  std::vector<CalibrationParameter> params;
  validation::FitResult fit;
  // Why the fit is not good, one line each: a fitted value at a search bound or outside its
  // physical range (the model lacks a shape the measurements have, and the parameter is
  // compensating), or no convergence. Empty: good.
  std::vector<std::string> problems() const;
  bool good() const { return problems().empty(); }
};
Calibration calibrate(const Scenario& s, const std::vector<Measurement>& measurements,
                      const std::vector<std::string>& keys = {});
// The same on an already built cluster of `s` (the fitted parameters do not change it).
Calibration calibrate(const Scenario& s, const BuiltCluster& cluster,
                      const std::vector<Measurement>& measurements,
                      const std::vector<std::string>& keys = {});
// The measured rows split for validation: every k-th row of each (binary, ranks) series,
// k = round(1 / fraction), held out (fraction 0: nothing held out).
struct Split {
  std::vector<Measurement> fit, held;
};
Split holdout_split(const std::vector<Measurement>& all, double fraction);

// Applies the estimates direct_estimates finds to `s` and returns them.
std::vector<DirectEstimate> apply_direct_estimates(Scenario& s, const MeasurementSet& set,
                                                   std::vector<std::string>& notes);

// `fabricsim validate`: one measured row against its simulation.
struct ValidationRow {
  std::string binary;  // "all_reduce_perf"
  int ranks = 0;
  std::uint64_t bytes = 0;
  double measured_us = 0, simulated_us = 0;
  double bus_factor = 1;  // busbw = bytes / time x this
  std::string role;       // "fit" or "held-out"
  std::string series() const { return fmt::format("{}, {} ranks", binary, ranks); }
  double error_percent() const { return (simulated_us / measured_us - 1) * 100; }
};
struct ValidationErrors {
  double mape = 0, worst = 0;  // mean and largest absolute relative error, %
  std::size_t n = 0;
};
struct Validation {
  std::vector<DirectEstimate> direct;  // applied before the fit (only when rows are held out)
  std::size_t fit_rows = 0, held_rows = 0;
  std::vector<ValidationRow> rows;        // the fit rows, then the held-out ones
  ValidationErrors judged;                // over the held-out rows, or all rows when none are
  std::vector<std::string> fit_problems;  // the calibration's (Calibration::problems), if any
};
// Holds out `holdout` of the set's nccl-tests/perftest rows (holdout_split), calibrates `s` on
// the rest (the set's direct estimates first, then the fit of `fit_keys`) and simulates every
// row; with nothing held out, the scenario is judged as it is. Notes of the direct estimates go
// to `notes`. Throws std::invalid_argument for a fraction outside [0, 1).
Validation validate(Scenario s, const MeasurementSet& set, double holdout,
                    const std::vector<std::string>& fit_keys, std::vector<std::string>& notes);

}  // namespace fabricsim
