#include <unistd.h>
#include <iostream>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return fabricsim::cli_main(args, std::cout, std::cerr, ::isatty(STDERR_FILENO) != 0);
}
