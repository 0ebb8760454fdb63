#pragma once
// Narrowing an index or count to a smaller integer type, checked: a value that does not fit
// throws instead of wrapping silently (a wrapped port or endpoint index misroutes packets while
// the run still says "completed").

#include <fmt/format.h>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <type_traits>

namespace fabricsim {

template <class To, class From>
To checked_narrow(From value, std::string_view what) {
  static_assert(std::is_integral_v<To> && std::is_integral_v<From>);
  if (!std::in_range<To>(value))
    throw std::length_error(fmt::format("{} {} does not fit the model's {}-bit field (at most {})",
                                        what, value, std::numeric_limits<To>::digits,
                                        std::numeric_limits<To>::max()));
  return static_cast<To>(value);
}

}  // namespace fabricsim
