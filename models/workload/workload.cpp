#include "models/workload/workload.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace fabricsim {

namespace {

// Piece i of n pieces summing exactly to total.
Time piece(Time total, int n, int i) {
  const Time::rep t = total.ps();
  return Time::from_ps(t * (i + 1) / n - t * i / n);
}

}  // namespace

WorkloadDriver::WorkloadDriver(Simulation& sim, CollectiveEngine& engine, const WorkloadSpec& spec,
                               WorkloadComms comms, std::vector<double> server_speed)
    : sim_(sim),
      engine_(engine),
      spec_(spec),
      comms_(std::move(comms)),
      speed_(std::move(server_speed)),
      advance_(sim.bind<&WorkloadDriver::advance>(*this)),
      wake_(sim.bind<&WorkloadDriver::wake>(*this)) {
  const auto servers = static_cast<int>(comms_.tp.size());
  stages_ = std::max(1, spec_.pipeline_stages);
  if (servers % stages_ != 0)
    throw std::invalid_argument(fmt::format(
        "{} servers do not split into {} pipeline stages of equal size", servers, stages_));
  replicas_ = servers / stages_;
  if (stages_ > 1 && comms_.pp.size() != static_cast<std::size_t>((stages_ - 1) * replicas_))
    throw std::invalid_argument("a pipeline needs one stage-to-stage communicator per server");
  for (int p = 0; p < stages_; ++p) plans_.push_back(stage_plan(p));
  next_.assign(comms_.tp.size(), 0);
  waiting_dp_.assign(comms_.tp.size(), false);
  blocked_since_.assign(comms_.tp.size(), Time::max());
  arrived_.resize(comms_.tp.size());
  stage_state_.resize(static_cast<std::size_t>(stages_));
  result_.servers = servers;
  const Time compute = spec_.forward + spec_.backward + spec_.optimizer;
  double slowest = 1;
  for (double s : speed_) slowest = std::min(slowest, s);
  result_.compute_ms = compute.us() / 1e3 / slowest;
}

std::vector<WorkloadDriver::Action> WorkloadDriver::stage_plan(int p) const {
  std::vector<Action> plan;
  const int m_count = std::max(1, spec_.micro_batches);
  const int buckets = std::max(1, spec_.buckets);
  const int tp_forward = spec_.tp_collectives / 2;
  const int tp_backward = spec_.tp_collectives - tp_forward;
  const std::uint64_t tp_each =
      spec_.tp_collectives > 0 ? spec_.tp_bytes / static_cast<std::uint64_t>(spec_.tp_collectives) /
                                     static_cast<std::uint64_t>(m_count)
                               : 0;
  const bool first = p == 0, last = p == stages_ - 1;
  const auto forward = [&](int m) {
    if (!first) plan.push_back({.kind = Kind::kRecv, .micro_batch = m, .direction = kForward});
    const Time fm = piece(spec_.forward, m_count, m);
    const int nf = std::max(1, tp_forward);
    for (int i = 0; i < nf; ++i) {
      plan.push_back({.kind = Kind::kCompute, .duration = piece(fm, nf, i), .name = "forward"});
      if (i < tp_forward) plan.push_back({.kind = Kind::kTpAllReduce, .bytes = tp_each});
    }
    if (!last) plan.push_back({.kind = Kind::kSend, .micro_batch = m, .direction = kForward});
  };
  const auto backward = [&](int m) {
    if (!last) plan.push_back({.kind = Kind::kRecv, .micro_batch = m, .direction = kBackward});
    const Time bm = piece(spec_.backward, m_count, m);
    // The last micro-batch's backward completes the gradients: it carries the buckets.
    const int pieces = m == m_count - 1 ? buckets : 1;
    for (int j = 0; j < pieces; ++j) {
      plan.push_back(
          {.kind = Kind::kCompute, .duration = piece(bm, pieces, j), .name = "backward"});
      const int tp_here = tp_backward * (j + 1) / pieces - tp_backward * j / pieces;
      for (int k = 0; k < tp_here; ++k)
        plan.push_back({.kind = Kind::kTpAllReduce, .bytes = tp_each});
      if (m == m_count - 1) plan.push_back({.kind = Kind::kBucketReady, .bucket = j});
    }
    if (!first) plan.push_back({.kind = Kind::kSend, .micro_batch = m, .direction = kBackward});
  };
  // 1F1B: warm-up forwards, then alternate, then the remaining backwards.
  const int warmup = std::min(stages_ - p - 1, m_count);
  for (int m = 0; m < warmup; ++m) forward(m);
  for (int i = 0; i < m_count - warmup; ++i) {
    forward(warmup + i);
    backward(i);
  }
  for (int m = m_count - warmup; m < m_count; ++m) backward(m);
  plan.push_back({.kind = Kind::kWaitDp});
  plan.push_back({.kind = Kind::kCompute, .duration = spec_.optimizer, .name = "optimizer"});
  plan.push_back({.kind = Kind::kStepEnd});
  return plan;
}

