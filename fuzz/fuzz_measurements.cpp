// libFuzzer targets for the measurement parsers (validation/parsers.hpp) and the NCCL
// topology XML importer, one binary per format (FUZZ_FORMAT picks it): every input parses or
// is rejected with the parser's own error; anything else (a crash, a sanitizer report, another
// exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "topo/nccl_xml.hpp"
#include "topo/server.hpp"
#include "validation/parsers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fabricsim::validation;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string source = "fuzz";
  try {
#if FUZZ_FORMAT == 1
    (void)parse_nccl_tests(text, source);
#elif FUZZ_FORMAT == 2
    (void)parse_perftest(text, source);
#elif FUZZ_FORMAT == 4
    const auto o = parse_ethtool_stats(text, source);
    (void)(o.pause_frames() + o.ecn_marked() + o.cnp());
#elif FUZZ_FORMAT == 5
    (void)parse_nccl_debug_log(text, source);
#elif FUZZ_FORMAT == 7
    if (harness_json_tool(text) == "fabricsim-verbs-bench")
      (void)parse_verbs_bench_json(text, source);
    else if (looks_like_results_json(text))
      (void)parse_results_json(text, source);
    else
      (void)parse_bench_json(text, source);
#endif
  } catch (const ParseError&) {
  }
  try {
    // The topology importers report bad input as std::invalid_argument ("line N: ...").
#if FUZZ_FORMAT == 3
    (void)fabricsim::parse_topo_matrix(text);
#elif FUZZ_FORMAT == 6
    (void)fabricsim::import_nccl_xml(text, fabricsim::server_preset("dgx-a100"));
#endif
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
