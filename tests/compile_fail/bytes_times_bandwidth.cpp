// Must not compile: bytes times bits-per-second has no unit the engine knows.
#include "sim/units.hpp"
using namespace fabricsim::literals;
auto wrong = 64_KiB * 100_Gbps;
