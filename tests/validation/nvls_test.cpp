// NVLink SHARP (NVLS) AllReduce inside one server: the in-switch bound, the traffic each GPU's
// NVLink carries, and the published figures of validation/reference/nvls-single-server.toml.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "experiments/nccl_tests.hpp"
#include "experiments/run.hpp"
#include "fabric/fabric.hpp"
#include "scenario/scenario.hpp"
#include "tests/support/collective_run.hpp"
#include "tests/support/published.hpp"

using namespace fabricsim;

namespace {

std::string dgx_h100(const std::string& extra = "") {
  return fixtures::one_dgx_h100(extra);
}

}  // namespace

TEST(Nvls, AllReduceOnOneDgxH100ApproachesTheInSwitchBound) {
  // Per loop of n chunks every GPU sends n + 1 chunks towards the NVSwitches (one to each
  // head's ld_reduce, its own store) and receives n + 1 (its reduction, every head's store):
  // per byte of data (1 + 1/n) each way. Multimem traffic moves at R = links x nvlsEfficiency
  // x NCCL's per-link figure = 18 x 0.85 x 20.6 = 315.2 GB/s each way, so
  //   algbw <= R / (1 + 1/n),  busbw = algbw x 2 (n - 1) / n <= 2 (n - 1) / (n + 1) x R
  // = 14/9 x 315.2 = 490.3 GB/s on 8 GPUs, against 2 (n - 1) / n = 1.75 bytes per byte a ring
  // sends, which caps it at the NVLink payload rate. At 1 GiB the fill is a few per cent.
  const double bound = 14.0 / 9.0 * 18 * 0.85 * 20.6;
  for (const char* fidelity : {"flow", "packet"}) {
    const Scenario s = load_scenario_text(
        dgx_h100(), "t.toml", {.overrides = {fmt::format("fidelity=\"{}\"", fidelity)}});
    const NcclTestsRow row = fixtures::nccl_tests_row(s, 1ull << 30);
    EXPECT_EQ(row.algo, Algo::kNvls) << fidelity;
    EXPECT_EQ(row.proto, Proto::kSimple) << fidelity;
    EXPECT_EQ(row.channels, 16) << fidelity;  // NVLS_NCHANNELS_SM90
    EXPECT_LT(row.busbw[0], bound) << fidelity;
    EXPECT_GT(row.busbw[0], 0.95 * bound) << fidelity;
  }
  // NCCL_NVLS_ENABLE=0: the ring, whose busbw stays below the NVLink payload rate (18 x 25 GB/s
  // x 256/272 = 423.5 GB/s).
  const Scenario off = load_scenario_text(dgx_h100("[nccl]\nNCCL_NVLS_ENABLE = 0\n"), "t.toml",
                                          {.overrides = {"fidelity=\"flow\""}});
  const NcclTestsRow ring = fixtures::nccl_tests_row(off, 1ull << 30);
  EXPECT_EQ(ring.algo, Algo::kRing);
  EXPECT_LT(ring.busbw[0], 423.5);
  // A100 has no NVLS (nvlsEfficiency 0): the tuner never picks it there.
  const Scenario a100 = load_scenario_text(
      dgx_h100(), "t.toml", {.overrides = {"server.preset=\"dgx-a100\"", "fidelity=\"flow\""}});
  EXPECT_EQ(fixtures::nccl_tests_row(a100, 1ull << 30).algo, Algo::kRing);
}

TEST(Nvls, EachGpuSendsAndReceivesOnePlusOneOverNBytesPerByteOverItsNvLink) {
  // The mechanism, not just the time: with S bytes of data per GPU, each GPU's NVLink bundle
  // carries S (1 + 1/n) out and in (the payload; flow level counts it without NVLink framing),
  // where a ring's would carry 2 (n - 1) / n x S.
  const std::uint64_t bytes = 256ull << 20;
  for (const char* algo : {"NVLS", "Ring"}) {
    const Scenario s =
        load_scenario_text(dgx_h100(fmt::format("[nccl]\nNCCL_ALGO = \"{}\"\n", algo)), "t.toml",
                           {.overrides = {"fidelity=\"flow\""}});
    const BuiltCluster c(s);
    const auto run = fixtures::run_collective(s, c, {.op = CollOp::kAllReduce, .bytes = bytes});
    ASSERT_TRUE(run.result.done);
    const double per_byte = std::string(algo) == "NVLS" ? 1 + 1.0 / 8 : 2.0 * 7 / 8;
    int bundles = 0;
    run.fabric->for_each_link([&](const Fabric::Link& l) {
      if (l.layer != "NVLink") return;
      ++bundles;
      EXPECT_NEAR(static_cast<double>(l.bytes), per_byte * bytes, 0.01 * bytes)
          << algo << " " << l.name;
    });
    EXPECT_EQ(bundles, 16) << algo;  // 8 GPUs, out and in
  }
}

TEST(Nvls, PublishedSingleServerFiguresAreReproducedWithinTenPerCent) {
  // validation/reference/nvls-single-server.toml: figures with their sources; the default
  // presets (with the overrides each point states) must come within 10 %.
  fixtures::expect_published_points("nvls-single-server.toml", Algo::kNvls, 0.10);
}

TEST(Nvls, NamingNvlsWhereItDoesNotApplySaysSoAndRunsRing) {
  // NVLS runs inside one server here: NCCL_ALGO=NVLS on two servers enables nothing the model
  // runs (NCCL would fail the call); the row says so and runs Ring, where one server runs NVLS.
  const std::string nvls = "[nccl]\nNCCL_ALGO = \"NVLS\"\n";
  const Scenario one =
      load_scenario_text(dgx_h100(nvls), "t.toml", {.overrides = {"fidelity=\"flow\""}});
  const NcclTestsRow r1 = fixtures::nccl_tests_row(one, 64 << 20);
  EXPECT_EQ(r1.algo, Algo::kNvls);
  EXPECT_FALSE(r1.tuner_fallback);
  const Scenario two = load_scenario_text(dgx_h100(nvls), "t.toml",
                                          {.overrides = {"fidelity=\"flow\"", "server.count=2"}});
  const NcclTestsRow r2 = fixtures::nccl_tests_row(two, 64 << 20);
  EXPECT_EQ(r2.algo, Algo::kRing);
  EXPECT_TRUE(r2.tuner_fallback);
}

TEST(Nvls, WithoutTheServersInsideModelledThereIsNoNvls) {
  // server.host_side = false: every transfer goes NIC to NIC over the network, none crosses an
  // NVSwitch, so the layout offers no NVLS and the tuner runs the ring (it crashed the flow
  // level and ran "NVLS" over the NICs at packet level).
  for (const char* fidelity : {"flow", "packet"}) {
    const Scenario s = load_scenario_text(
        dgx_h100(), "t.toml",
        {.overrides = {fmt::format("fidelity=\"{}\"", fidelity), "server.host_side=false"}});
    EXPECT_EQ(fixtures::nccl_tests_row(s, 16 << 20).algo, Algo::kRing) << fidelity;
  }
}
