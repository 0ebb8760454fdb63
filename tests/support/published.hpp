#pragma once
// Published figures kept under validation/reference/ (figures with their sources, nothing
// fitted to them): every point run with the default presets and its own overrides.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <toml++/toml.h>

#include <filesystem>
#include <string>

#include "tests/support/collective_run.hpp"

namespace fabricsim::fixtures {

// Each [[point]] of validation/reference/<file> (preset, overrides, size, busbw_gbs) runs
// nccl-tests' all_reduce_perf at its size, at flow level, on one DGX H100's scenario with the
// point's preset and overrides: the tuner must pick `algo` and the busbw come within
// `tolerance` of the published one.
inline void expect_published_points(const std::string& file, Algo algo, double tolerance) {
  const auto path = std::filesystem::path(FABRICSIM_SOURCE_DIR) / "validation/reference" / file;
  const toml::table ref = toml::parse_file(path.string());
  const toml::array* points = ref["point"].as_array();
  ASSERT_NE(points, nullptr) << file;
  ASSERT_GE(points->size(), 2u) << file;
  for (const toml::node& node : *points) {
    const toml::table& p = *node.as_table();
    LoadOptions options;
    options.overrides = {"fidelity=\"flow\"",
                         fmt::format("server.preset=\"{}\"", p["preset"].value_or(""))};
    for (const toml::node& o : *p["overrides"].as_array())
      options.overrides.push_back(o.value_or(std::string()));
    const Scenario s = load_scenario_text(one_dgx_h100(), "t.toml", options);
    const auto size =
        static_cast<std::uint64_t>(parse_bytes(p["size"].value_or(std::string())).count());
    const NcclTestsRow row = nccl_tests_row(s, size);
    const double published = p["busbw_gbs"].value_or(0.0);
    EXPECT_EQ(row.algo, algo) << p["hardware"].value_or("");
    EXPECT_NEAR(row.busbw[0], published, tolerance * published)
        << p["hardware"].value_or("") << " (" << p["source"].value_or("") << ")";
  }
}

}  // namespace fabricsim::fixtures