double WorkloadDriver::fraction_done() const {
  if (result_.completed) return 1;
  double per_step = 0, done = 0;
  for (std::size_t s = 0; s < next_.size(); ++s) {
    per_step += static_cast<double>(plans_[static_cast<std::size_t>(stage_of(s))].size());
    done += static_cast<double>(next_[s]);
  }
  const double total = per_step * std::max(1, spec_.steps);
  return total > 0 ? std::min(1.0, (per_step * step_ + done) / total) : 0;
}

void WorkloadDriver::start() {
  begin_step();
}

void WorkloadDriver::begin_step() {
  step_start_ = sim_.now();
  for (Stage& st : stage_state_) {
    st.ready.assign(static_cast<std::size_t>(std::max(1, spec_.buckets)), 0);
    st.next_bucket = 0;
  }
  servers_done_ = 0;
  const auto m_count = static_cast<std::size_t>(std::max(1, spec_.micro_batches));
  for (std::size_t s = 0; s < comms_.tp.size(); ++s) {
    next_[s] = 0;
    for (auto& a : arrived_[s]) a.assign(m_count, false);
    sim_.schedule_in(Time::zero(), advance_, s);
  }
}

void WorkloadDriver::advance(std::uint64_t s) {
  const std::vector<Action>& plan = plans_[static_cast<std::size_t>(stage_of(s))];
  while (next_[s] < plan.size()) {
    const Action& a = plan[next_[s]];
    switch (a.kind) {
      case Kind::kCompute: {
        ++next_[s];
        const auto ps =
            static_cast<Time::rep>(std::llround(static_cast<double>(a.duration.ps()) / speed_[s]));
        if (trace_ && ps > 0)
          result_.trace.push_back({a.name, static_cast<int>(s), 0, sim_.now(), Time::from_ps(ps)});
        sim_.schedule_in(Time::from_ps(ps), advance_, s);
        return;
      }
      case Kind::kTpAllReduce: {
        ++next_[s];
        if (a.bytes == 0) continue;
        const auto id = engine_.launch(comms_.tp[s], {.op = CollOp::kAllReduce, .bytes = a.bytes},
                                       sim_.now(), this);
        owners_[id] = {.purpose = Purpose::kTp, .server = static_cast<std::uint32_t>(s)};
        ++result_.collectives;
        return;
      }
      case Kind::kRecv: {
        if (!arrived_[s][a.direction][static_cast<std::size_t>(a.micro_batch)]) {
          if (blocked_since_[s] == Time::max()) blocked_since_[s] = sim_.now();
          return;  // the send's completion wakes this server
        }
        if (blocked_since_[s] != Time::max()) {
          pp_wait_total_ms_ += (sim_.now() - blocked_since_[s]).us() / 1e3;
          blocked_since_[s] = Time::max();
        }
        ++next_[s];
        continue;
      }
      case Kind::kSend: {
        ++next_[s];
        // Forward: to the next stage's server (this one is rank block 0 of its communicator);
        // backward: from this server to the previous stage's (rank block 1 of that one's).
        const bool fwd = a.direction == kForward;
        const std::size_t to = peer(s, a.direction);
        const std::size_t owner = fwd ? s : to;  // the boundary's communicator
        const auto g = static_cast<std::uint32_t>(engine_.layout(comms_.tp[s]).ranks.size());
        if (spec_.pp_bytes == 0) {
          deliver(to, a.direction, a.micro_batch, sim_.now());
          continue;
        }
        const auto id = engine_.launch(comms_.pp[owner],
                                       {.op = CollOp::kSendRecv,
                                        .bytes = spec_.pp_bytes,
                                        .peer_offset = g,
                                        .send_first = fwd ? 0 : g,
                                        .send_count = g},
                                       sim_.now(), this);
        owners_[id] = {.purpose = Purpose::kStageSend,
                       .server = static_cast<std::uint32_t>(s),
                       .micro_batch = a.micro_batch,
                       .direction = a.direction};
        ++result_.collectives;
        continue;  // sends do not block the sender
      }
      case Kind::kBucketReady: {
        ++next_[s];
        Stage& st = stage_state_[static_cast<std::size_t>(stage_of(s))];
        ++st.ready[static_cast<std::size_t>(a.bucket)];
        try_launch_bucket(stage_of(s));
        continue;
      }
      case Kind::kWaitDp: {
        const Stage& st = stage_state_[static_cast<std::size_t>(stage_of(s))];
        if (st.next_bucket < static_cast<int>(st.ready.size()) || st.dp_pending > 0) {
          waiting_dp_[s] = true;
          return;
        }
        ++next_[s];
        continue;
      }
      case Kind::kStepEnd:
        ++next_[s];
        if (++servers_done_ == static_cast<int>(comms_.tp.size())) finish_step();
        return;
    }
  }
}

void WorkloadDriver::deliver(std::size_t server, Direction d, int micro_batch, Time at) {
  arrived_[server][d][static_cast<std::size_t>(micro_batch)] = true;
  // Only a server blocked on a receive is woken; one that computes goes on when it is done.
  if (blocked_since_[server] != Time::max()) sim_.schedule_at(at, wake_, server);
}

