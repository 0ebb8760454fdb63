#pragma once
// NCCL's environment as a user sets it for a real run (`NCCL_ALGO=Ring,Tree`, `NCCL_BUFFSIZE=
// 8388608`), turned into scenario overrides: every variable the model reads is the [nccl] key of
// the same name (scenario/schema.cpp), so `--env NAME=VALUE` is `--set nccl.NAME=VALUE` and is
// checked by the same rules. Nothing is silently dropped: a name NCCL reads that the model does
// not gets a warning saying so, a name NCCL does not read a warning naming the nearest one.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fabricsim {

struct NcclEnvironment {
  std::vector<std::string> overrides;  // "nccl.NAME=VALUE", in the order given
  std::vector<std::string> warnings;   // one line each, without a "warning:" prefix
};

// `vars` are (name, value) pairs; names not starting with "NCCL_" are not NCCL's and are left
// out without a word (a process environment holds many).
NcclEnvironment nccl_environment(const std::vector<std::pair<std::string, std::string>>& vars);
// "NAME=VALUE" (as `--env` takes it) split at the first '='; throws std::invalid_argument.
std::pair<std::string, std::string> split_assignment(std::string_view assignment);
// The NCCL_* entries of a process environment (environ), in the order it lists them.
std::vector<std::pair<std::string, std::string>> nccl_variables(const char* const* envp);

// Every variable NCCL reads (NCCL 2.30.7, src/: NCCL_PARAM, DEFINE_NCCL_PARAM, ncclGetEnv and
// getenv call sites), sorted.
const std::vector<std::string_view>& nccl_variable_names();

}  // namespace fabricsim
