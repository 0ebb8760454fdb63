#include "models/workload.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace fabricsim {

WorkloadDriver::WorkloadDriver(Simulation& sim, CollectiveEngine& engine, const WorkloadSpec& spec,
                               std::vector<std::uint32_t> server_comms,
                               std::vector<std::uint32_t> dp_comms,
                               std::vector<double> server_speed)
    : sim_(sim),
      engine_(engine),
      spec_(spec),
      server_comms_(std::move(server_comms)),
      dp_comms_(std::move(dp_comms)),
      speed_(std::move(server_speed)),
      advance_(sim.bind<&WorkloadDriver::advance>(*this)) {
  const int buckets = std::max(1, spec_.buckets);
  const int tp_forward = spec_.tp_collectives / 2;
  const int tp_backward = spec_.tp_collectives - tp_forward;
  const std::uint64_t tp_each =
      spec_.tp_collectives > 0 ? spec_.tp_bytes / static_cast<std::uint64_t>(spec_.tp_collectives)
                               : 0;
  const auto piece = [](Time total, int n, int i) {
    // n pieces summing exactly to total
    const Time::rep t = total.ps();
    return Time::from_ps(t * (i + 1) / n - t * i / n);
  };
  const int nf = std::max(1, tp_forward);
  for (int i = 0; i < nf; ++i) {
    plan_.push_back(
        {.kind = Kind::kCompute, .duration = piece(spec_.forward, nf, i), .name = "forward"});
    if (i < tp_forward) plan_.push_back({.kind = Kind::kTpAllReduce, .bytes = tp_each});
  }
  for (int j = 0; j < buckets; ++j) {
    plan_.push_back({.kind = Kind::kCompute,
                     .duration = piece(spec_.backward, buckets, j),
                     .name = "backward"});
    const int tp_here = tp_backward * (j + 1) / buckets - tp_backward * j / buckets;
    for (int k = 0; k < tp_here; ++k)
      plan_.push_back({.kind = Kind::kTpAllReduce, .bytes = tp_each});
    plan_.push_back({.kind = Kind::kBucketReady, .bucket = j});
  }
  plan_.push_back({.kind = Kind::kWaitDp});
  plan_.push_back({.kind = Kind::kCompute, .duration = spec_.optimizer, .name = "optimizer"});
  plan_.push_back({.kind = Kind::kStepEnd});
  const std::size_t servers = server_comms_.size();
  next_.assign(servers, 0);
  waiting_dp_.assign(servers, false);
  ready_.assign(static_cast<std::size_t>(buckets), 0);
  result_.servers = static_cast<int>(servers);
  Time compute = spec_.forward + spec_.backward + spec_.optimizer;
  double slowest = 1;
  for (double s : speed_) slowest = std::min(slowest, s);
  result_.compute_ms = compute.us() / 1e3 / slowest;
}

void WorkloadDriver::start() {
  begin_step();
}

void WorkloadDriver::begin_step() {
  step_start_ = sim_.now();
  next_bucket_ = 0;
  std::fill(ready_.begin(), ready_.end(), 0);
  servers_done_ = 0;
  for (std::size_t s = 0; s < server_comms_.size(); ++s) {
    next_[s] = 0;
    sim_.schedule_in(Time::zero(), advance_, s);
  }
}

