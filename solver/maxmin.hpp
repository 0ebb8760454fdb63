#pragma once
// Max-min fair rates by progressive filling (water-filling), knowing nothing of networks: a
// set of resources with capacities and variables that each use a list of resources (a
// resource listed twice is used twice: a route crossing a link twice). Every variable's rate
// is raised at the same pace until a resource saturates; its variables are then fixed at
// that level and the rest continue. The result is the max-min fair allocation: no rate can
// grow without lowering a rate that is not larger.
//
// Incremental: adding or removing a variable, or changing a capacity, marks its resources;
// solve() recomputes only the connected components (variables linked through shared
// resources) that contain a marked resource, and reports the variables whose rate changed.
// Progressive filling on a component uses a heap of resource fair shares with lazy deletion:
// O((V d + R) log R) for V variables of d resources each on R resources.

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace fabricsim {

class MaxMinSolver {
 public:
  using Var = std::uint32_t;
  using Res = std::uint32_t;

  Res add_resource(double capacity);
  void set_capacity(Res r, double capacity);
  double capacity(Res r) const { return res_[r].capacity; }
  // The variable's resources (duplicates mean double use). Its rate is 0 until solve().
  Var add_variable(std::span<const Res> resources);
  void remove_variable(Var v);
  // Recomputes the touched components; appends the variables whose rate changed to `changed`
  // (when not null). Returns how many variables were re-solved.
  std::size_t solve(std::vector<Var>* changed = nullptr);
  double rate(Var v) const { return var_[v].rate; }
  const std::vector<Res>& resources(Var v) const { return var_[v].resources; }
  bool alive(Var v) const { return v < var_.size() && var_[v].alive; }
  std::size_t variables() const { return live_; }
  // Total rate through a resource (for utilisation).
  double load(Res r) const;

 private:
  struct Variable {
    std::vector<Res> resources;
    std::vector<std::uint32_t> slot;  // position of this variable in each resource's list
    double rate = 0;
    bool alive = false;
    std::uint32_t mark = 0;
  };
  struct Resource {
    double capacity = 0;
    std::vector<std::pair<Var, std::uint32_t>> users{};  // (variable, index in its resources)
    bool dirty = false;
    std::uint32_t mark = 0;
  };
  std::vector<Variable> var_;
  std::vector<Resource> res_;
  std::vector<Var> free_vars_;
  std::vector<Res> dirty_;
  std::size_t live_ = 0;
  std::uint32_t epoch_ = 0;
  // scratch
  std::vector<Var> comp_vars_;
  std::vector<Res> comp_res_;
  std::vector<double> remaining_;
  std::vector<std::uint32_t> unfixed_, version_;
  std::vector<bool> fixed_;
  void fill(std::vector<Var>* changed);
};

}  // namespace fabricsim
