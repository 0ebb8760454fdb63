#pragma once
// Running the command line in-process, and reading back what it wrote, for the CLI tests.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"

namespace fabricsim::tests {

inline const std::string kSource = FABRICSIM_SOURCE_DIR;

struct Outcome {
  int code;
  std::string out, err;
};

inline Outcome cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = cli_main(args, out, err);
  return {code, out.str(), err.str()};
}

inline std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace fabricsim::tests