void WorkloadDriver::advance(std::uint64_t s) {
  while (next_[s] < plan_.size()) {
    const Action& a = plan_[next_[s]];
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
        const auto id = engine_.launch(
            server_comms_[s], {.op = CollOp::kAllReduce, .bytes = a.bytes}, sim_.now(), this);
        tp_owner_[id] = static_cast<std::uint32_t>(s);
        ++result_.collectives;
        return;
      }
      case Kind::kBucketReady:
        ++next_[s];
        ++ready_[static_cast<std::size_t>(a.bucket)];
        try_launch_bucket();
        continue;
      case Kind::kWaitDp:
        if (next_bucket_ < static_cast<int>(ready_.size()) || dp_pending_ > 0) {
          waiting_dp_[s] = true;
          return;
        }
        ++next_[s];
        continue;
      case Kind::kStepEnd:
        ++next_[s];
        if (++servers_done_ == static_cast<int>(server_comms_.size())) {
          step_total_ms_ += (sim_.now() - step_start_).us() / 1e3;
          if (++step_ < spec_.steps) {
            begin_step();
          } else {
            const double n = spec_.steps;
            result_.completed = true;
            result_.step_ms = step_total_ms_ / n;
            result_.tp_allreduce_ms = tp_total_ms_ / n / static_cast<double>(server_comms_.size());
            result_.dp_allreduce_ms = dp_total_ms_ / n;
            result_.exposed_comm_ms = std::max(0.0, result_.step_ms - result_.compute_ms);
            result_.overlapped_comm_ms = std::max(
                0.0, result_.tp_allreduce_ms + result_.dp_allreduce_ms - result_.exposed_comm_ms);
            result_.tokens_per_s =
                static_cast<double>(spec_.tokens_per_step) / (result_.step_ms * 1e-3);
          }
        }
        return;
    }
  }
}

void WorkloadDriver::try_launch_bucket() {
  const int buckets = static_cast<int>(ready_.size());
  if (dp_pending_ > 0 || next_bucket_ >= buckets) return;
  if (ready_[static_cast<std::size_t>(next_bucket_)] < static_cast<int>(server_comms_.size()))
    return;
  const std::uint64_t bytes = spec_.gradient_bytes / static_cast<std::uint64_t>(buckets);
  bucket_start_ = sim_.now();
  if (server_comms_.size() < 2 || bytes == 0) {
    // One server: no data parallelism across servers.
    ++next_bucket_;
    try_launch_bucket();
    for (std::size_t s = 0; s < waiting_dp_.size(); ++s)
      if (waiting_dp_[s] && next_bucket_ >= buckets) {
        waiting_dp_[s] = false;
        sim_.schedule_in(Time::zero(), advance_, s);
      }
    return;
  }
  dp_pending_ = static_cast<int>(dp_comms_.size());
  for (const std::uint32_t comm : dp_comms_) {
    engine_.launch(comm, {.op = CollOp::kAllReduce, .bytes = bytes}, sim_.now(), this);
    ++result_.collectives;
  }
}

void WorkloadDriver::on_collective_done(std::uint32_t id) {
  const auto it = tp_owner_.find(id);
  if (it != tp_owner_.end()) {
    const std::uint32_t s = it->second;
    tp_owner_.erase(it);
    const CollectiveResult& r = engine_.result(id);
    tp_total_ms_ += (r.finish() - r.start).us() / 1e3;
    if (trace_)
      result_.trace.push_back(
          {"TP AllReduce", static_cast<int>(s), 1, r.start, r.finish() - r.start});
    sim_.schedule_at(r.finish(), advance_, s);
    return;
  }
  if (--dp_pending_ > 0) return;
  dp_total_ms_ += (sim_.now() - bucket_start_).us() / 1e3;
  if (trace_)
    for (std::size_t s = 0; s < server_comms_.size(); ++s)
      result_.trace.push_back({fmt::format("DP AllReduce bucket {}", next_bucket_),
                               static_cast<int>(s), 2, bucket_start_, sim_.now() - bucket_start_});
  result_.dp_active += sim_.now() - bucket_start_;
  ++next_bucket_;
  try_launch_bucket();
  if (dp_pending_ == 0 && next_bucket_ >= static_cast<int>(ready_.size())) {
    for (std::size_t s = 0; s < waiting_dp_.size(); ++s)
      if (waiting_dp_[s]) {
        waiting_dp_[s] = false;
        sim_.schedule_in(Time::zero(), advance_, s);
      }
  }
}

}  // namespace fabricsim
