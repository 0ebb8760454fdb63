// Must not compile: a bare integer is not a Time (picoseconds? seconds?).
#include "sim/units.hpp"
fabricsim::Time wrong = 5;
