#pragma once
// The scenario: everything a run needs, as plain structs with units. Parsed and validated at
// the edge (this file), so models never see a string. Every key is a row of the schema
// (scenario/schema.hpp), which the loader reads keys through and docs/scenario.md is generated
// from.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "fabric/params.hpp"
#include "models/nccl/nccl.hpp"
#include "models/workload/traffic.hpp"
#include "models/workload/workload.hpp"
#include "scenario/config_tree.hpp"
#include "topo/analysis.hpp"

namespace fabricsim {

struct SimulationSettings {
  Time stop_time{};                     // hard end of simulated time
  Time sample_interval{};               // period of gauge sampling (0 = off)
  std::vector<std::string> timeseries;  // glob patterns of gauges to record
  Time deadlock_check_interval{};       // 0 = no PFC deadlock detection
  Time no_progress_timeout{};           // 0 = no guard
  int seeds = 1;  // runs with seeds seed, seed + 1, ... reported as mean, min and max
};

// packet: every packet everywhere; flow: max-min fluid flows everywhere; hybrid: packets on
// the network and GPU-NIC paths, flows on the servers' NVSwitch routes (fabric/hybrid_network.hpp).
enum class Fidelity { kPacket, kFlow, kHybrid };
// "packet", "flow" or "hybrid" (the `fidelity` key's and `--fidelity`'s values).
Fidelity fidelity_of(std::string_view name);
std::string_view to_string(Fidelity f);

struct Scenario {
  std::string name;
  std::string description;
  std::uint64_t seed = 1;
  Fidelity fidelity = Fidelity::kPacket;
  FlowEfficiency flow_efficiency{};
  ExecutionOptions execution{};  // how finely collectives run at flow level ([flow])
  SimulationSettings simulation{};
  ClusterSpec cluster{};
  NetworkParams network{};
  bool has_traffic = false;  // a [traffic] table is given
  TrafficSpec traffic{};
  bool has_workload = false;  // a [workload] table is given
  WorkloadSpec workload{};
  // What the case a scenario replays reported, by metric name ([expected]), for the report.
  std::vector<std::pair<std::string, double>> expected;
  std::vector<std::string> notes;  // [expected] notes: what the report must say about the case
  // Things the loader accepted but the user should hear about (a value set by hand that
  // contradicts the one the scenario's other keys derive), "file:line:column: key: text".
  std::vector<std::string> warnings;
  // [study]: collectives measured nccl-tests style on the same fabric, and the topology's
  // counts and cost, reported with a [workload] run (buying studies).
  std::vector<Bytes> study_sizes;
  std::vector<std::string> study_ops;  // nccl-tests binaries
  NcclConfig nccl{};
  GpuSpec gpu{};  // the GPUs' figures for the collective model ([nccl] gpu, or the server's)
  AnalysisOptions analysis{};
  toml::table resolved;  // the scenario as it runs: every key, defaults filled in
  // "file:line:column" of every key written (dotted path -> position), for errors found after
  // loading (when the fabric is built, or a size estimate is too large).
  std::map<std::string, std::string> positions;
  // The position of `key` when written, else of its nearest written table, else the file.
  std::string position_of(std::string_view key) const;
  std::string file;  // the scenario file ("" when loaded from text)
};

inline constexpr std::size_t kMaxScenarioNameLength = 200;

struct LoadOptions {
  std::vector<std::string> overrides;  // "a.b.c=value", applied in order after the files
};

// Throws ConfigError with one line per problem found.
Scenario load_scenario(const std::filesystem::path& file, const LoadOptions& options = {});
Scenario load_scenario_text(std::string_view text, std::string source_name,
                            const LoadOptions& options = {});
// Validates and converts an already merged document.
Scenario read_scenario(const ConfigDocument& doc, std::string default_name);

// Every key path the loader knows for `scenario`'s choices (for the documentation check).
std::vector<std::string> known_scenario_keys(const Scenario& scenario);

}  // namespace fabricsim
