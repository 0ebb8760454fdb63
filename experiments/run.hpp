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

#include "experiments/progress.hpp"
#include "fabric/fabric.hpp"
#include "scenario/scenario.hpp"
#include "sim/simulation.hpp"
#include "topo/communicator.hpp"

namespace fabricsim {

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
  std::vector<LinkLoad> bottlenecks;       // the busiest links of each layer, busiest layer first
  std::vector<TierCongestion> congestion;  // PFC and ECN per layer (packet level), over the span
  // What their utilisation is over: a traffic run's makespan (first start to last completion;
  // the simulated time runs on past it until the transport's last timer), a training run's
  // simulated time.
  Time bottleneck_span;
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

// The fabric the scenario's fidelity asks for (packet or flow level).
// The communicator options a scenario gives (NCCL's environment, the GPU's per-channel
// figure, whether the servers' inside is modelled); ranks and GPUs are the caller's.
CommunicatorOptions communicator_options(const Scenario& scenario);

std::unique_ptr<Fabric> make_fabric(Simulation& sim, const Scenario& scenario,
                                    const BuiltCluster& cluster);

// Samples the gauges `simulation.timeseries` selects, from now on (call it once the fabric and
// the models are built: they register the gauges). A pattern that matches no gauge of this run
// is a ConfigError at the key's position naming the nearest gauges there are (at packet level
// queues, pause states and DCQCN rates; at flow level each link's `utilization`).
std::unique_ptr<GaugeSampler> record_timeseries(Simulation& sim, const Scenario& scenario);

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

// `progress` is called now and then (empty: never); its fraction done is the payload
// delivered over the payload of all messages.
RunResult run_scenario(const Scenario& scenario, const BuiltCluster& cluster,
                       ProgressFn progress = {});

}  // namespace fabricsim
