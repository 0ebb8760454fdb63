// Must not compile: a time plus a size has no meaning.
#include "sim/units.hpp"
using namespace fabricsim::literals;
auto wrong = 1_us + 64_KiB;
