// What each NCCL protocol costs a thread block beyond the links: LL's GPU-wide ceiling
// (ll_gpu_busbw_gbs, NCCL's llMaxBws), asserted on one DGX A100 from the marginal time of a
// Ring/LL AllReduce; and where NCCL's hardware rule lets the tuner choose LL128.

#include <gtest/gtest.h>

#include <string>

#include "models/nccl/nccl.hpp"
#include "scenario/scenario.hpp"
#include "tests/support/collective_run.hpp"

using namespace fabricsim;

namespace {

// One DGX A100; with `ring_ll` NCCL_ALGO=Ring and NCCL_PROTO=LL.
Scenario one_dgx_a100(const std::string& fidelity, bool ring_ll = true) {
  return load_scenario_text(std::string(R"(
[server]
preset = "dgx-a100"
count = 1
[fabric]
kind = "star"
technology = "infiniband"
link_rate = "200Gbps"
)") + (ring_ll ? "[nccl]\nNCCL_ALGO = \"Ring\"\nNCCL_PROTO = \"LL\"\n" : ""),
                            "t.toml", {.overrides = {"fidelity=\"" + fidelity + "\""}});
}

}  // namespace

TEST(ProtocolCost, NcclsLlCeilingPerGpu) {
  // tuning.cc llMaxBws: one server by GPU, Ampere 87.7, Hopper 141, Blackwell 2 x 141 GB/s.
  EXPECT_DOUBLE_EQ(ll_gpu_busbw_gbs(80, 1), 87.7);
  EXPECT_DOUBLE_EQ(ll_gpu_busbw_gbs(90, 1), 141.0);
  EXPECT_DOUBLE_EQ(ll_gpu_busbw_gbs(100, 1), 282.0);
  EXPECT_LT(ll_gpu_busbw_gbs(80, 2), ll_gpu_busbw_gbs(80, 1));
}

TEST(ProtocolCost, RingLlOnOneDgxA100MovesItsBytesAtTheLlCeiling) {
  // A ring AllReduce sends 2 (N - 1) / N bytes per byte from every GPU, so at LL's ceiling C
  // (87.7 GB/s of data per GPU, all its LL blocks together) one more MiB costs
  //   1 MiB x 14 / 8 / C = 20.9 us,
  // whatever the channel count: NVLink (12 links x 25 GB/s, LL's flags doubling the wire
  // bytes) would carry it in 12 us, so the links do not bound it. The fixed costs (launch,
  // 14 steps) cancel in the difference; the pipeline's fill and the channels' last steps may
  // add a little, never take away.
  const double c_gbs = ll_gpu_busbw_gbs(80, 1);
  const double marginal_us = (1 << 20) * 14.0 / 8.0 / (c_gbs * 1e3);
  for (const char* fidelity : {"flow", "packet"}) {
    const Scenario s = one_dgx_a100(fidelity);
    const NcclTestsRow one = fixtures::nccl_tests_row(s, 1 << 20);
    const NcclTestsRow two = fixtures::nccl_tests_row(s, 2 << 20);
    ASSERT_EQ(one.proto, Proto::kLL) << fidelity;
    ASSERT_EQ(two.proto, Proto::kLL) << fidelity;
    EXPECT_EQ(one.channels, two.channels) << fidelity;
    const double dt = two.time_us[0] - one.time_us[0];
    EXPECT_GT(dt, 0.98 * marginal_us) << fidelity;
    EXPECT_LT(dt, 1.15 * marginal_us) << fidelity;
    EXPECT_LT(two.busbw[0], c_gbs) << fidelity;
  }
}

namespace {

Scenario pcie_servers(int count, const std::string& extra = "") {
  return load_scenario_text(R"(
fidelity = "flow"
[server]
preset = "pcie-8gpu"
count = )" + std::to_string(count) +
                                R"(
[fabric]
kind = "star"
link_rate = "100Gbps"
)" + extra,
                            "t.toml", {});
}

}  // namespace

TEST(ProtocolCost, Ll128OnlyWhereNcclsHardwareRuleAllowsIt) {
  // tuning.cc enables LL128 by default (protocol enable 2) only where a server's GPUs share
  // NVLink: on a PCIe-only server the tuner never picks it, at any size, unless NCCL_PROTO
  // names it. On a DGX A100 it is NCCL's pick at mid sizes (4 MiB on one server).
  for (int servers : {1, 2})
    for (std::uint64_t bytes : {64ull << 10, 1ull << 20, 4ull << 20, 16ull << 20, 64ull << 20}) {
      const NcclTestsRow row = fixtures::nccl_tests_row(pcie_servers(servers), bytes);
      EXPECT_NE(row.proto, Proto::kLL128) << servers << " servers, " << bytes << " B";
    }
  const NcclTestsRow named =
      fixtures::nccl_tests_row(pcie_servers(1, "[nccl]\nNCCL_PROTO = \"LL128\"\n"), 4ull << 20);
  EXPECT_EQ(named.proto, Proto::kLL128);
  const NcclTestsRow dgx = fixtures::nccl_tests_row(one_dgx_a100("flow", false), 4ull << 20);
  EXPECT_EQ(dgx.proto, Proto::kLL128);
}
