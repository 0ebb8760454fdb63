#pragma once
// Strong unit types of the engine: Time (integer picoseconds), Bytes and Bandwidth (bits/s).
//
// Invariants:
//  * Time is an int64 count of picoseconds (range about +-106 days). There is no global
//    resolution: every Time in the program has the same meaning.
//  * Serialization time is exact: tx_time(b, r) = ceil(b * 8 * 1e12 / r) picoseconds computed
//    in 128-bit arithmetic, so no rounding accumulates per byte and nothing overflows for any
//    64-bit size. The one rounding rule is "round up to the next picosecond": a transmission
//    is never reported as finished before its last bit has left.
//  * Types do not mix: Time + Bytes, Bytes * Bandwidth, passing Bytes where Time is expected
//    do not compile (tests/sim/units_test.cpp and tests/compile_fail/ pin this).

#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fabricsim {

class Time {
 public:
  using rep = std::int64_t;
  constexpr Time() = default;
  static constexpr Time from_ps(rep ps) { return Time(ps); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<rep>::max()); }
  constexpr rep ps() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double us() const { return static_cast<double>(ps_) * 1e-6; }

  friend constexpr auto operator<=>(Time, Time) = default;
  friend constexpr Time operator+(Time a, Time b) { return Time(a.ps_ + b.ps_); }
  friend constexpr Time operator-(Time a, Time b) { return Time(a.ps_ - b.ps_); }
  constexpr Time& operator+=(Time b) {
    ps_ += b.ps_;
    return *this;
  }
  constexpr Time& operator-=(Time b) {
    ps_ -= b.ps_;
    return *this;
  }
  friend constexpr Time operator*(Time a, rep k) { return Time(a.ps_ * k); }
  friend constexpr Time operator*(rep k, Time a) { return Time(a.ps_ * k); }
  friend constexpr Time operator/(Time a, rep k) { return Time(a.ps_ / k); }
  // Ratio of two durations (dimensionless).
  friend constexpr double operator/(Time a, Time b) {
    return static_cast<double>(a.ps_) / static_cast<double>(b.ps_);
  }

 private:
  constexpr explicit Time(rep ps) : ps_(ps) {}
  rep ps_ = 0;
};

class Bytes {
 public:
  using rep = std::int64_t;
  constexpr Bytes() = default;
  constexpr explicit Bytes(rep n) : n_(n) {}
  constexpr rep count() const { return n_; }
  constexpr rep bits() const { return n_ * 8; }

  friend constexpr auto operator<=>(Bytes, Bytes) = default;
  friend constexpr Bytes operator+(Bytes a, Bytes b) { return Bytes(a.n_ + b.n_); }
  friend constexpr Bytes operator-(Bytes a, Bytes b) { return Bytes(a.n_ - b.n_); }
  constexpr Bytes& operator+=(Bytes b) {
    n_ += b.n_;
    return *this;
  }
  constexpr Bytes& operator-=(Bytes b) {
    n_ -= b.n_;
    return *this;
  }
  friend constexpr Bytes operator*(Bytes a, rep k) { return Bytes(a.n_ * k); }
  friend constexpr Bytes operator*(rep k, Bytes a) { return Bytes(a.n_ * k); }
  friend constexpr Bytes operator/(Bytes a, rep k) { return Bytes(a.n_ / k); }
  friend constexpr double operator/(Bytes a, Bytes b) {
    return static_cast<double>(a.n_) / static_cast<double>(b.n_);
  }

 private:
  rep n_ = 0;
};

class Bandwidth {
 public:
  using rep = std::int64_t;
  constexpr Bandwidth() = default;
  static constexpr Bandwidth from_bps(rep bps) { return Bandwidth(bps); }
  constexpr rep bps() const { return bps_; }
  constexpr double gbps() const { return static_cast<double>(bps_) * 1e-9; }
  // Gigabytes (1e9 B) per second, the unit nccl-tests reports.
  constexpr double gigabytes_per_s() const { return static_cast<double>(bps_) / 8e9; }

  friend constexpr auto operator<=>(Bandwidth, Bandwidth) = default;
  friend constexpr Bandwidth operator+(Bandwidth a, Bandwidth b) {
    return Bandwidth(a.bps_ + b.bps_);
  }
  friend constexpr Bandwidth operator-(Bandwidth a, Bandwidth b) {
    return Bandwidth(a.bps_ - b.bps_);
  }
  friend constexpr Bandwidth operator*(Bandwidth a, rep k) { return Bandwidth(a.bps_ * k); }
  friend constexpr Bandwidth operator/(Bandwidth a, rep k) { return Bandwidth(a.bps_ / k); }
  friend constexpr double operator/(Bandwidth a, Bandwidth b) {
    return static_cast<double>(a.bps_) / static_cast<double>(b.bps_);
  }

