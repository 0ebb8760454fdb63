#pragma once
// The command line, callable in-process (tests) and from main().
// Exit codes: 0 success, 2 bad usage or invalid input, 1 failure during simulation.

#include <ostream>
#include <string>
#include <vector>

namespace fabricsim {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// `args` excludes the program name. `interactive`: `err` is a terminal (progress rewritten in
// place twice a second; otherwise a progress line every 10 s of a long run).
int cli_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             bool interactive = false);

}  // namespace fabricsim
