#pragma once
// Reproducible random numbers. Each model component draws from its own named stream, derived
// from the scenario seed and the stream name, so adding a component or reordering draws in
// one component never changes another's numbers. Generator: xoshiro256** seeded through
// splitmix64. Distributions are written here (not <random>'s, whose algorithms differ between
// standard libraries) so a seed gives the same numbers with any compiler.

#include <cmath>
#include <cstdint>
#include <string_view>

namespace fabricsim {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& w : s_) w = splitmix64(seed);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n) without modulo bias (Lemire's multiply-shift with rejection).
  std::uint64_t uniform_below(std::uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }
  // Exponential with the given mean (inversion).
  double exponential(double mean) { return -mean * std::log1p(-uniform01()); }

  static std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

class RngStreams {
 public:
  explicit RngStreams(std::uint64_t seed) : seed_(seed) {}
  std::uint64_t seed() const { return seed_; }
  // The stream for `name` (FNV-1a of the name mixed with the seed).
  Rng stream(std::string_view name) const {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    std::uint64_t state = seed_ ^ h;
    return Rng(Rng::splitmix64(state));
  }

 private:
  std::uint64_t seed_;
};

}  // namespace fabricsim
