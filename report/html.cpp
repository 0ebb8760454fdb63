#include "report/html.hpp"

#include "report/results.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>

namespace fabricsim {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The page up to its heading: one stylesheet for every report.
std::string page_head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
         escape(title) +
         "</title>\n<style>body{font-family:sans-serif;margin:24px;max-width:1100px}"
         "table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;padding:"
         "3px 8px;text-align:right}th:first-child,td:first-child{text-align:left}svg.chart{"
         "display:block;margin:8px 0 "
         "24px}.delta{color:#666;font-size:90%}</style></head><body>\n<h1>" +
         escape(title) + "</h1>\n";
}

const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                          "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
};

// A line chart: x linear or log2, y linear from 0; one polyline per series, axis labels.
std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series, bool log_x) {
  const double w = 640, h = 300, left = 70, right = 160, top = 30, bottom = 45;
  double x0 = HUGE_VAL, x1 = -HUGE_VAL, y1 = 0;
  const auto fx = [&](double x) { return log_x ? std::log2(std::max(x, 1e-300)) : x; };
  for (const auto& s : series)
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, fx(x));
      x1 = std::max(x1, fx(x));
      y1 = std::max(y1, y);
    }
  if (!(x1 > x0)) x1 = x0 + 1;
  if (y1 <= 0) y1 = 1;
  const auto px = [&](double x) { return left + (fx(x) - x0) / (x1 - x0) * (w - left - right); };
  const auto py = [&](double y) { return h - bottom - y / y1 * (h - top - bottom); };
  std::string svg = fmt::format(
      R"(<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img" aria-label="{}">)"
      "\n",
      w, h, escape(title));
  svg += fmt::format(R"(<text x="{}" y="18" font-weight="bold">{}</text>)"
                     "\n",
                     left, escape(title));
  svg += fmt::format(
      R"(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#000"/><line x1="{0}" y1="{3}" x2="{0}" y2="{1}" stroke="#000"/>)"
      "\n",
      left, h - bottom, w - right, top);
  for (int i = 0; i <= 4; ++i) {
    const double y = y1 * i / 4;
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end" font-size="11">{:.3g}</text>)"
                       "\n",
                       left - 5, py(y) + 4, y);
  }
  for (int i = 0; i <= 4; ++i) {
    const double v = x0 + (x1 - x0) * i / 4;
    const double x = log_x ? std::exp2(v) : v;
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" font-size="11">{:.3g}</text>)"
                       "\n",
                       left + (v - x0) / (x1 - x0) * (w - left - right), h - bottom + 15, x);
  }
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" font-size="12">{}</text>)"
                     "\n",
                     (left + w - right) / 2, h - 8, escape(x_label));
  svg += fmt::format(
      R"~(<text x="14" y="{}" font-size="12" transform="rotate(-90 14 {})" text-anchor="middle">{}</text>)~"
      "\n",
      (top + h - bottom) / 2, (top + h - bottom) / 2, escape(y_label));
  for (std::size_t k = 0; k < series.size(); ++k) {
    std::string pts;
    for (const auto& [x, y] : series[k].points) pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    const char* c = kColours[k % 8];
    svg += fmt::format(
        R"(<polyline class="series" fill="none" stroke="{}" stroke-width="2" points="{}"/>)"
        "\n",
        c, pts);
    svg += fmt::format(R"(<text x="{}" y="{}" font-size="11" fill="{}">{}</text>)"
                       "\n",
                       w - right + 8, top + 14 * (k + 1), c, escape(series[k].name));
  }
  return svg + "</svg>\n";
}

// Horizontal stacked bars: one bar per label, segments (name, value).
std::string stacked_bars(
    const std::string& title, const std::string& unit,
    const std::vector<std::pair<std::string, std::vector<std::pair<std::string, double>>>>& bars) {
  const double w = 640, bar_h = 22, left = 230, top = 30;
  double total_max = 0;
  for (const auto& [label, segs] : bars) {
    double t = 0;
    for (const auto& [n, v] : segs) t += v;
    total_max = std::max(total_max, t);
  }
  if (total_max <= 0) total_max = 1;
  const double h = top + bars.size() * (bar_h + 8) + 30;
  std::string svg = fmt::format(
      R"(<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img" aria-label="{}">)"
      "\n",
      w, h, escape(title));
  svg += fmt::format(R"(<text x="10" y="18" font-weight="bold">{}</text>)"
                     "\n",
                     escape(title));
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double y = top + i * (bar_h + 8);
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end" font-size="11">{}</text>)"
                       "\n",
                       left - 6, y + 15, escape(bars[i].first));
    double x = left;
    for (std::size_t k = 0; k < bars[i].second.size(); ++k) {
      const auto& [name, v] = bars[i].second[k];
      const double bw = v / total_max * (w - left - 20);
      svg += fmt::format(
          R"(<rect class="bar" x="{:.1f}" y="{}" width="{:.1f}" height="{}" fill="{}"><title>{}: {:.3f} {}</title></rect>)"
          "\n",
          x, y, bw, bar_h, kColours[k % 8], escape(name), v, escape(unit));
      x += bw;
    }
  }
  const double ly = h - 12;
  if (!bars.empty())
    for (std::size_t k = 0; k < bars.front().second.size(); ++k)
      svg += fmt::format(R"(<text x="{}" y="{}" font-size="11" fill="{}">{}</text>)"
                         "\n",
                         left + k * 150, ly, kColours[k % 8], escape(bars.front().second[k].first));
  return svg + "</svg>\n";
}

