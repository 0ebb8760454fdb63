#include <fcntl.h>
#include <unistd.h>
#include <array>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <streambuf>

#include "cli/commands.hpp"

namespace {

// Standard output that remembers why its first write failed (a full disk, a closed pipe), so
// the exit status and the message can say so; iostreams keep only a bad bit.
class StdoutBuf final : public std::streambuf {
 public:
  StdoutBuf() { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (sync() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override {
    for (const char* p = pbase(); p < pptr();) {
      const ssize_t n = ::write(STDOUT_FILENO, p, static_cast<std::size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (error_ == 0) error_ = n < 0 ? errno : EIO;
        setp(buffer_.data(), buffer_.data() + buffer_.size());
        return -1;
      }
      p += n;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return 0;
  }

 private:
  std::array<char, 1 << 16> buffer_{};
  int error_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  // With standard output closed, the next file opened would take its descriptor and receive
  // the report: refuse before opening anything.
  if (::fcntl(STDOUT_FILENO, F_GETFD) == -1) {
    std::cerr << "fabricsim: error: standard output is closed; redirect it (e.g. >/dev/null) "
                 "instead\n";
    return fabricsim::kExitFailure;
  }
  StdoutBuf buffer;
  std::ostream out(&buffer);
  std::vector<std::string> args(argv + 1, argv + argc);
  const int code = fabricsim::cli_main(args, out, std::cerr, ::isatty(STDERR_FILENO) != 0);
  out.flush();
  if (buffer.error() != 0) {
    std::cerr << "fabricsim: error: cannot write to standard output: "
              << std::strerror(buffer.error()) << '\n';
    return code != fabricsim::kExitOk ? code : fabricsim::kExitFailure;
  }
  return code;
}
