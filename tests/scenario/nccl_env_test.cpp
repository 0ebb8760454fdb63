// NCCL's environment as users set it: --env / --env-from-process, NCCL_ALGO and NCCL_PROTO in
// NCCL's list syntax, and a warning for every variable the model does not read.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

#include "models/nccl/nccl.hpp"
#include "scenario/nccl_env.hpp"
#include "scenario/scenario.hpp"
#include "tests/support/cli_run.hpp"

using namespace fabricsim;
using namespace fabricsim::tests;

namespace {

int algo_on(const EnableTable& t, CollOp op, Algo a) {
  return t.at(op, static_cast<int>(a));
}
int proto_on(const EnableTable& t, CollOp op, Proto p) {
  return t.at(op, static_cast<int>(p));
}

}  // namespace

TEST(NcclList, ParsesAsNcclDoes) {
  // Default: every algorithm on; LL128 left to NCCL's hardware rule (2).
  EXPECT_EQ(proto_on(default_proto_enable(), CollOp::kAllReduce, Proto::kLL128), 2);
  const EnableTable two = parse_algo_list("Ring,tree");
  for (CollOp op : {CollOp::kAllReduce, CollOp::kBroadcast, CollOp::kAllGather}) {
    EXPECT_EQ(algo_on(two, op, Algo::kRing), 1);
    EXPECT_EQ(algo_on(two, op, Algo::kTree), 1);
    EXPECT_EQ(algo_on(two, op, Algo::kNvls), 0);
  }
  // "^" is everything but the list, and sets the rest to 1 (LL128 forced on, as NCCL does).
  const EnableTable no_ll = parse_proto_list("^LL");
  EXPECT_EQ(proto_on(no_ll, CollOp::kAllReduce, Proto::kLL), 0);
  EXPECT_EQ(proto_on(no_ll, CollOp::kAllReduce, Proto::kLL128), 1);
  EXPECT_EQ(proto_on(no_ll, CollOp::kAllReduce, Proto::kSimple), 1);
  // Per-function entries replace that function's row only.
  const EnableTable per = parse_algo_list("ring;allreduce:tree,ring");
  EXPECT_EQ(algo_on(per, CollOp::kAllReduce, Algo::kTree), 1);
  EXPECT_EQ(algo_on(per, CollOp::kReduce, Algo::kTree), 0);
  EXPECT_EQ(algo_on(per, CollOp::kReduce, Algo::kRing), 1);
  const EnableTable only_ar = parse_proto_list("AllReduce:^LL128");
  EXPECT_EQ(proto_on(only_ar, CollOp::kAllReduce, Proto::kLL128), 0);
  EXPECT_EQ(proto_on(only_ar, CollOp::kAllGather, Proto::kLL128), 2);  // untouched: default
  // Point-to-point operations are not governed by NCCL_ALGO / NCCL_PROTO.
  EXPECT_EQ(algo_on(parse_algo_list("Tree"), CollOp::kSendRecv, Algo::kRing), 1);
  // NCCL's complaints.
  EXPECT_THROW(parse_proto_list("LL64"), std::invalid_argument);
  EXPECT_THROW(parse_algo_list("ring;tree"), std::invalid_argument);  // 2nd entry needs a prefix
  EXPECT_THROW(parse_algo_list("allgathr:ring"), std::invalid_argument);
}

TEST(NcclList, TheTunerChoosesOnlyAmongEnabledPairs) {
  // 2 servers x 8 GPUs, large AllReduce: every enabled pair is a candidate, the rest are not.
  const TunerInput in{.op = CollOp::kAllReduce,
                      .bytes = 1ull << 30,
                      .nranks = 16,
                      .nnodes = 2,
                      .channels = 8,
                      .sm_version = 90,
                      .bw_intra_gbs = 40,
                      .bw_inter_gbs = 25};
  NcclConfig cfg;
  for (const char* algos : {"Ring", "Tree"}) {
    cfg.algos = parse_algo_list(algos);
    EXPECT_EQ(to_string(tune(in, cfg).algo), algos);
  }
  cfg.algos = default_algo_enable();
  for (const char* protos : {"LL", "LL128", "Simple"}) {
    cfg.protos = parse_proto_list(protos);
    EXPECT_EQ(to_string(tune(in, cfg).proto), protos);
  }
  // LL128 off by the hardware rule stays off under the default, and naming it forces it on.
  cfg.ll128_enabled = false;
  cfg.protos = parse_proto_list("^Simple");
  EXPECT_EQ(tune(in, cfg).proto, Proto::kLL128);  // LL loses at 1 GiB
  cfg.protos = default_proto_enable();
  EXPECT_NE(tune(in, cfg).proto, Proto::kLL128);
  // Nothing the model runs (NVLS only): Ring, Simple.
  cfg.algos = parse_algo_list("NVLS");
  const TunerChoice fallback = tune(in, cfg);
  EXPECT_EQ(fallback.algo, Algo::kRing);
  EXPECT_EQ(fallback.proto, Proto::kSimple);
}

