#include "solver/maxmin.hpp"

#include <algorithm>
#include <queue>
#include <tuple>

namespace fabricsim {

MaxMinSolver::Res MaxMinSolver::add_resource(double capacity) {
  res_.push_back({.capacity = capacity});
  return static_cast<Res>(res_.size() - 1);
}

void MaxMinSolver::set_capacity(Res r, double capacity) {
  res_[r].capacity = capacity;
  if (!res_[r].dirty) {
    res_[r].dirty = true;
    dirty_.push_back(r);
  }
}

MaxMinSolver::Var MaxMinSolver::add_variable(std::span<const Res> resources) {
  Var v;
  if (!free_vars_.empty()) {
    v = free_vars_.back();
    free_vars_.pop_back();
  } else {
    v = static_cast<Var>(var_.size());
    var_.emplace_back();
  }
  Variable& x = var_[v];
  x.resources.assign(resources.begin(), resources.end());
  x.slot.resize(resources.size());
  x.rate = 0;
  x.alive = true;
  for (std::uint32_t i = 0; i < x.resources.size(); ++i) {
    Resource& r = res_[x.resources[i]];
    x.slot[i] = static_cast<std::uint32_t>(r.users.size());
    r.users.emplace_back(v, i);
    if (!r.dirty) {
      r.dirty = true;
      dirty_.push_back(x.resources[i]);
    }
  }
  ++live_;
  return v;
}

void MaxMinSolver::remove_variable(Var v) {
  Variable& x = var_[v];
  for (std::uint32_t i = 0; i < x.resources.size(); ++i) {
    const Res rid = x.resources[i];
    Resource& r = res_[rid];
    const std::uint32_t pos = x.slot[i];
    const auto last = r.users.back();
    r.users[pos] = last;
    var_[last.first].slot[last.second] = pos;
    r.users.pop_back();
    if (!r.dirty) {
      r.dirty = true;
      dirty_.push_back(rid);
    }
  }
  x.alive = false;
  x.rate = 0;
  x.resources.clear();
  x.slot.clear();
  free_vars_.push_back(v);
  --live_;
}

double MaxMinSolver::load(Res r) const {
  double sum = 0;
  for (const auto& [v, i] : res_[r].users) sum += var_[v].rate;
  return sum;
}

std::size_t MaxMinSolver::solve(std::vector<Var>* changed) {
  if (dirty_.empty()) return 0;
  ++epoch_;
  comp_vars_.clear();
  comp_res_.clear();
  // The components of every marked resource: breadth-first over resource -> users -> their
  // resources.
  for (const Res r : dirty_) {
    res_[r].dirty = false;
    if (res_[r].mark == epoch_) continue;
    res_[r].mark = epoch_;
    comp_res_.push_back(r);
  }
  dirty_.clear();
  for (std::size_t i = 0; i < comp_res_.size(); ++i) {
    for (const auto& [v, slot] : res_[comp_res_[i]].users) {
      Variable& x = var_[v];
      if (x.mark == epoch_) continue;
      x.mark = epoch_;
      comp_vars_.push_back(v);
      for (const Res r : x.resources) {
        if (res_[r].mark == epoch_) continue;
        res_[r].mark = epoch_;
        comp_res_.push_back(r);
      }
    }
  }
  fill(changed);
  return comp_vars_.size();
}

void MaxMinSolver::fill(std::vector<Var>* changed) {
  if (remaining_.size() < res_.size()) {
    remaining_.resize(res_.size());
    unfixed_.resize(res_.size());
    version_.resize(res_.size());
  }
  if (fixed_.size() < var_.size()) fixed_.resize(var_.size());
  using Entry = std::tuple<double, Res, std::uint32_t>;  // (fair share, resource, version)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  for (const Res r : comp_res_) {
    remaining_[r] = res_[r].capacity;
    unfixed_[r] = static_cast<std::uint32_t>(res_[r].users.size());
    version_[r] = 0;
    if (unfixed_[r] > 0) heap.emplace(remaining_[r] / unfixed_[r], r, 0);
  }
  for (const Var v : comp_vars_) fixed_[v] = false;
  while (!heap.empty()) {
    const auto [share, r, version] = heap.top();
    heap.pop();
    if (version != version_[r] || unfixed_[r] == 0) continue;
    // The bottleneck: every variable still rising through r stops at r's fair share.
    const double level = std::max(0.0, share);
    for (std::size_t k = 0; k < res_[r].users.size(); ++k) {
      const Var v = res_[r].users[k].first;
      if (fixed_[v]) continue;
      fixed_[v] = true;
      Variable& x = var_[v];
      if (x.rate != level && changed != nullptr) changed->push_back(v);
      x.rate = level;
      for (const Res q : x.resources) {
        remaining_[q] -= level;
        --unfixed_[q];
        ++version_[q];
        if (unfixed_[q] > 0) heap.emplace(remaining_[q] / unfixed_[q], q, version_[q]);
      }
    }
  }
}

}  // namespace fabricsim
