#include "fabric/fabric.hpp"

#include <fmt/format.h>
#include <algorithm>

namespace fabricsim {

std::vector<LinkLoad> bottleneck_summary(
    const Fabric& fabric, Time span,
    const std::vector<std::pair<std::string, std::uint64_t>>& counters, std::size_t per_layer,
    const std::map<std::string, std::uint64_t>* since) {
  std::vector<LinkLoad> all;
  if (span <= Time::zero()) return all;
  std::map<std::string, std::uint64_t, std::less<>> by_name(counters.begin(), counters.end());
  std::map<std::string, std::pair<double, std::size_t>, std::less<>> layer_sum;  // util, links
  fabric.for_each_link([&](const Fabric::Link& link) {
    double paused_ns = 0;
    for (int p = 0; p < 8 && !by_name.empty(); ++p) {
      const auto it = by_name.find(fmt::format("{}.rx_prio{}_pause_duration_ns", link.name, p));
      if (it != by_name.end()) paused_ns += static_cast<double>(it->second);
    }
    std::uint64_t carried = link.bytes;
    if (since != nullptr)
      if (const auto it = since->find(std::string(link.name)); it != since->end())
        carried -= it->second;
    const double util = static_cast<double>(carried) / (span.seconds() * link.bytes_per_s);
    auto& [sum, links] = layer_sum[std::string(link.layer)];
    sum += util;
    ++links;
    if (util > 0 || paused_ns > 0)
      all.push_back({std::string(link.layer), std::string(link.name), util, paused_ns / 1e3});
  });
  for (LinkLoad& l : all) {
    const auto& [sum, links] = layer_sum.find(l.layer)->second;
    l.layer_mean = sum / static_cast<double>(links);
  }
  return busiest_per_layer(std::move(all), per_layer);
}

std::vector<TierCongestion> congestion_by_tier(
    const Fabric& fabric, Time span,
    const std::vector<std::pair<std::string, std::uint64_t>>& counters) {
  std::vector<TierCongestion> tiers;
  // Only the counters this summary reads, by name (a fabric of thousands of ports has a
  // hundred thousand counters; the lookups below go to this much smaller map).
  std::map<std::string, std::uint64_t, std::less<>> by_name;
  for (const auto& [name, value] : counters) {
    const std::string_view n = name;
    if (n.ends_with(".ecn_marked_packets") || n.ends_with("_pause") ||
        n.ends_with("_pause_duration_ns"))
      by_name.emplace(name, value);
  }
  if (by_name.empty()) return tiers;
  const auto find = [&](const std::string& name) -> const std::uint64_t* {
    const auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : &it->second;
  };
  fabric.for_each_link([&](const Fabric::Link& link) {
    bool counted = false;
    std::uint64_t frames = 0, paused_ns = 0, marked = 0;
    for (int p = 0; p < 8; ++p) {
      if (const auto* v = find(fmt::format("{}.rx_prio{}_pause", link.name, p))) {
        frames += *v;
        counted = true;
      }
      if (const auto* v = find(fmt::format("{}.rx_prio{}_pause_duration_ns", link.name, p)))
        paused_ns += *v;
    }
    if (const auto* v = find(fmt::format("{}.ecn_marked_packets", link.name))) {
      marked = *v;
      counted = true;
    }
    if (!counted) return;
    auto it = std::find_if(tiers.begin(), tiers.end(),
                           [&](const TierCongestion& t) { return t.layer == link.layer; });
    if (it == tiers.end()) it = tiers.insert(tiers.end(), {.layer = std::string(link.layer)});
    ++it->links;
    it->paused_links += paused_ns > 0 || frames > 0 ? 1 : 0;
    it->pause_frames += frames;
    it->paused_us += static_cast<double>(paused_ns) / 1e3;
    if (span > Time::zero())
      it->max_paused_share =
          std::max(it->max_paused_share, static_cast<double>(paused_ns) * 1e-9 / span.seconds());
    it->ecn_marked += marked;
  });
  return tiers;
}

CongestionTotals congestion_totals(const std::vector<TierCongestion>& tiers) {
  CongestionTotals t;
  for (const TierCongestion& tier : tiers) {
    t.pause_frames += tier.pause_frames;
    t.ecn_marked += tier.ecn_marked;
    t.paused_links += tier.paused_links;
    t.paused_tiers += tier.paused_links > 0 ? 1 : 0;
    t.max_paused_share = std::max(t.max_paused_share, tier.max_paused_share);
  }
  return t;
}

std::vector<Metric> congestion_metrics(const std::vector<TierCongestion>& tiers) {
  const CongestionTotals t = congestion_totals(tiers);
  return {{"pfc_paused_links", static_cast<double>(t.paused_links), ""},
          {"pfc_paused_tiers", static_cast<double>(t.paused_tiers), ""},
          {"pfc_max_paused_share", t.max_paused_share, ""}};
}

bool is_pfc_pause_sent(std::string_view n) {
  return n.find(".tx_prio") != std::string_view::npos && n.ends_with("_pause");
}

std::uint64_t pfc_pause_frames(const std::vector<std::pair<std::string, std::uint64_t>>& counters) {
  std::uint64_t sum = 0;
  for (const auto& [name, value] : counters)
    if (is_pfc_pause_sent(name)) sum += value;
  return sum;
}

double peak_switch_port_utilization(const Fabric& fabric, Time span) {
  double peak = 0;
  if (span <= Time::zero()) return peak;
  fabric.for_each_link([&](const Fabric::Link& link) {
    if (link.switch_port)
      peak = std::max(peak, static_cast<double>(link.bytes) / (span.seconds() * link.bytes_per_s));
  });
  return peak;
}

std::map<std::string, std::uint64_t> link_bytes_now(const Fabric& fabric) {
  std::map<std::string, std::uint64_t> out;
  fabric.for_each_link([&](const Fabric::Link& link) { out[std::string(link.name)] = link.bytes; });
  return out;
}

std::vector<LinkLoad> busiest_per_layer(std::vector<LinkLoad> all, std::size_t per_layer) {
  // Per layer the busiest few; layers ordered by their busiest link.
  std::map<std::string, std::vector<LinkLoad>> layers;
  for (auto& l : all) layers[l.layer].push_back(l);
  std::vector<std::vector<LinkLoad>> ordered;
  for (auto& [name, links] : layers) {
    std::stable_sort(links.begin(), links.end(), [](const LinkLoad& a, const LinkLoad& b) {
      return a.utilization > b.utilization;
    });
    links.resize(std::min(links.size(), per_layer));
    ordered.push_back(std::move(links));
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.front().utilization > b.front().utilization;
  });
  std::vector<LinkLoad> out;
  for (auto& links : ordered) out.insert(out.end(), links.begin(), links.end());
  return out;
}

}  // namespace fabricsim
