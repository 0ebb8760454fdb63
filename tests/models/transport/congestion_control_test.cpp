// Congestion-control algorithms driven through their seam (models/transport/
// congestion_control.hpp) by a scripted host: every expected rate is derived in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "models/transport/dcqcn_paper.hpp"
#include "models/transport/dctcp.hpp"
#include "models/transport/nic.hpp"
#include "scenario/scenario.hpp"

using namespace fabricsim;
using namespace fabricsim::literals;

namespace {

constexpr double kLine = 100e9;
constexpr double kG = 1.0 / 256;

// Stands in for the NIC: a clock, the timers the algorithm asked for, the rate it set.
struct ScriptedHost final : CcHost {
  struct Timer {
    std::uint64_t qp;
    std::uint32_t tag;
    Time at;
  };
  Time now{};
  std::vector<Timer> timers;
  double rate = kLine;
  int kicks = 0;
  Time cc_now() const override { return now; }
  void schedule_cc_timer(std::uint64_t qp, std::uint32_t tag, Time at) override {
    timers.push_back({qp, tag, at});
  }
  void set_cc_rate(std::uint64_t, double bps) override { rate = bps; }
  void cc_kick() override { ++kicks; }
  // The latest timer of `kind` (the live one: older ones carry a stale generation).
  std::optional<Timer> latest(std::uint32_t kind) const {
    for (auto it = timers.rbegin(); it != timers.rend(); ++it)
      if ((it->tag >> 22) == kind) return *it;
    return std::nullopt;
  }
  // Advances the clock to the latest timer of `kind` and runs it.
  void fire(CongestionControl& cc, std::uint32_t slot, std::uint32_t kind) {
    const auto t = latest(kind);
    ASSERT_TRUE(t.has_value());
    now = t->at;
    cc.on_timer(slot, t->tag);
  }
};

// Paper variant timer kinds (dcqcn_paper.cpp): 0 = alpha, 1 = rate increase.
constexpr std::uint32_t kAlphaTimer = 0, kRateTimer = 1;

RdmaConfig paper_config(int threshold) {
  RdmaConfig cfg;
  cfg.dcqcn.rpg_time_reset = 55_us;
  cfg.dcqcn.dce_tcp_rtt = 55_us;
  cfg.dcqcn.rpg_threshold = threshold;
  cfg.dcqcn.rpg_ai_rate = Bandwidth::from_bps(40'000'000);
  cfg.dcqcn.rpg_hai_rate = Bandwidth::from_bps(200'000'000);
  cfg.dcqcn.rpg_byte_reset = Bytes(150'000);
  return cfg;
}

// One QP of the paper variant (QP 0) that has had one CNP at t = 0: RT = 100, RC = 50 Gb/s.
struct PaperQpAfterOneCnp {
  ScriptedHost host;
  std::unique_ptr<CongestionControl> cc;
  std::uint32_t slot;
  explicit PaperQpAfterOneCnp(int threshold)
      : cc(kDcqcnPaper.make(paper_config(threshold), host, kLine)), slot(cc->open(0)) {
    cc->on_cnp(slot);
  }
};

}  // namespace

TEST(DcqcnPaper, EveryCnpCutsTheRateAtOnceWhereTheFirmwareWaitsForItsMonitorPeriod) {
  // Paper: on a CNP, RT = RC, alpha = (1-g) 1 + g = 1, RC = RC (1 - 1/2). Two CNPs at t = 0:
  // 100 -> 50 -> 25 Gb/s. The firmware variant only records them: RT = RC = 100 Gb/s and the
  // cut waits for rate_reduce_monitor_period.
  const RdmaConfig cfg = paper_config(5);
  ScriptedHost paper_host, firmware_host;
  auto paper = kDcqcnPaper.make(cfg, paper_host, kLine);
  auto firmware = kDcqcnFirmware.make(cfg, firmware_host, kLine);
  const auto p = paper->open(7), f = firmware->open(7);
  paper->on_cnp(p);
  EXPECT_DOUBLE_EQ(paper_host.rate, 50e9);
  paper->on_cnp(p);
  EXPECT_DOUBLE_EQ(paper_host.rate, 25e9);
  firmware->on_cnp(f);
  firmware->on_cnp(f);
  EXPECT_DOUBLE_EQ(firmware_host.rate, kLine);
  EXPECT_TRUE(paper->needs().bytes_sent);
  EXPECT_FALSE(firmware->needs().bytes_sent);
  // The timers are the QP's own: they name QP 7.
  ASSERT_FALSE(paper_host.timers.empty());
  for (const auto& t : paper_host.timers) EXPECT_EQ(t.qp, 7u);
}

TEST(DcqcnPaper, TheTimerAndTheByteCounterEachRecoverHalfTheGap) {
  // After one CNP: RT = 100, RC = 50. Fast recovery (both stages < F = 5): RC = (RT + RC)/2.
  // The byte counter fires once rpg_byte_reset = 150000 B have left: with 4178 B packets, 35
  // are 146230 B (no event) and the 36th makes 150408 B: RC = 75. Then the timer, 55 us after
  // the CNP: RC = 87.5.
  PaperQpAfterOneCnp qp(5);
  auto& [host, cc, s] = qp;
  for (int i = 0; i < 35; ++i) cc->on_sent(s, 4178);
  EXPECT_DOUBLE_EQ(host.rate, 50e9);
  cc->on_sent(s, 4178);
  EXPECT_DOUBLE_EQ(host.rate, 75e9);
  host.fire(*cc, s, kRateTimer);
  EXPECT_EQ(host.now, 55_us);
  EXPECT_DOUBLE_EQ(host.rate, 87.5e9);
  EXPECT_EQ(host.latest(kRateTimer)->at, 110_us);  // not hyper: the next one T later
}

TEST(DcqcnPaper, HyperIncreaseGrowsWithTheSmallerStageAndHalvesTheTimer) {
  // F = 1. After one CNP: RT = 100, RC = 50 Gb/s (TC = BC = 0).
  //   timer (TC 1, BC 0): additive, RT = 100.04, RC = (100.04 + 50)/2 = 75.02;
  //   bytes (TC 1, BC 1): hyper, i = 1: RT = 100.24, RC = (100.24 + 75.02)/2 = 87.63;
  //   timer (TC 2, BC 1): hyper, i = 1: RT = 100.44, RC = (100.44 + 87.63)/2 = 94.035;
  //   bytes (TC 2, BC 2): hyper, i = 2: RT = 100.84, RC = (100.84 + 94.035)/2 = 97.4375.
  // A constant hyper step (the firmware's) would give 97.3375 at the end. In hyper increase the
  // timer runs every T/2 = 27.5 us.
  PaperQpAfterOneCnp qp(1);
  auto& [host, cc, s] = qp;
  host.fire(*cc, s, kRateTimer);
  EXPECT_NEAR(host.rate, 75.02e9, 1);
  cc->on_sent(s, 150'000);
  EXPECT_NEAR(host.rate, 87.63e9, 1);
  host.fire(*cc, s, kRateTimer);
  EXPECT_NEAR(host.rate, 94.035e9, 1);
  EXPECT_EQ(host.latest(kRateTimer)->at, host.now + 27'500_ns);
  cc->on_sent(s, 75'000);  // in hyper increase the byte budget is B/2
  EXPECT_NEAR(host.rate, 97.4375e9, 1);
}

TEST(DcqcnPaper, AlphaDecaysEveryPeriodWithoutACnpAndRisesWithTheNext) {
  // After the first CNP alpha = 1, RC = 50. Three alpha periods without a CNP: alpha =
  // (1-g)^3; the rate does not move. The next CNP: alpha = (1-g)^4 + g, RT = 50,
  // RC = 50 (1 - alpha/2).
  PaperQpAfterOneCnp qp(5);
  auto& [host, cc, s] = qp;
  for (int i = 0; i < 3; ++i) host.fire(*cc, s, kAlphaTimer);
  EXPECT_DOUBLE_EQ(host.rate, 50e9);
  cc->on_cnp(s);
  const double alpha = std::pow(1 - kG, 4) + kG;
  EXPECT_NEAR(host.rate, 50e9 * (1 - alpha / 2), 1);
}

TEST(DcqcnPaper, BackAtLineRateItStopsItsTimersUntilTheNextCnp) {
  // Timer events alone bring RC back to line rate (RT grows past it by R_AI per step); then
  // the QP is idle: its last timer is stale and bytes sent change nothing.
  PaperQpAfterOneCnp qp(5);
  auto& [host, cc, s] = qp;
  int steps = 0;
  while (host.rate < kLine && steps < 10'000) {
    host.fire(*cc, s, kRateTimer);
    ++steps;
  }
  ASSERT_DOUBLE_EQ(host.rate, kLine);
  const auto scheduled = host.timers.size();
  host.fire(*cc, s, kRateTimer);  // the last one, now stale
  cc->on_sent(s, 1 << 30);
  EXPECT_EQ(host.timers.size(), scheduled);
  EXPECT_DOUBLE_EQ(host.rate, kLine);
  cc->on_cnp(s);  // and it reacts again
  EXPECT_LT(host.rate, kLine);
}

TEST(DcqcnPaper, AnIdleQpCatchesUpOnTheIncreasesItMissed) {
  // One CNP (RC 50), then the QP runs out of data for 3 T = 165 us: on resume it applies the
  // three fast-recovery steps its timer would have made: 75, 87.5, 93.75 Gb/s.
  PaperQpAfterOneCnp qp(5);
  auto& [host, cc, s] = qp;
  cc->on_stop(s);
  host.now = 165_us;
  cc->on_resume(s);
  EXPECT_DOUBLE_EQ(host.rate, 93.75e9);
}

TEST(CongestionControlChoice, TheLoaderPicksOneAlgorithmAndRefusesTheOtherVariantsKeys) {
  const std::string base = "[fabric]\nhosts = 2\nlink_rate = \"100Gbps\"\n";
  const auto congestion = [&](std::vector<std::string> set) {
    return load_scenario_text(base, "cc.toml", {.overrides = std::move(set)})
        .network.nic.congestion;
  };
  EXPECT_EQ(congestion({}), &kNoCongestionControl);
  EXPECT_EQ(congestion({"nic.dcqcn.enabled=true"}), &kDcqcnFirmware);
  EXPECT_EQ(congestion({"nic.dcqcn.enabled=true", "nic.dcqcn.variant=\"paper\""}), &kDcqcnPaper);
  EXPECT_EQ(congestion({"nic.transport=\"tcp\""}), &kNewReno);
  EXPECT_EQ(congestion({"nic.transport=\"tcp\"", "nic.tcp.congestion=\"dctcp\""}), &kDctcp);
  const auto refused = [&](std::vector<std::string> set, const std::string& key) {
    try {
      congestion(std::move(set));
      ADD_FAILURE() << key << " was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("does not apply"), std::string::npos) << e.what();
    }
  };
  refused({"nic.dcqcn.variant=\"paper\"", "nic.dcqcn.rate_reduce_monitor_period=\"8us\""},
          "nic.dcqcn.rate_reduce_monitor_period");
  refused({"nic.dcqcn.rpg_byte_reset=\"1MB\""}, "nic.dcqcn.rpg_byte_reset");
  // DCQCN is RoCE's: asking for it on TCP is an error, not silently TCP's NewReno.
  try {
    congestion({"nic.transport=\"tcp\"", "nic.dcqcn.enabled=true"});
    ADD_FAILURE() << "DCQCN on TCP was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("nic.dcqcn.enabled"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nic.tcp.congestion"), std::string::npos) << e.what();
  }
}

// The reliability seam (reliability.hpp): the transport's own timers and start rules.
TEST(Reliability, EachTransportKeepsItsOwnTimersAndStartRules) {
  RdmaConfig rc;
  rc.ib_timeout = 14;
  const Reliability& r = reliability_of(rc);
  // IBA 12.7.34: 4.096 us x 2^14 = 67.108864 ms, the same after retries; 0 is infinite.
  EXPECT_EQ(r.base_timeout(rc), Time::from_ps(67'108'864'000));
  QueuePair qp;
  qp.retries = 3;
  EXPECT_EQ(r.timeout(rc, qp), r.base_timeout(rc));
  EXPECT_TRUE(r.uses_send_engine());
  EXPECT_EQ(r.start_delay(rc), Time::zero());
  rc.ib_timeout = 0;
  EXPECT_EQ(r.base_timeout(rc), Time::max());

  RdmaConfig tcp;
  tcp.transport = Transport::kTcp;
  const Reliability& t = reliability_of(tcp);
  EXPECT_NE(&t, &r);
  EXPECT_FALSE(t.uses_send_engine());
  EXPECT_EQ(t.start_delay(tcp), tcp.tcp.host_latency);
  // RTO from min_rto, doubled per retry without progress, at most 64 x.
  qp.retries = 0;
  EXPECT_EQ(t.timeout(tcp, qp), tcp.tcp.min_rto);
  qp.retries = 2;
  EXPECT_EQ(t.timeout(tcp, qp), tcp.tcp.min_rto * 4);
  qp.retries = 9;
  EXPECT_EQ(t.timeout(tcp, qp), tcp.tcp.min_rto * 64);
}
