#pragma once
// A training step as phases on every server, run against the collective engine.
//
// Layout: tensor parallelism inside a server (its GPUs form one TP group and synchronise at
// every TP AllReduce); pipeline parallelism across groups of servers (servers are split into
// `pipeline_stages` consecutive groups, stage p = server / D with D = servers / stages data
// parallel replicas; GPU i of a server sends its activations to GPU i of the same replica's
// server in the next stage, and receives the gradients back); data parallelism across the D
// servers of a stage (GPU i of each forms DP group i, so gradients cross the network rail by
// rail). Per step, on each server of stage p, for micro-batches m = 0 .. M-1 in the 1F1B
// order Megatron and PipeDream-flush use (min(P-p-1, M) forwards first, then one forward and
// one backward alternately, then the remaining backwards):
//   forward m:  receive m's activations (stage > 0), F/M split into `tp_collectives / 2`
//               pieces each followed by a TP AllReduce of its share of `tp_bytes` / M, send m's
//               activations on (stage < P-1: pp_bytes per GPU, without waiting);
//   backward m: receive m's gradients (stage < P-1), B/M with the remaining TP AllReduces,
//               send gradients back (stage > 0). The last micro-batch's backward is split
//               into `buckets` pieces; after piece j gradient bucket j (gradient_bytes /
//               buckets per GPU) is ready, and its DP AllReduce over the stage's replicas
//               starts once all of them have it and the previous bucket is reduced (one NCCL
//               stream), overlapping the rest of the backward pass, as DDP and Megatron do;
//   then the server waits for its last bucket and runs the optimizer (O).
// F, B, O are one GPU's compute per step (its stage's layers, all its micro-batches) at speed
// 1; a server runs at its slowest GPU's speed (per-GPU speed factors model stragglers and
// mixed hardware). The pipeline bubble is the time servers wait for a receive. The step ends
// when the last server's optimizer does; steps run back to back.
// What overlapping costs the compute (SMs and HBM NCCL takes) is reported by
// compute_slowdown() in models/nccl/nccl.hpp; the step model does not stretch compute by it.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/nccl/collective.hpp"

namespace fabricsim {

struct WorkloadSpec {
  double model_params = 0;                  // informational (the report shows it)
  std::uint64_t tokens_per_step = 0;        // over all servers
  Time forward{}, backward{}, optimizer{};  // per step, GPU at speed 1
  std::uint64_t gradient_bytes = 0;         // per GPU per step, AllReduced across servers
  int buckets = 4;
  std::uint64_t tp_bytes = 0;  // per GPU per step, AllReduced inside the server
  int tp_collectives = 0;      // how many TP AllReduces share tp_bytes
  int steps = 1;
  std::vector<double> gpu_speed;  // per GPU ordinal (server-major); empty: all 1
  int pipeline_stages = 1;        // P: servers / P must be whole
  int micro_batches = 1;          // M
  std::uint64_t pp_bytes = 0;     // per GPU per micro-batch between stages (each way)
};

// The communicators a workload runs on (built by the caller from the topology).
struct WorkloadComms {
  std::vector<std::uint32_t> tp;               // per server: its GPUs
  std::vector<std::vector<std::uint32_t>> dp;  // per stage, per GPU index: that GPU of each replica
  // per server of stages 0 .. P-2: its GPUs (ranks 0 .. G-1) and those of its next-stage peer
  // (ranks G .. 2G-1)
  std::vector<std::uint32_t> pp;
};

// One span of the step timeline (for a Chrome/Perfetto trace): track 0 compute, 1 TP
// AllReduces, 2 DP AllReduces, 3 stage-to-stage sends, 4 + i GPU i's primitives, per server.
struct TraceSpan {
  std::string name;
  int server = 0;
  int track = 0;
  Time start{}, duration{};
};

struct WorkloadResult {
  int servers = 0;
  double step_ms = 0;          // mean over steps
  double compute_ms = 0;       // the slowest server's compute per step
  double tp_allreduce_ms = 0;  // per step, TP AllReduce time summed (mean over servers)
  double dp_allreduce_ms = 0;  // per step, DP bucket AllReduces from launch to done, summed
                               // (mean over stages)
  double pp_send_ms = 0;       // per step, the sends across one stage boundary, both ways,
                               // summed (mean over boundaries and replicas)
  double pp_wait_ms = 0;       // per step, time blocked on a receive (mean over servers): bubble
  double exposed_comm_ms = 0;  // step - compute
  double overlapped_comm_ms = 0;
  double tokens_per_s = 0;
  std::uint64_t collectives = 0;
  Time dp_active{};  // total time some DP AllReduce was running, summed over stages
  bool completed = false;
  std::vector<TraceSpan> trace;  // when tracing
  std::vector<StepSpan> steps;   // when tracing: the collectives' primitives, per rank
};

class WorkloadDriver final : public CollectiveListener {
 public:
  // `server_speed[s]`: the slowest GPU's speed factor on server s.
  WorkloadDriver(Simulation& sim, CollectiveEngine& engine, const WorkloadSpec& spec,
                 WorkloadComms comms, std::vector<double> server_speed);
  void start();
  // Records the step timeline, and up to `step_limit` collective primitives in all. A trace of
  // 200,000 primitives is ~27 MB of JSON (~135 bytes each, measured on
  // tests/data/workload.toml), which ui.perfetto.dev loads without stalling.
  static constexpr std::size_t kTracePrimitiveLimit = 200'000;
  void enable_trace(std::size_t step_limit = kTracePrimitiveLimit) {
    trace_ = true;
    engine_.trace_steps(&result_.steps, step_limit);
  }
  const WorkloadResult& result() const { return result_; }
  // The share of the run's actions (every server's plan, every step) done so far, 0..1: the
  // progress display's measure of work.
  double fraction_done() const;
  void on_collective_done(std::uint32_t id) override;

