#include "loader/scenario.hpp"

#include <fmt/format.h>

namespace fabricsim {

namespace {

// The Ethernet + IPv4 + UDP + IB BTH + ICRC + FCS headers of a RoCEv2 packet (14+20+8+12+4+4 =
// 62 B) plus preamble/SFD (8 B) and the minimum inter-frame gap (12 B): 82 B on the wire per
// packet. This is the default per-packet overhead; other transports set `header` explicitly.
constexpr Bytes kRoceV2WireOverhead{82};

TrafficPattern to_pattern(const std::string& s) {
  if (s == "permutation") return TrafficPattern::kPermutation;
  if (s == "all-to-all") return TrafficPattern::kAllToAll;
  return TrafficPattern::kIncast;
}

}  // namespace

Scenario read_scenario(const ConfigDocument& doc, std::string default_name) {
  Scenario s;
  std::vector<std::string> errors;
  ConfigReader root(&doc.root(), "", doc.file().string(), errors, s.resolved);

  s.name = root.string("name", default_name);
  s.description = root.string("description", "");
  s.seed = static_cast<std::uint64_t>(
      root.integer("seed", 1, 0, std::numeric_limits<std::int64_t>::max()));

  {
    ConfigReader sim = root.table("simulation");
    s.simulation.stop_time = sim.time("stop_time", Time::from_ps(1'000'000'000'000), false);
    s.simulation.sample_interval = sim.time("sample_interval", Time::zero(), true);
    s.simulation.timeseries = sim.string_list("timeseries", {});
    if (!s.simulation.timeseries.empty() && s.simulation.sample_interval == Time::zero())
      sim.error("sample_interval",
                "must be set (e.g. \"1us\") when simulation.timeseries selects gauges to record");
    sim.finish();
  }
  {
    ConfigReader fab = root.table("fabric");
    fab.choice("kind", "star", {"star"});
    s.fabric.hosts = static_cast<std::uint32_t>(fab.integer("hosts", std::nullopt, 2, 1 << 20));
    s.fabric.link_rate = fab.bandwidth("link_rate", std::nullopt);
    s.fabric.cable_latency = fab.time("cable_latency", Time::from_ps(5'000), false);
    s.fabric.switch_latency = fab.time("switch_latency", Time::from_ps(300'000), true);
    s.fabric.port_buffer = fab.bytes("port_buffer", std::nullopt, true);
    s.fabric.format.mtu = fab.bytes("mtu", Bytes(4096), false);
    s.fabric.format.header = fab.bytes("header", kRoceV2WireOverhead, true);
    if (s.fabric.format.mtu > Bytes(1 << 20))
      fab.error("mtu",
                fmt::format("must be at most 1MiB, got \"{}\"", to_string(s.fabric.format.mtu)));
    fab.finish();
  }
  {
    ConfigReader tr = root.table("traffic");
    s.traffic.pattern =
        to_pattern(tr.choice("pattern", "incast", {"incast", "permutation", "all-to-all"}));
    s.traffic.message_size = tr.bytes("message_size", std::nullopt, false);
    s.traffic.messages_per_destination =
        static_cast<std::uint32_t>(tr.integer("messages", 1, 1, 1'000'000));
    s.traffic.mean_gap = tr.time("mean_gap", Time::zero(), true);
    s.traffic.start_jitter = tr.time("start_jitter", Time::zero(), true);
    tr.finish();
  }
  root.finish();
  if (!errors.empty()) throw ConfigError(std::move(errors));
  return s;
}

Scenario load_scenario(const std::filesystem::path& file, const LoadOptions& options) {
  ConfigDocument doc = ConfigDocument::load_file(file);
  for (const auto& o : options.overrides) doc.apply_override(o);
  return read_scenario(doc, file.stem().string());
}

Scenario load_scenario_text(std::string_view text, std::string source_name,
                            const LoadOptions& options) {
  ConfigDocument doc = ConfigDocument::load_text(text, source_name);
  for (const auto& o : options.overrides) doc.apply_override(o);
  return read_scenario(doc, std::filesystem::path(source_name).stem().string());
}

std::vector<std::string> known_scenario_keys(const Scenario& scenario) {
  std::vector<std::string> keys;
  const auto walk = [&](auto&& self, const toml::table& t, const std::string& prefix) -> void {
    for (const auto& [k, v] : t) {
      const std::string path =
          prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
      if (const auto* sub = v.as_table()) {
        self(self, *sub, path);
      } else {
        keys.push_back(path);
      }
    }
  };
  walk(walk, scenario.resolved, "");
  return keys;
}

}  // namespace fabricsim
