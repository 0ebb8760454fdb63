// libFuzzer targets for the measurement parsers (validation/parsers.hpp) and the NCCL
// topology XML importer, one binary per format (FUZZ_FORMAT picks it): every input parses or
// is rejected with the parser's own error; anything else (a crash, a sanitizer report, another
// exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "topologies/nccl_xml.hpp"
#include "validation/parsers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fabricsim::validation;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string source = "fuzz";
  try {
#if FUZZ_FORMAT == 1
    const auto o = parse_nccl_tests(text, source);
    (void)o;
#elif FUZZ_FORMAT == 2
    const auto o = parse_perftest(text, source);
    (void)o;
#elif FUZZ_FORMAT == 3
    const auto o = parse_nvidia_smi_topo(text, source);
    for (std::size_t i = 0; i < o.devices.size(); ++i)
      for (std::size_t j = 0; j < o.devices.size(); ++j) (void)o.nvlinks(i, j);
#elif FUZZ_FORMAT == 4
    const auto o = parse_ethtool_stats(text, source);
    (void)(o.pause_frames() + o.ecn_marked() + o.cnp());
#elif FUZZ_FORMAT == 5
    const auto o = parse_nccl_debug_log(text, source);
    (void)o;
#else
    const auto o = fabricsim::import_nccl_xml(text, fabricsim::server_preset("dgx-a100"));
    (void)o;
  } catch (const std::invalid_argument&) {
#endif
  } catch (const ParseError&) {
  }
  return 0;
}
