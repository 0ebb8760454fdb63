// The simulated nccl-tests curve has no jump NCCL's own model does not have: sweeping every
// size from 1 KiB to 8 GiB (x2) on one server of each server preset, the growth of busbw from
// one size to the next, busbw(2S) / busbw(S), stays within kTolerance of the growth of NCCL's
// own estimate for the choice it made at each size (the tuner's time, tuning.cc), across every
// switch of algorithm, protocol or channel count and every internal threshold of the engine
// (slices against streams at flow level). The curves the issue that asked for this test
// quoted jumped 1.9x at 16 -> 32 MiB where NCCL's estimate grows 1.1x.

#include <gtest/gtest.h>

#include <string>

#include "experiments/nccl_tests.hpp"
#include "experiments/run.hpp"
#include "scenario/scenario.hpp"

using namespace fabricsim;

namespace {

// Measured on the presets when this test was written (docs/collectives.md, "Curve
// smoothness"): the largest departures are 1.17 on pcie-8gpu at 2 -> 4 MiB (LL -> Simple,
// where NCCL's LL estimate on PCIe is far below the PCIe links' time) and 0.87 / 1.12 on
// dgx-h100's NVLS sizes.
constexpr double kTolerance = 0.20;

NcclTestsResult sweep(const std::string& preset) {
  const Scenario s = load_scenario_text(R"(
fidelity = "flow"
[server]
preset = ")" + preset + R"("
count = 1
[fabric]
kind = "star"
technology = "infiniband"
link_rate = "400Gbps"
)",
                                        "smooth.toml");
  const BuiltCluster c(s);
  NcclTestsArgs a;
  a.min_bytes = 1024;
  a.max_bytes = std::uint64_t{8} << 30;
  a.step_factor = 2;
  return run_nccl_tests(s, c, a);
}

}  // namespace

class CurveSmoothness : public ::testing::TestWithParam<std::string> {};

TEST_P(CurveSmoothness, NoJumpLargerThanNcclsOwnModelPredicts) {
  const NcclTestsResult r = sweep(GetParam());
  ASSERT_EQ(r.rows.size(), 24u);
  double worst = 1;
  for (std::size_t i = 1; i < r.rows.size(); ++i) {
    const NcclTestsRow &a = r.rows[i - 1], &b = r.rows[i];
    ASSERT_GT(a.tuner_us, 0);
    ASSERT_GT(b.tuner_us, 0);
    // busbw = bytes x factor / time: the factor cancels in a ratio of one operation's rows.
    const double simulated = (static_cast<double>(b.bytes) / b.time_us[0]) /
                             (static_cast<double>(a.bytes) / a.time_us[0]);
    const double nccl =
        (static_cast<double>(b.bytes) / b.tuner_us) / (static_cast<double>(a.bytes) / a.tuner_us);
    const double departure = simulated / nccl;
    worst = std::max({worst, departure, 1 / departure});
    EXPECT_LT(departure, 1 + kTolerance)
        << GetParam() << ": " << a.bytes << " -> " << b.bytes << " B, busbw grows x" << simulated
        << ", NCCL's estimate x" << nccl;
    EXPECT_GT(departure, 1 / (1 + kTolerance))
        << GetParam() << ": " << a.bytes << " -> " << b.bytes << " B, busbw grows x" << simulated
        << ", NCCL's estimate x" << nccl;
  }
  RecordProperty("worst_departure", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(Presets, CurveSmoothness,
                         ::testing::Values("dgx-a100", "dgx-h100", "dgx-b200", "pcie-8gpu"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });
