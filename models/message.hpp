#pragma once
// A message: one RDMA transfer from a source endpoint to a destination endpoint.

#include <cstdint>
#include <string>

#include "sim/units.hpp"

namespace fabricsim {

struct Message {
  std::uint32_t src = 0;
  std::uint32_t dst = 0;
  Bytes size{};
  Time start{};
  Bytes received{};           // payload delivered in order at the destination
  Time finish = Time::max();  // when the last byte was delivered; Time::max() while incomplete
  bool failed = false;        // the sender's QP gave up (retries exhausted)
  bool complete() const { return finish != Time::max(); }
};

}  // namespace fabricsim