// A number for people: whole numbers with thousands separators ("52,740", "10,465,600"),
// others with up to four significant digits, never in scientific notation ("0.8793", "147.2",
// "0.58").
std::string readable(double v) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    const std::string digits = fmt::format("{:.0f}", std::fabs(v));
    std::string out;
    if (v < 0) out.push_back('-');
    for (std::size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
      out.push_back(digits[i]);
    }
    return out;
  }
  const int magnitude = v == 0 ? 0 : static_cast<int>(std::floor(std::log10(std::fabs(v))));
  if (magnitude >= 3) return readable(std::round(v));
  std::string text = fmt::format("{:.{}f}", v, std::max(0, 3 - magnitude));
  if (text.find('.') != std::string::npos) {  // 0.5800 -> 0.58
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

double metric(const RunResult& r, const std::string& name, double fallback = -1) {
  for (const auto& m : r.metrics)
    if (m.name == name) return m.value;
  return fallback;
}

}  // namespace

std::string html_report(const std::vector<Scenario>& scenarios,
                        const std::vector<RunResult>& results) {
  std::string out = page_head("fabricsim report");
  for (const auto& s : scenarios)
    out += fmt::format("<p><b>{}</b>: {}</p>\n", escape(s.name), escape(s.description));

  // Summary table.
  const std::vector<std::string> names = metric_names(results);
  out += "<h2>Summary</h2>\n<table id=\"summary\"><tr><th>metric</th>";
  for (const auto& s : scenarios) out += fmt::format("<th>{}</th>", escape(s.name));
  out += "</tr>\n";
  for (const auto& n : names) {
    out += fmt::format("<tr><td>{}</td>", escape(n));
    for (std::size_t c = 0; c < results.size(); ++c) {
      const double v = metric(results[c], n, std::nan(""));
      std::string cell = std::isnan(v) ? "-" : readable(v);
      for (const auto& [key, value] : scenarios[c].expected)
        if (key == n) cell += fmt::format(" ({})", readable(value));
      // The change against the first scenario, the reference a comparison is read from.
      const double first = metric(results.front(), n, std::nan(""));
      if (c > 0 && !std::isnan(v) && std::isfinite(first) && first != 0 && v != first)
        cell += fmt::format(" <span class=\"delta\">{:+.1f} %</span>", (v / first - 1) * 100);
      out += "<td>" + cell + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</table>\n";
  for (const auto& s : scenarios)
    for (const auto& note : s.notes) out += fmt::format("<p>Note: {}</p>\n", escape(note));

  // Step-time breakdown.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, double>>>> bars;
  for (std::size_t c = 0; c < results.size(); ++c) {
    const double step = metric(results[c], "step_time_ms");
    if (step < 0) continue;
    const double compute = metric(results[c], "compute_ms", 0);
    bars.push_back(
        {scenarios[c].name,
         {{"compute", compute}, {"exposed communication", std::max(0.0, step - compute)}}});
  }
  if (!bars.empty()) {
    out += "<h2>Step time</h2>\n";
    out += stacked_bars("Step time breakdown (ms)", "ms", bars);
  }

  // busbw against message size, from busbw_<op>_<size> metrics.
  std::map<std::string, std::vector<Series>> by_op;
  for (std::size_t c = 0; c < results.size(); ++c) {
    std::map<std::string, Series> ops;
    for (const auto& m : results[c].metrics) {
      if (!m.name.starts_with("busbw_")) continue;
      const auto cut = m.name.rfind('_');
      const std::string op = m.name.substr(6, cut - 6);
      try {
        ops[op].points.emplace_back(
            static_cast<double>(parse_bytes(m.name.substr(cut + 1)).count()), m.value);
      } catch (const UnitError&) {
      }
    }
    for (auto& [op, s] : ops) {
      s.name = scenarios[c].name;
      std::sort(s.points.begin(), s.points.end());
      by_op[op].push_back(std::move(s));
    }
  }
  if (!by_op.empty()) out += "<h2>Bus bandwidth</h2>\n";
  for (const auto& [op, series] : by_op)
    out += line_chart(op + " busbw", "message size (B)", "busbw (GB/s)", series, true);

  // Time series (sampled gauges): one chart per gauge, every run on it.
  std::map<std::string, std::vector<Series>> gauges;
  for (std::size_t c = 0; c < results.size(); ++c) {
    const auto& r = results[c];
    for (std::size_t k = 0; k < r.series_names.size(); ++k) {
      Series s{scenarios[c].name, {}};
      for (std::size_t i = 0; i < r.series_times.size(); ++i)
        s.points.emplace_back(r.series_times[i].us(), r.series_values[k][i]);
      gauges[r.series_names[k]].push_back(std::move(s));
    }
  }
  if (!gauges.empty()) out += "<h2>Time series</h2>\n";
  for (const auto& [name, series] : gauges)
    out += line_chart(name, "simulated time (us)", name, series, false);

  // Bottlenecks.
  for (std::size_t c = 0; c < results.size(); ++c) {
    if (results[c].bottlenecks.empty()) continue;
    out += fmt::format(
        "<h2>Bottlenecks: {}</h2>\n<table "
        "class=\"bottlenecks\"><tr><th>layer</th><th>port</th><th>utilisation</th><th>layer "
        "mean</th><th>PFC paused (us)</th></tr>\n",
        escape(scenarios[c].name));
    for (const auto& l : results[c].bottlenecks)
      out += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{:.1f} %</td><td>{:.1f} %</td><td>{:.1f}</td></tr>\n",
          escape(l.layer), escape(l.port), l.utilization * 100, l.layer_mean * 100, l.paused_us);
    out += "</table>\n";
  }
  // PFC and ECN per layer (packet level).
  for (std::size_t c = 0; c < results.size(); ++c) {
    if (results[c].congestion.empty()) continue;
    out += fmt::format(
        "<h2>PFC and ECN by layer: {}</h2>\n<table class=\"congestion\"><tr><th>layer</th>"
        "<th>links</th><th>paused links</th><th>pause frames</th><th>paused (us)</th><th>most "
        "paused</th><th>ECN marks</th></tr>\n",
        escape(scenarios[c].name));
    for (const auto& t : results[c].congestion)
      out += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}</td><td>{:.2f} "
          "%</td><td>{}</td></tr>\n",
          escape(t.layer), readable(double(t.links)), readable(double(t.paused_links)),
          readable(double(t.pause_frames)), t.paused_us, t.max_paused_share * 100,
          readable(double(t.ecn_marked)));
    out += "</table>\n";
  }
  return out + "</body></html>\n";
}

}  // namespace fabricsim

