#pragma once
// What the command line says about itself, generated from the one CLI11 tree `cli_main` builds:
// the man page, the bash completion script, and `did you mean` for a mistyped command or option.
// Nothing here is written by hand per command, so the three cannot drift from `--help`.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fabricsim {

// fabricsim(1) in roff (man -l fabricsim.1): every command with its options and the examples
// its `--help` shows (the footer after "Examples:").
std::string man_page(const CLI::App& app, const std::string& version);

// A bash completion script: commands, then each command's options; anything else completes as
// a file name (scenarios, measurement folders).
std::string bash_completion(const CLI::App& app);

// When the first of `args` (without the program name) is no command, the message for it, with
// the nearest command.
std::optional<std::string> unknown_command(const CLI::App& app,
                                           const std::vector<std::string>& args);
// When `args` name a command and then an option that command does not have, the message for
// it, with the nearest option of that command.
std::optional<std::string> unknown_option(const CLI::App& app,
                                          const std::vector<std::string>& args);

}  // namespace fabricsim