TEST(NcclEnv, ModelledVariablesBecomeOverridesAndTheRestAreWarnedAbout) {
  const NcclEnvironment env = nccl_environment({{"NCCL_ALGO", "Ring,Tree"},
                                                {"NCCL_BUFFSIZE", "8388608"},
                                                {"NCCL_ALOG", "Ring"},
                                                {"NCCL_CGA_CLUSTER_SIZE", "4"},
                                                {"NCCL_DEBUG", "INFO"},
                                                {"CUDA_VISIBLE_DEVICES", "0"}});
  ASSERT_EQ(env.overrides.size(), 2u);
  EXPECT_EQ(env.overrides[0], "nccl.NCCL_ALGO=Ring,Tree");
  EXPECT_EQ(env.overrides[1], "nccl.NCCL_BUFFSIZE=8388608");
  ASSERT_EQ(env.warnings.size(), 3u);
  EXPECT_NE(env.warnings[0].find("not a variable NCCL reads (did you mean NCCL_ALGO?)"),
            std::string::npos)
      << env.warnings[0];
  EXPECT_NE(env.warnings[1].find("NCCL_CGA_CLUSTER_SIZE=4: NCCL reads it, but fabricsim does not "
                                 "model it"),
            std::string::npos)
      << env.warnings[1];
  EXPECT_NE(env.warnings[2].find("nothing simulated depends on it"), std::string::npos);
  // The overrides load as the [nccl] keys of the same names.
  const Scenario s = load_scenario_text("[fabric]\nhosts = 4\nlink_rate = \"100Gbps\"\n", "e.toml",
                                        {.overrides = env.overrides});
  EXPECT_EQ(s.nccl.buffsize, Bytes(8 << 20));
  EXPECT_EQ(algo_on(s.nccl.algos, CollOp::kAllReduce, Algo::kNvls), 0);
  // Every name the model reads is one NCCL reads.
  for (const char* name : {"NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_PXN_DISABLE",
                           "NCCL_NET_GDR_LEVEL", "NCCL_IB_TIMEOUT", "NCCL_TOPO_FILE"})
    EXPECT_TRUE(std::binary_search(nccl_variable_names().begin(), nccl_variable_names().end(),
                                   std::string_view(name)))
        << name;
}

TEST(NcclEnv, NcclTestsTakesTheEnvironmentAsARealRunDoes) {
  const std::string scenario = kSource + "/tests/data/nccl_star.toml";
  const auto chosen = [](const Outcome& o) {
    const auto at = o.out.find("# fabricsim:            8 B AllReduce ");
    return at == std::string::npos ? std::string{} : o.out.substr(at + 38, 12);
  };
  const Outcome plain =
      cli({"nccl-tests", "all_reduce_perf", "-b", "8", "-e", "8", "--scenario", scenario});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(chosen(plain).find("LL"), std::string::npos) << chosen(plain);
  const Outcome flag = cli({"nccl-tests", "all_reduce_perf", "-b", "8", "-e", "8", "--scenario",
                            scenario, "--env", "NCCL_PROTO=^LL,LL128", "--env", "NCCL_FOO=1"});
  ASSERT_EQ(flag.code, 0) << flag.err;
  EXPECT_NE(chosen(flag).find("Simple"), std::string::npos) << flag.out;
  EXPECT_NE(flag.err.find("warning: NCCL_FOO=1: not a variable NCCL reads"), std::string::npos)
      << flag.err;
  ::setenv("NCCL_PROTO", "Simple", 1);
  const Outcome process = cli({"nccl-tests", "all_reduce_perf", "-b", "8", "-e", "8", "--scenario",
                               scenario, "--env-from-process"});
  ::unsetenv("NCCL_PROTO");
  ASSERT_EQ(process.code, 0) << process.err;
  EXPECT_NE(chosen(process).find("Simple"), std::string::npos) << process.out;
  // A bad value is the key's error, named as the override it came from.
  const Outcome bad = cli({"nccl-tests", "all_reduce_perf", "-b", "8", "-e", "8", "--scenario",
                           scenario, "--env", "NCCL_PROTO=LL64"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("unrecognized element token \"LL64\""), std::string::npos) << bad.err;
  EXPECT_EQ(cli({"nccl-tests", "all_reduce_perf", "--scenario", scenario, "--env", "seed=3"}).code,
            2);
}
