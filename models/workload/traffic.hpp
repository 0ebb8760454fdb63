#pragma once
// Synthetic traffic patterns: who sends how much to whom, and when.
//
//  incast:      hosts 1..N-1 each send to host 0.
//  permutation: host i sends to host (i + shift) mod N (a shift permutation; shift 1 default).
//  all-to-all:  host i sends to every other host, in order i+1, i+2, ... (mod N).
//
// Each sender starts its first message at a uniform random offset in [0, start_jitter] and
// each later one an exponential gap (mean `mean_gap`, 0 = back to back) after the previous
// start. Random draws come from the stream "traffic.host<i>", so a host's schedule depends on
// the seed and its index only.

#include <cstdint>
#include <vector>

#include <vector>
#include "net/message.hpp"
#include "sim/rng.hpp"

namespace fabricsim {

enum class TrafficPattern { kIncast, kPermutation, kAllToAll };

struct TrafficSpec {
  TrafficPattern pattern = TrafficPattern::kIncast;
  Bytes message_size{};
  std::uint32_t messages_per_destination = 1;
  std::uint32_t shift = 1;
  Time mean_gap = Time::zero();
  Time start_jitter = Time::zero();
};

// How many messages generate_messages makes, without making them (for size estimates).
std::uint64_t message_count(const TrafficSpec& spec, std::uint32_t hosts);

// Messages in the order (sender, then its sequence); ids are indices into the result.
std::vector<Message> generate_messages(const TrafficSpec& spec, std::uint32_t hosts,
                                       const RngStreams& rng);

}  // namespace fabricsim
