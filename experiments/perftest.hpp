#pragma once
// `fabricsim perftest`: perftest's ib_write_bw, ib_send_bw, ib_write_lat and ib_send_lat run
// between two servers of the simulated cluster, printing perftest's output
// (linux-rdma/perftest; ../shared/reference/protocols.md section 5), so a measured file and a
// simulated one read the same way (`calibrate`, `validate` and `diagnose` take both).
//
// The writes go from the first NIC of the first server to the first NIC of the second (or,
// without server models, from the first endpoint to the last), GPU memory to GPU memory (as
// perftest --use_cuda), alone on the fabric, on one QP, at the scenario's fidelity.
// - Latency: one write, from its post to its last byte landing: the one-way time perftest
//   reports as RTT / 2. The model is deterministic, so min, max, typical, average and the
//   percentiles are that time and the deviation is 0.
// - Bandwidth: 8 to 128 writes (about 64 MiB, at most perftest's window of 128) posted together;
//   the time per message is the spacing of their completions, the steady state perftest's
//   iterations average. BW average = size / that time; peak = average; MsgRate = 1 / time.
// -n is printed as given: more simulated iterations would repeat the same steady state.

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/run.hpp"

namespace fabricsim {

// One-way time (us) of one RDMA write of `bytes`, as above.
double rdma_message_latency_us(const Scenario& s, const BuiltCluster& cluster, std::uint64_t bytes);
// Steady-state time (us) per message of a stream of RDMA writes of `bytes` on one QP, as above.
double rdma_stream_message_us(const Scenario& s, const BuiltCluster& cluster, std::uint64_t bytes);

struct PerftestArgs {
  std::string binary = "ib_write_bw";  // ib_write_bw, ib_send_bw, ib_write_lat, ib_send_lat
  std::uint64_t size = 0;              // -s (0: perftest's default, 65536 B or 2 B for latency)
  bool all_sizes = false;              // -a: 2 B to 8 MiB in powers of two
  int iters = 0;                       // -n (0: perftest's default, 5000 or 1000 for latency)
  bool report_gbits = false;           // --report_gbits: Gb/s instead of MiB/s
  bool latency() const { return binary.ends_with("_lat"); }
};
// The binaries `fabricsim perftest` runs.
std::vector<std::string> perftest_binaries();
// The binary of a perftest output's title ("RDMA_Write BW Test": "ib_write_bw"), one of those,
// else "" (an RDMA read is a request and a response: neither one message nor a stream of
// them).
std::string perftest_binary(const std::string& title);

struct PerftestRow {
  std::uint64_t bytes = 0;
  double us = 0;  // one-way latency, or time per message of the stream
};
std::vector<PerftestRow> run_perftest(const Scenario& s, const BuiltCluster& cluster,
                                      const PerftestArgs& args);

}  // namespace fabricsim
