#include "report/calibration_report.hpp"

#include <fmt/format.h>
#include <map>

namespace fabricsim {

std::string direct_estimates_text(const std::vector<DirectEstimate>& direct) {
  std::string out;
  for (const auto& d : direct)
    out += fmt::format("{:<28} {:>12} (direct: {})\n", d.key, d.toml_value(), d.evidence);
  return out;
}

std::string calibration_table(const Scenario& s, const Calibration& cal, std::size_t rows) {
  std::string out = fmt::format("{:<28} {:>12} {:>12} {:>10}  {:<17} {}\n", "parameter", "before",
                                "fitted", "+- (1s)", "physical range", "");
  for (std::size_t i = 0; i < cal.params.size(); ++i) {
    const auto& p = cal.params[i];
    const std::string range = fmt::format("{:.4g} to {:.4g}", p.low, p.high);
    const double v = cal.fit.values[i];
    if (!cal.fit.identifiable[i]) {
      out += fmt::format("{:<28} {:>12.4f} {:>12} {:>10}  {:<17} not identifiable\n", p.key,
                         p.get(s), "-", "-", range);
      continue;
    }
    std::string note = p.at_bound(v);
    if (note.empty() && !p.outside_range(v).empty()) note = "OUTSIDE its physical range";
    out += fmt::format("{:<28} {:>12.4f} {:>12.4f} {:>9.2f}%  {:<17} {}\n", p.key, p.get(s), v,
                       cal.fit.rel_std_error[i] * 100, range, note);
  }
  std::size_t outliers = 0;
  for (double w : cal.fit.weights) outliers += w < 0.5;  // beyond 2.7 robust sigmas
  out += fmt::format(
      "fit: {} rows, rms relative error {:.2f} %, {} rows down-weighted as outliers, {} "
      "iterations, {} simulations{}\n",
      rows, cal.fit.rms * 100, outliers, cal.fit.iterations, cal.fit.evaluations,
      cal.fit.converged ? "" : " (not converged)");
  const auto problems = cal.problems();
  if (problems.empty()) {
    out += "verdict: good (every fitted value inside its physical range, none at a bound)\n";
  } else {
    out +=
        "verdict: NOT GOOD: the model lacks a shape these measurements have, and the fit "
        "bends parameters to make up for it; look at the model before using these values:\n";
    for (const auto& why : problems) out += "  - " + why + "\n";
  }
  return out;
}

std::string calibration_overlay(const Calibration& c, const std::filesystem::path& scenario,
                                const std::filesystem::path& out, std::size_t rows,
                                const std::string& from) {
  const auto base = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
  std::string text = fmt::format(
      "# Written by `fabricsim calibrate` from {} ({} measured rows; fit: rms relative error "
      "{:.2f} %, {} iterations).\n# Uncertainties are 1 sigma, relative. Values apply at flow "
      "level (fidelity = \"flow\"); launch latencies and HBM at both levels.\n",
      from, rows, c.fit.rms * 100, c.fit.iterations);
  const auto problems = c.problems();
  text += problems.empty() ? "# Verdict: good (every fitted value inside its physical range).\n"
                           : "# Verdict: NOT GOOD:\n";
  for (const auto& why : problems) text += "#   - " + why + "\n";
  text += fmt::format("extends = \"{}\"\nfidelity = \"flow\"\n",
                      std::filesystem::relative(std::filesystem::absolute(scenario),
                                                std::filesystem::absolute(base))
                          .generic_string());
  // Lines per table ("flow", "nccl", "nccl.launch_latency": a parent table before its child).
  std::map<std::string, std::string> tables;
  const auto add = [&](const std::string& key, const std::string& line) {
    const auto dot = key.rfind('.');
    tables[key.substr(0, dot)] += key.substr(dot + 1) + " = " + line + "\n";
  };
  // A direct estimate the fit refined (it started there) is written once, as fitted.
  const auto refined = [&](const std::string& key) {
    for (std::size_t i = 0; i < c.params.size(); ++i)
      if (c.params[i].key == key && c.fit.identifiable[i]) return true;
    return false;
  };
  for (const auto& d : c.direct)
    if (!refined(d.key)) add(d.key, d.toml_value() + "  # direct: " + d.evidence);
  std::string fixed;
  for (std::size_t i = 0; i < c.params.size(); ++i) {
    const auto& p = c.params[i];
    const double v = c.fit.values[i];
    if (!c.fit.identifiable[i]) {
      fixed += " " + p.key;
      continue;
    }
    std::string note = p.at_bound(v);
    if (note.empty())
      note = fmt::format("+- {:.2f} %{}", c.fit.rel_std_error[i] * 100,
                         p.outside_range(v).empty() ? "" : ", OUTSIDE its physical range");
    add(p.key, p.time_us ? fmt::format("\"{:.4f}us\"  # {}", v, note)
                         : fmt::format("{:.5f}  # {}", v, note));
  }
  if (!fixed.empty())
    text +=
        fmt::format("# Not identifiable from these measurements (left as they were):{}\n", fixed);
  for (const auto& [table, lines] : tables) text += fmt::format("\n[{}]\n{}", table, lines);
  return text;
}

std::string validation_table(const Validation& v) {
  std::string out = fmt::format("{:<20} {:>6} {:>12} {:>12} {:>12} {:>8}  {}\n", "binary", "ranks",
                                "bytes", "measured_us", "simulated_us", "error_%", "role");
  for (const auto& r : v.rows)
    out += fmt::format("{:<20} {:>6} {:>12} {:>12.3f} {:>12.3f} {:>+8.2f}  {}\n", r.binary, r.ranks,
                       r.bytes, r.measured_us, r.simulated_us, r.error_percent(), r.role);
  out += fmt::format("{}: {} rows, mean absolute error {:.2f} %, worst {:.2f} %\n",
                     v.held_rows == 0 ? "all rows" : "held-out rows", v.judged.n, v.judged.mape,
                     v.judged.worst);
  return out;
}

std::string diagnosis_text(const Diagnosis& d) {
  if (d.findings.empty())
    return "no evidence to diagnose: give nccl-tests, perftest, nvidia-smi, ethtool or "
           "fabricsim-bench outputs, or a fabricsim results.json\n";
  std::string out;
  for (const auto& f : d.findings)
    out += fmt::format("[{}] {}: {}\n",
                       !f.tag.empty() ? f.tag
                       : f.bad        ? "suspect"
                                      : "ok",
                       f.layer, f.evidence);
  if (const Finding* verdict = d.verdict())
    out += fmt::format("bottleneck: {}\nnext: {}\n", verdict->layer, verdict->next);
  else
    out += "bottleneck: none found in these measurements\n";
  return out;
}

}  // namespace fabricsim
