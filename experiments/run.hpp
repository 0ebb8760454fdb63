#pragma once
// Runs a scenario and gathers its results: builds the fabric and traffic from the plain
// structs, runs the simulation, and reduces probes and the message log to metrics.

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/simulation.hpp"

namespace fabricsim {

struct Metric {
  std::string name;
  double value;
  std::string unit;  // for the text report; results.json carries the unit in the name
};

// One busy link of the bottleneck summary.
struct LinkLoad {
  std::string layer;  // NVLink, PCIe, host memory, NIC, leaf downlink, leaf uplink, spine
  std::string port;
  double utilization = 0;  // transmitted bits / (run time x rate)
  double paused_us = 0;    // time its transmitter was paused by PFC
};

struct RunResult {
  std::string status;  // "completed" (all traffic done), "time-limit", "deadlock", "no-progress"
  std::vector<std::string> errors;  // transport errors and what stopped the run, one line each
  Time sim_time;
  std::uint64_t events = 0;
  // Event-stream fingerprint of the run's simulations (Simulation::fingerprint), for tests;
  // not written to results.json.
  std::uint64_t fingerprint = 0;
  std::vector<Metric> metrics;
  std::vector<std::pair<std::string, std::uint64_t>> counters;
  std::vector<LinkLoad> bottlenecks;  // the busiest links of each layer, busiest layer first
  // Sampled gauges (aligned with times).
  std::vector<std::string> series_names;
  std::vector<Time> series_times;
  std::vector<std::vector<double>> series_values;
};

// The scenario's cluster as a graph with its routing tables. Throws FabricError when the
// fabric cannot be built as asked.
// Built in place (routing keeps edge descriptors into the topology), never copied or moved.
struct BuiltCluster {
  explicit BuiltCluster(const Scenario& scenario);
  BuiltCluster(const BuiltCluster&) = delete;
  BuiltCluster& operator=(const BuiltCluster&) = delete;
  Topology topology;
  Routing routing;
};

// What a run may hold before it is refused without --force: far above any study a scenario
// means (the 256-GPU study holds ~10^4 messages), below what fills a 24 GiB machine.
inline constexpr std::uint64_t kMaxMessages = 50'000'000;
inline constexpr std::uint64_t kMaxSamplesPerGauge = 10'000'000;  // 80 MB per gauge
inline constexpr std::uint64_t kMaxSweepPoints = 10'000;

// Everything that would stop a run once started, found before it starts, so that `check`
// refuses what `run` would: a switch buffer smaller than its reservations (packet level), a
// permutation that maps every host to itself, and sizes past the limits above (unless
// `force`). Throws ConfigError, each message at the scenario's position of the key to change.
void preflight(const Scenario& scenario, const BuiltCluster& cluster, bool force);

// Folds a simulation's fingerprint into `into` (runs made of several simulations).
inline void fold_fingerprint(std::uint64_t& into, std::uint64_t fingerprint) {
  into = (into ^ fingerprint) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
}

// PFC pause frames sent, over all ports, from a run's counters.
std::uint64_t pfc_pause_frames(const std::vector<std::pair<std::string, std::uint64_t>>& counters);

// The most utilised links per layer over `span` (packet level), with their pause time.
std::vector<LinkLoad> bottleneck_summary(
    PacketNetwork& net, const Topology& topo, const Routing& routing, Time span,
    const std::vector<std::pair<std::string, std::uint64_t>>& counters, std::size_t per_layer = 2,
    const std::map<std::string, std::uint64_t>* since = nullptr);
// Bytes each port has transmitted so far (a baseline for bottleneck_summary over an interval).
std::map<std::string, std::uint64_t> port_bytes_now(PacketNetwork& net);
// The same at flow level: payload utilisation of every link direction (NVLink bundles, PCIe,
// host memory, NICs, switch ports) over `span`; no pauses at this level. Bytes count when a
// flow ends, so spans should end when traffic has drained.
std::vector<LinkLoad> bottleneck_summary(
    const FlowNetwork& net, Time span, std::size_t per_layer = 2,
    const std::map<std::string, std::uint64_t>* since = nullptr);
std::map<std::string, std::uint64_t> link_bytes_now(const FlowNetwork& net);
// The `per_layer` busiest links of each layer, layers ordered by their busiest link.
std::vector<LinkLoad> busiest_per_layer(std::vector<LinkLoad> all, std::size_t per_layer);

// The fabric backend a scenario's fidelity asks for (packet or flow level).
struct FabricBackend {
  FabricBackend(Simulation& sim, const Scenario& scenario, const BuiltCluster& cluster);
  std::unique_ptr<PacketNetwork> packet;  // set at packet level
  std::unique_ptr<FlowNetwork> flow;      // set at flow level (message slots recycled)
  TransferPort& port() { return packet ? static_cast<TransferPort&>(*packet) : *flow; }
  // The busiest links per layer over `span`, at whichever level runs (pause times and the
  // `counters` they come from at packet level only), counting from `since` when given.
  std::vector<LinkLoad> bottlenecks(
      const BuiltCluster& cluster, Time span,
      const std::vector<std::pair<std::string, std::uint64_t>>& counters, std::size_t per_layer = 2,
      const std::map<std::string, std::uint64_t>* since = nullptr);
  // Bytes each link (port) has carried so far: a `since` baseline for bottlenecks.
  std::map<std::string, std::uint64_t> bytes_now();
};

// A metric over several seeds (ECMP hashing, start jitter and ECN marking draw on the seed).
struct SeedSpread {
  std::string name, unit;
  double mean = 0, min = 0, max = 0;
  // (max - min) / |mean|; 0 when the mean is 0.
  double spread() const { return mean != 0 ? (max - min) / std::abs(mean) : 0; }
};
// The spread above which a report says the answer depends on the seed.
inline constexpr double kSeedSpreadWarning = 0.05;
struct SeedsResult {
  std::vector<std::uint64_t> seeds;
  std::vector<RunResult> runs;        // one per seed, in seed order
  std::vector<SeedSpread> metrics;    // per metric of the first run, in its order
  std::vector<std::string> warnings;  // one line per metric spread over kSeedSpreadWarning
  // The first run with every metric replaced by its mean over the seeds (for tables).
  RunResult mean_run() const;
};
using RunFn = std::function<RunResult(const Scenario&, const BuiltCluster&)>;
// Runs `scenario` with `count` seeds from its own (seed, seed + 1, ...), the cluster built
// again for each, since routing hashes with the seed.
// `cluster` is the scenario's own (its seed's), already built: only the other seeds build one.
SeedsResult run_seeds(const Scenario& scenario, const BuiltCluster& cluster, int count,
                      const RunFn& run);
// Mean, min and max of per-seed values, in seed order, with the warning line if spread.
SeedSpread spread_of(std::string name, std::string unit, const std::vector<double>& values);

// `progress` is called now and then with the simulated time and event count (empty: never).
RunResult run_scenario(const Scenario& scenario, const BuiltCluster& cluster,
                       Simulation::ProgressFn progress = {});

}  // namespace fabricsim
