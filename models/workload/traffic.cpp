#include "models/workload/traffic.hpp"

#include <fmt/format.h>

namespace fabricsim {

std::uint64_t message_count(const TrafficSpec& spec, std::uint32_t hosts) {
  std::uint64_t destinations = 0;  // (sender, receiver) pairs
  switch (spec.pattern) {
    case TrafficPattern::kIncast:
      destinations = hosts > 0 ? hosts - 1 : 0;
      break;
    case TrafficPattern::kPermutation:
      destinations = hosts > 1 && spec.shift % hosts != 0 ? hosts : 0;
      break;
    case TrafficPattern::kAllToAll:
      destinations = static_cast<std::uint64_t>(hosts) * (hosts > 0 ? hosts - 1 : 0);
      break;
  }
  return destinations * spec.messages_per_destination;
}

std::vector<Message> generate_messages(const TrafficSpec& spec, std::uint32_t hosts,
                                       const RngStreams& rng) {
  std::vector<Message> out;
  out.reserve(message_count(spec, hosts));
  for (std::uint32_t src = 0; src < hosts; ++src) {
    std::vector<std::uint32_t> destinations;
    switch (spec.pattern) {
      case TrafficPattern::kIncast:
        if (src != 0) destinations.push_back(0);
        break;
      case TrafficPattern::kPermutation:
        if (hosts > 1 && spec.shift % hosts != 0)
          destinations.push_back((src + spec.shift) % hosts);
        break;
      case TrafficPattern::kAllToAll:
        for (std::uint32_t k = 1; k < hosts; ++k) destinations.push_back((src + k) % hosts);
        break;
    }
    if (destinations.empty()) continue;
    Rng r = rng.stream(fmt::format("traffic.host{}", src));
    Time t = Time::from_ps(static_cast<Time::rep>(
        r.uniform_below(static_cast<std::uint64_t>(spec.start_jitter.ps()) + 1)));
    bool first = true;
    for (std::uint32_t k = 0; k < spec.messages_per_destination; ++k) {
      for (const std::uint32_t dst : destinations) {
        if (!first && spec.mean_gap > Time::zero())
          t += Time::from_ps(
              static_cast<Time::rep>(r.exponential(static_cast<double>(spec.mean_gap.ps()))));
        first = false;
        out.push_back(Message{.src = src, .dst = dst, .size = spec.message_size, .start = t});
      }
    }
  }
  return out;
}

}  // namespace fabricsim
