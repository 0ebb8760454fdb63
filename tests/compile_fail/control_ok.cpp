// Control case: built the same way as the must-not-compile cases, and must compile, so a
// broken test set-up cannot pass those cases by failing for another reason.
#include "sim/units.hpp"
using namespace fabricsim::literals;
auto right = fabricsim::tx_time(64_KiB, 100_Gbps) + 1_us;
