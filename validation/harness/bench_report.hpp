#pragma once
// What fabricsim-bench measured, and the JSON it writes for it (--json). Kept apart from the
// CUDA code (C++17, no dependency) so the tests write the same JSON without a GPU and check
// that `fabricsim calibrate` reads what the harness writes (validation::parse_harness_json).
//
//   {"tool": "fabricsim-bench", "device": "...", "gpus": G, "processes": P, "ranks": G x P,
//    "nccl_version": 22703,
//    "micro": {"h2d_gbs": .., "d2h_gbs": .., "d2d_gbs": .., "h2d_latency_us": ..,
//              "d2h_latency_us": .., "kernel_launch_us": ..},          (with --micro only)
//    "collectives": [{"op": "all_reduce", "bytes": B, "time_us": T, "algbw_gbs": ..,
//                     "busbw_gbs": .., "wrong": W}, ...]}
// time_us is the out-of-place time averaged over iterations and ranks, as nccl-tests -a 1.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace fabricsim::bench {

struct Micro {
  double h2d_gbs = 0, d2h_gbs = 0;                // pinned host <-> device copy bandwidth (256 MiB)
  double d2d_gbs = 0;                             // device-to-device copy (bytes copied per second)
  double h2d_latency_us = 0, d2h_latency_us = 0;  // 8-byte copies
  double kernel_launch_us = 0;                    // an empty kernel, back to back
};

struct CollectiveRow {
  std::string op;  // nccl-tests binary without _perf: "all_reduce"
  std::uint64_t bytes = 0;
  double time_us = 0, algbw_gbs = 0, busbw_gbs = 0;
  std::uint64_t wrong = 0;
};

struct Report {
  std::string device;  // the first GPU's name
  int gpus = 0;        // per process
  int processes = 1;   // MPI processes (1 without MPI)
  int nccl_version = 0;
  std::optional<Micro> micro;
  std::vector<CollectiveRow> collectives;
  int ranks() const { return gpus * processes; }
};

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

inline std::string to_json(const Report& r) {
  char buf[512];
  std::string out = "{\n  \"tool\": \"fabricsim-bench\",\n  \"device\": " + json_string(r.device);
  std::snprintf(buf, sizeof buf,
                ",\n  \"gpus\": %d,\n  \"processes\": %d,\n  \"ranks\": %d,\n"
                "  \"nccl_version\": %d,\n",
                r.gpus, r.processes, r.ranks(), r.nccl_version);
  out += buf;
  if (r.micro) {
    const Micro& m = *r.micro;
    std::snprintf(buf, sizeof buf,
                  "  \"micro\": {\"h2d_gbs\": %.4f, \"d2h_gbs\": %.4f, \"d2d_gbs\": %.4f, "
                  "\"h2d_latency_us\": %.4f, \"d2h_latency_us\": %.4f, \"kernel_launch_us\": "
                  "%.4f},\n",
                  m.h2d_gbs, m.d2h_gbs, m.d2d_gbs, m.h2d_latency_us, m.d2h_latency_us,
                  m.kernel_launch_us);
    out += buf;
  }
  out += "  \"collectives\": [";
  for (std::size_t i = 0; i < r.collectives.size(); ++i) {
    const CollectiveRow& c = r.collectives[i];
    std::snprintf(buf, sizeof buf,
                  "%s\n    {\"op\": %s, \"bytes\": %llu, \"time_us\": %.4f, \"algbw_gbs\": %.4f, "
                  "\"busbw_gbs\": %.4f, \"wrong\": %llu}",
                  i ? "," : "", json_string(c.op).c_str(), static_cast<unsigned long long>(c.bytes),
                  c.time_us, c.algbw_gbs, c.busbw_gbs, static_cast<unsigned long long>(c.wrong));
    out += buf;
  }
  out += "\n  ]\n}\n";
  return out;
}

}  // namespace fabricsim::bench