void WorkloadDriver::wake(std::uint64_t server) {
  // Several deliveries may wake a server at one instant: only the first finds it blocked.
  if (blocked_since_[server] != Time::max()) advance(server);
}

void WorkloadDriver::finish_step() {
  step_total_ms_ += (sim_.now() - step_start_).us() / 1e3;
  if (++step_ < spec_.steps) {
    begin_step();
    return;
  }
  const double n = spec_.steps;
  const auto servers = static_cast<double>(comms_.tp.size());
  result_.completed = true;
  result_.step_ms = step_total_ms_ / n;
  result_.tp_allreduce_ms = tp_total_ms_ / n / servers;
  result_.dp_allreduce_ms = dp_total_ms_ / n / stages_;
  result_.pp_send_ms = stages_ > 1 ? pp_send_total_ms_ / n / (servers - replicas_) : 0;
  result_.pp_wait_ms = pp_wait_total_ms_ / n / servers;
  result_.exposed_comm_ms = std::max(0.0, result_.step_ms - result_.compute_ms);
  result_.overlapped_comm_ms = std::max(0.0, result_.tp_allreduce_ms + result_.dp_allreduce_ms +
                                                 result_.pp_send_ms - result_.exposed_comm_ms);
  result_.tokens_per_s = static_cast<double>(spec_.tokens_per_step) / (result_.step_ms * 1e-3);
}

void WorkloadDriver::try_launch_bucket(int stage) {
  Stage& st = stage_state_[static_cast<std::size_t>(stage)];
  const int buckets = static_cast<int>(st.ready.size());
  if (st.dp_pending > 0 || st.next_bucket >= buckets) return;
  if (st.ready[static_cast<std::size_t>(st.next_bucket)] < replicas_) return;
  const std::uint64_t bytes = spec_.gradient_bytes / static_cast<std::uint64_t>(buckets);
  st.bucket_start = sim_.now();
  const auto& groups =
      comms_.dp.empty() ? std::vector<std::uint32_t>{} : comms_.dp[static_cast<std::size_t>(stage)];
  if (replicas_ < 2 || bytes == 0 || groups.empty()) {
    // One replica: no data parallelism across servers.
    ++st.next_bucket;
    try_launch_bucket(stage);
    wake_dp_waiters(stage);
    return;
  }
  st.dp_pending = static_cast<int>(groups.size());
  for (const std::uint32_t comm : groups) {
    const auto id =
        engine_.launch(comm, {.op = CollOp::kAllReduce, .bytes = bytes}, sim_.now(), this);
    owners_[id] = {.purpose = Purpose::kDp, .server = static_cast<std::uint32_t>(stage)};
    ++result_.collectives;
  }
}

void WorkloadDriver::wake_dp_waiters(int stage) {
  const Stage& st = stage_state_[static_cast<std::size_t>(stage)];
  if (st.dp_pending > 0 || st.next_bucket < static_cast<int>(st.ready.size())) return;
  for (std::size_t s = 0; s < waiting_dp_.size(); ++s)
    if (waiting_dp_[s] && stage_of(s) == stage) {
      waiting_dp_[s] = false;
      sim_.schedule_in(Time::zero(), advance_, s);
    }
}

void WorkloadDriver::on_collective_done(std::uint32_t id) {
  const auto it = owners_.find(id);
  if (it == owners_.end()) return;
  const Owner o = it->second;
  owners_.erase(it);
  const CollectiveResult& r = engine_.result(id);
  switch (o.purpose) {
    case Purpose::kTp:
      tp_total_ms_ += (r.finish() - r.start).us() / 1e3;
      if (trace_)
        result_.trace.push_back(
            {"TP AllReduce", static_cast<int>(o.server), 1, r.start, r.finish() - r.start});
      sim_.schedule_at(r.finish(), advance_, o.server);
      return;
    case Purpose::kStageSend: {
      pp_send_total_ms_ += (r.finish() - r.start).us() / 1e3;
      const bool fwd = o.direction == kForward;
      if (trace_)
        result_.trace.push_back(
            {fmt::format("PP {} micro-batch {}", fwd ? "send" : "send back", o.micro_batch),
             static_cast<int>(o.server), 3, r.start, r.finish() - r.start});
      deliver(peer(o.server, o.direction), o.direction, o.micro_batch, r.finish());
      return;
    }
    case Purpose::kDp:
      break;
  }
  const int stage = static_cast<int>(o.server);
  Stage& st = stage_state_[static_cast<std::size_t>(stage)];
  if (--st.dp_pending > 0) return;
  dp_total_ms_ += (sim_.now() - st.bucket_start).us() / 1e3;
  if (trace_)
    for (std::size_t s = 0; s < comms_.tp.size(); ++s)
      if (stage_of(s) == stage)
        result_.trace.push_back({fmt::format("DP AllReduce bucket {}", st.next_bucket),
                                 static_cast<int>(s), 2, st.bucket_start,
                                 sim_.now() - st.bucket_start});
  result_.dp_active += sim_.now() - st.bucket_start;
  ++st.next_bucket;
  try_launch_bucket(stage);
  wake_dp_waiters(stage);
}

}  // namespace fabricsim
