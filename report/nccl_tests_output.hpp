#pragma once
// nccl-tests output of a simulated sweep (experiments/nccl_tests.hpp): the text exactly as
// nccl-tests prints it, and the same rows as JSON and CSV.

#include <string>

#include "experiments/nccl_tests.hpp"

namespace fabricsim {

// The output exactly as nccl-tests prints it (plus '#' lines after the footer with what the
// model chose per size).
std::string nccl_tests_text(const NcclTestsArgs& args, const NcclTestsResult& result);
std::string nccl_tests_json(const Scenario& scenario, const NcclTestsArgs& args,
                            const NcclTestsResult& result);
std::string nccl_tests_csv(const NcclTestsResult& result);

}  // namespace fabricsim