namespace fabricsim {

std::string validation_html(const std::string& title, const std::vector<ValidationRow>& rows) {
  std::string out = page_head(title);
  std::vector<std::string> order;
  std::map<std::string, std::pair<Series, Series>> charts;
  for (const auto& r : rows) {
    if (!charts.contains(r.series())) order.push_back(r.series());
    auto& [measured, simulated] = charts[r.series()];
    measured.name = "measured";
    simulated.name = "simulated";
    const auto busbw = [&](double us) {
      return static_cast<double>(r.bytes) / (us * 1e3) * r.bus_factor;
    };
    measured.points.emplace_back(static_cast<double>(r.bytes), busbw(r.measured_us));
    simulated.points.emplace_back(static_cast<double>(r.bytes), busbw(r.simulated_us));
  }
  for (const auto& name : order) {
    auto& [m, s] = charts[name];
    std::sort(m.points.begin(), m.points.end());
    std::sort(s.points.begin(), s.points.end());
    out += line_chart(name, "size (B)", "busbw (GB/s)", {m, s}, true);
  }
  out +=
      "<table id=\"rows\"><tr><th>series</th><th>bytes</th><th>measured (us)</th>"
      "<th>simulated (us)</th><th>error (%)</th><th>role</th></tr>\n";
  for (const auto& r : rows)
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:+.2f}</td><td>{}</td></"
        "tr>\n",
        escape(r.series()), r.bytes, r.measured_us, r.simulated_us,
        (r.simulated_us / r.measured_us - 1) * 100, r.role);
  return out + "</table>\n</body></html>\n";
}

}  // namespace fabricsim