 private:
  constexpr explicit Bandwidth(rep bps) : bps_(bps) {}
  rep bps_ = 0;
};

namespace detail {
constexpr __int128 kPsPerSecond = 1'000'000'000'000;
}

// Exact serialization time of `size` at `rate`: ceil(bits * 1e12 / bps) picoseconds.
// Precondition: rate > 0 (checked where rates are configured, never per packet).
constexpr Time tx_time(Bytes size, Bandwidth rate) {
  const __int128 num = static_cast<__int128>(size.count()) * 8 * detail::kPsPerSecond;
  const __int128 den = rate.bps();
  return Time::from_ps(static_cast<Time::rep>((num + den - 1) / den));
}

// Whole bytes that `rate` carries in `duration`: floor(t * bps / (8 * 1e12)).
constexpr Bytes bytes_in(Time duration, Bandwidth rate) {
  const __int128 num = static_cast<__int128>(duration.ps()) * rate.bps();
  return Bytes(static_cast<Bytes::rep>(num / (8 * detail::kPsPerSecond)));
}

// Average rate of `size` delivered in `duration` (for reports; not used in model maths).
constexpr double rate_gbps(Bytes size, Time duration) {
  return duration.ps() > 0 ? static_cast<double>(size.bits()) / duration.seconds() * 1e-9 : 0.0;
}

namespace literals {
constexpr Time operator""_ps(unsigned long long v) {
  return Time::from_ps(static_cast<Time::rep>(v));
}
constexpr Time operator""_ns(unsigned long long v) {
  return Time::from_ps(static_cast<Time::rep>(v) * 1'000);
}
constexpr Time operator""_us(unsigned long long v) {
  return Time::from_ps(static_cast<Time::rep>(v) * 1'000'000);
}
constexpr Time operator""_ms(unsigned long long v) {
  return Time::from_ps(static_cast<Time::rep>(v) * 1'000'000'000);
}
constexpr Time operator""_s(unsigned long long v) {
  return Time::from_ps(static_cast<Time::rep>(v) * 1'000'000'000'000);
}
constexpr Bytes operator""_B(unsigned long long v) {
  return Bytes(static_cast<Bytes::rep>(v));
}
constexpr Bytes operator""_KB(unsigned long long v) {
  return Bytes(static_cast<Bytes::rep>(v) * 1'000);
}
constexpr Bytes operator""_MB(unsigned long long v) {
  return Bytes(static_cast<Bytes::rep>(v) * 1'000'000);
}
constexpr Bytes operator""_GB(unsigned long long v) {
  return Bytes(static_cast<Bytes::rep>(v) * 1'000'000'000);
}
constexpr Bytes operator""_KiB(unsigned long long v) {
  return Bytes(static_cast<Bytes::rep>(v) << 10);
}
constexpr Bytes operator""_MiB(unsigned long long v) {
  return Bytes(static_cast<Bytes::rep>(v) << 20);
}
constexpr Bytes operator""_GiB(unsigned long long v) {
  return Bytes(static_cast<Bytes::rep>(v) << 30);
}
constexpr Bandwidth operator""_bps(unsigned long long v) {
  return Bandwidth::from_bps(static_cast<Bandwidth::rep>(v));
}
constexpr Bandwidth operator""_Mbps(unsigned long long v) {
  return Bandwidth::from_bps(static_cast<Bandwidth::rep>(v) * 1'000'000);
}
constexpr Bandwidth operator""_Gbps(unsigned long long v) {
  return Bandwidth::from_bps(static_cast<Bandwidth::rep>(v) * 1'000'000'000);
}
constexpr Bandwidth operator""_GBps(unsigned long long v) {
  return Bandwidth::from_bps(static_cast<Bandwidth::rep>(v) * 8'000'000'000);
}
}  // namespace literals

// Parsing of quantities written with their unit, as in scenario files.
// Numbers are decimal (digits, optional fraction, optional exponent) and converted exactly:
// "1.2us" is 1'200'000 ps; a value that is not a whole number of the base unit
// ("0.5ps", "1.5B") or out of the 64-bit range is an error, never rounded silently.
//   Time:      ps, ns, us (or µs), ms, s
//   Bytes:     B; KB, MB, GB, TB (powers of 1000); KiB, MiB, GiB, TiB (powers of 1024)
//   Bandwidth: bps, Kbps, Mbps, Gbps, Tbps (also Gb/s spellings); B/s, KB/s, MB/s, GB/s, TB/s
class UnitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Time parse_time(std::string_view text);
Bytes parse_bytes(std::string_view text);
Bandwidth parse_bandwidth(std::string_view text);

// Shortest exact rendering with the largest unit that keeps it readable ("1.2us", "64KiB",
// "100Gbps"). parse_x(to_string(v)) == v for every value.
std::string to_string(Time t);
std::string to_string(Bytes b);
std::string to_string(Bandwidth r);

}  // namespace fabricsim
