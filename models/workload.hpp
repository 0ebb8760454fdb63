#pragma once
// A training step as phases on every server, run against the collective engine.
//
// Layout: tensor parallelism inside a server (its GPUs form one TP group and synchronise at
// every TP AllReduce), data parallelism across servers (GPU i of every server forms DP group
// i, so gradients cross the network rail by rail). Per step, on each server:
//   forward:  F split into `tp_collectives / 2` pieces, each followed by a TP AllReduce of its
//             share of `tp_bytes` (activations);
//   backward: B split into `buckets` pieces; after piece j (and its share of the remaining TP
//             AllReduces) gradient bucket j (gradient_bytes / buckets per GPU) is ready; a
//             bucket's DP AllReduce starts once every server has it ready and the previous
//             bucket is reduced (one NCCL stream), so it overlaps the rest of the backward
//             pass, as DDP and Megatron do;
//   then the server waits for its last bucket and runs the optimizer (O).
// Compute times are for a GPU at speed 1; a server runs at its slowest GPU's speed (per-GPU
// speed factors model stragglers and mixed hardware). The step ends when the last server's
// optimizer does; steps run back to back.
// What overlapping costs the compute (SMs and HBM NCCL takes) is reported by
// compute_slowdown() in models/nccl.hpp; the step model does not stretch compute by it.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/collective.hpp"

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
};

// One span of the step timeline (for a Chrome/Perfetto trace): track 0 compute, 1 TP
// AllReduces, 2 DP AllReduces, per server.
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
  double exposed_comm_ms = 0;  // step - compute
  double overlapped_comm_ms = 0;
  double tokens_per_s = 0;
  std::uint64_t collectives = 0;
  Time dp_active{};  // total time some DP AllReduce was running
  bool completed = false;
  std::vector<TraceSpan> trace;  // when tracing
  std::vector<StepSpan> steps;   // when tracing: the collectives' primitives, per rank
};

class WorkloadDriver final : public CollectiveListener {
 public:
  // `server_comms[s]`: the TP communicator of server s; `dp_comms[i]`: DP group i (one rank
  // per server). `server_speed[s]`: the slowest GPU's speed factor on server s.
  WorkloadDriver(Simulation& sim, CollectiveEngine& engine, const WorkloadSpec& spec,
                 std::vector<std::uint32_t> server_comms, std::vector<std::uint32_t> dp_comms,
                 std::vector<double> server_speed);
  void start();
  // Records the step timeline, and up to `step_limit` collective primitives per rank.
  void enable_trace(std::size_t step_limit = 200'000) {
    trace_ = true;
    engine_.trace_steps(&result_.steps, step_limit);
  }
  const WorkloadResult& result() const { return result_; }
  void on_collective_done(std::uint32_t id) override;

 private:
  enum class Kind { kCompute, kTpAllReduce, kBucketReady, kWaitDp, kStepEnd };
  struct Action {
    Kind kind;
    Time duration{};          // compute
    std::uint64_t bytes = 0;  // TP AllReduce
    int bucket = 0;
    const char* name = "";  // compute: forward, backward, optimizer
  };
  void advance(std::uint64_t server);
  void try_launch_bucket();
  void begin_step();

  Simulation& sim_;
  CollectiveEngine& engine_;
  WorkloadSpec spec_;
  std::vector<std::uint32_t> server_comms_, dp_comms_;
  std::vector<double> speed_;
  std::vector<Action> plan_;  // one server's actions per step (durations at speed 1)
  std::vector<std::size_t> next_;
  std::vector<int> ready_;  // servers with bucket j ready
  int next_bucket_ = 0;
  int dp_pending_ = 0;  // DP collectives of the current bucket still running
  int servers_done_ = 0;
  int step_ = 0;
  Time step_start_{}, bucket_start_{};
  std::map<std::uint32_t, std::uint32_t> tp_owner_;  // TP collective id -> server
  std::vector<bool> waiting_dp_;
  double tp_total_ms_ = 0, dp_total_ms_ = 0, step_total_ms_ = 0;
  WorkloadResult result_;
  bool trace_ = false;
  HandlerId advance_;
};

}  // namespace fabricsim
