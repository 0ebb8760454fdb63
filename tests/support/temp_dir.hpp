#pragma once
// Scratch paths for tests that write files.

#include <unistd.h>

#include <filesystem>
#include <string>

namespace fabricsim::tests {

// A path of this process's own under the system's temp folder, removed if it was there: two
// test runs at once (ctest -j, a sanitizer build beside a release one) never share one.
inline std::filesystem::path temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("fabricsim_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace fabricsim::tests