 private:
  enum class Kind { kCompute, kTpAllReduce, kRecv, kSend, kBucketReady, kWaitDp, kStepEnd };
  enum Direction { kForward = 0, kBackward = 1 };
  struct Action {
    Kind kind;
    Time duration{};          // compute
    std::uint64_t bytes = 0;  // TP AllReduce
    int bucket = 0;           // bucket ready
    int micro_batch = 0;      // receive, send
    Direction direction = kForward;
    const char* name = "";  // compute: forward, backward, optimizer
  };
  struct Stage {
    std::vector<int> ready;  // servers with bucket j ready
    int next_bucket = 0;
    int dp_pending = 0;  // DP collectives of the current bucket still running
    Time bucket_start{};
  };
  // What a running collective was launched for.
  enum class Purpose { kTp, kStageSend, kDp };
  struct Owner {
    Purpose purpose;
    std::uint32_t server = 0;  // TP: its server; stage send: the sender; DP: the stage
    int micro_batch = 0;
    Direction direction = kForward;
  };
  std::vector<Action> stage_plan(int stage) const;
  int stage_of(std::size_t server) const { return static_cast<int>(server) / replicas_; }
  // The same replica's server in the next stage (forward) or the previous one (backward).
  std::size_t peer(std::size_t server, Direction d) const {
    return d == kForward ? server + static_cast<std::size_t>(replicas_)
                         : server - static_cast<std::size_t>(replicas_);
  }
  void advance(std::uint64_t server);
  void try_launch_bucket(int stage);
  void wake_dp_waiters(int stage);
  void begin_step();
  void finish_step();
  // Marks a micro-batch's data as arrived at `server` (at time `at`), waking it if it waits.
  void deliver(std::size_t server, Direction d, int micro_batch, Time at);
  void wake(std::uint64_t server);

  Simulation& sim_;
  CollectiveEngine& engine_;
  WorkloadSpec spec_;
  WorkloadComms comms_;
  std::vector<double> speed_;
  int stages_ = 1, replicas_ = 1;
  std::vector<std::vector<Action>> plans_;  // per stage: one server's actions per step
  std::vector<std::size_t> next_;
  std::vector<Stage> stage_state_;
  // per server and direction: micro-batches whose data has arrived
  std::vector<std::array<std::vector<bool>, 2>> arrived_;
  std::vector<Time> blocked_since_;  // per server: waiting on a receive since (max: not)
  int servers_done_ = 0;
  int step_ = 0;
  Time step_start_{};
  std::map<std::uint32_t, Owner> owners_;
  std::vector<bool> waiting_dp_;
  double tp_total_ms_ = 0, dp_total_ms_ = 0, pp_send_total_ms_ = 0, pp_wait_total_ms_ = 0,
         step_total_ms_ = 0;
  WorkloadResult result_;
  bool trace_ = false;
  HandlerId advance_, wake_;
};

}  // namespace fabricsim
