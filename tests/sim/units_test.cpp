#include <gtest/gtest.h>

#include "sim/units.hpp"

using namespace fabricsim;
using namespace fabricsim::literals;

// Mixing units does not compile (the compile_fail.* tests also build such code and expect
// failure; these checks prove it inside the unit test binary itself).
template <class A, class B>
concept Addable = requires(A a, B b) {
  a + b;
};
template <class A, class B>
concept Multipliable = requires(A a, B b) {
  a* b;
};
static_assert(Addable<Time, Time>);
static_assert(!Addable<Time, Bytes>);
static_assert(!Addable<Bytes, Bandwidth>);
static_assert(!Addable<Time, Bandwidth>);
static_assert(!Multipliable<Bytes, Bandwidth>);
static_assert(!Multipliable<Time, Time>);
static_assert(!std::is_convertible_v<std::int64_t, Time>);
static_assert(!std::is_convertible_v<Bytes, Time>);

TEST(Units, LiteralsAreExactPicosecondsBytesAndBitsPerSecond) {
  EXPECT_EQ((1_us).ps(), 1'000'000);
  EXPECT_EQ((3_ms).ps(), 3'000'000'000);
  EXPECT_EQ((64_KiB).count(), 65536);
  EXPECT_EQ((4_MB).count(), 4'000'000);
  EXPECT_EQ((100_Gbps).bps(), 100'000'000'000);
  EXPECT_EQ((450_GBps).bps(), 3'600'000'000'000);
}

TEST(Units, SerializationTimeIsExactAndRoundsUp) {
  // 1500 B at 100 Gb/s: 12000 bits / 1e11 bit/s = 120 ns exactly.
  EXPECT_EQ(tx_time(1500_B, 100_Gbps), 120_ns);
  // 1 B at 450 GB/s (3.6e12 b/s): 8 / 3.6e12 s = 2.222... ps -> 3 ps (rounded up, not 2).
  EXPECT_EQ(tx_time(1_B, 450_GBps).ps(), 3);
  // 1 GiB at 450 GB/s: 8 * 2^30 * 1e12 / 3.6e12 = 2386092942.22 ps -> 2386092943 ps; a per-byte
  // integer rate (htsim's 2 ps/B) would give 2147483648 ps, 10% fast.
  EXPECT_EQ(tx_time(1_GiB, 450_GBps).ps(), 2'386'092'943);
  // 8 GB at 1 Mb/s: bits * 1e12 = 6.4e22 overflows 64 bits but not the 128-bit intermediate;
  // the result, 6.4e10 bits / 1e6 b/s = 64000 s = 6.4e16 ps, fits.
  EXPECT_EQ(tx_time(8_GB, 1_Mbps).ps(), 64'000'000'000'000'000);
}

TEST(Units, BytesInIsTheFloorInverseOfTxTime) {
  EXPECT_EQ(bytes_in(120_ns, 100_Gbps), 1500_B);
  EXPECT_EQ(bytes_in(119_ns, 100_Gbps).count(), 1487);  // 1487.5 -> floor
}

TEST(Units, ParsesDecimalQuantitiesExactly) {
  EXPECT_EQ(parse_time("1.2us"), 1200_ns);
  EXPECT_EQ(parse_time("500ns"), 500_ns);
  EXPECT_EQ(parse_time("0.000001s"), 1_us);
  EXPECT_EQ(parse_time("2e3ns"), 2_us);
  EXPECT_EQ(parse_time("1 ms"), 1_ms);
  EXPECT_EQ(parse_time("3\xC2\xB5s"), 3_us);
  EXPECT_EQ(parse_bytes("64KiB"), 64_KiB);
  EXPECT_EQ(parse_bytes("4MB"), 4_MB);
  EXPECT_EQ(parse_bytes("1.5KiB"), 1536_B);
  EXPECT_EQ(parse_bytes("8GiB").count(), 8LL << 30);
  EXPECT_EQ(parse_bandwidth("100Gbps"), 100_Gbps);
  EXPECT_EQ(parse_bandwidth("450GB/s"), 450_GBps);
  EXPECT_EQ(parse_bandwidth("2.5Gb/s").bps(), 2'500'000'000);
}

TEST(Units, RejectsMalformedQuantitiesWithAClearMessage) {
  const auto message = [](auto parse, const char* text) {
    try {
      parse(text);
    } catch (const UnitError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(
      message(parse_time, "5"),
      "expected a time such as \"1.2us\" (ps, ns, us, ms, s), got \"5\": the unit is missing");
  EXPECT_EQ(message(parse_time, "5 parsecs"),
            "expected a time such as \"1.2us\" (ps, ns, us, ms, s), got \"5 parsecs\": unknown "
            "unit \"parsecs\"");
  EXPECT_EQ(message(parse_time, "0.5ps"),
            "expected a time such as \"1.2us\" (ps, ns, us, ms, s), got \"0.5ps\": it is not a "
            "whole number of picoseconds");
  EXPECT_EQ(message(parse_time, "-1us"),
            "expected a time such as \"1.2us\" (ps, ns, us, ms, s), got \"-1us\": it must not be "
            "negative");
  EXPECT_NE(message(parse_bytes, "1.5B").find("not a whole number of bytes"), std::string::npos);
  EXPECT_NE(message(parse_bytes, "99999999999TiB").find("out of range"), std::string::npos);
  EXPECT_NE(message(parse_bandwidth, "Gbps").find("no number"), std::string::npos);
  EXPECT_NE(message(parse_bandwidth, "100GBps").find("unknown unit"), std::string::npos);
}

TEST(Units, RenderingRoundTripsThroughParsing) {
  EXPECT_EQ(to_string(1200_ns), "1.2us");
  EXPECT_EQ(to_string(64_KiB), "64KiB");
  EXPECT_EQ(to_string(4_MB), "4MB");
  EXPECT_EQ(to_string(100_Gbps), "100Gbps");
  EXPECT_EQ(to_string(Time::zero()), "0ps");
  for (Time::rep ps : {1LL, 999LL, 1001LL, 123456789LL, 1'000'000'000'007LL})
    EXPECT_EQ(parse_time(to_string(Time::from_ps(ps))).ps(), ps) << ps;
  for (Bytes::rep b : {1LL, 1000LL, 1024LL, 1536LL, 4'194'304LL, 1'234'567LL})
    EXPECT_EQ(parse_bytes(to_string(Bytes(b))).count(), b) << b;
  for (Bandwidth::rep r : {1LL, 25'000'000'000LL, 3'600'000'000'000LL, 123LL})
    EXPECT_EQ(parse_bandwidth(to_string(Bandwidth::from_bps(r))).bps(), r) << r;
}
