#include "experiments/perftest.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <stdexcept>

namespace fabricsim {

namespace {

// Completion times of `count` RDMA writes of `bytes` posted at time 0 on one QP between the
// NICs named in the header, alone on the fabric.
std::vector<Time> rdma_writes(const Scenario& s, const BuiltCluster& cluster, std::uint64_t bytes,
                              int count) {
  const auto endpoints = cluster.topology.endpoints().size();
  const std::size_t dst = s.cluster.servers >= 2 ? s.cluster.server.nics.size() : endpoints - 1;
  if (s.cluster.servers == 1 || endpoints < 2 || dst == 0 || dst >= endpoints)
    throw std::invalid_argument("RDMA tests need two NICs on different servers in the scenario");
  Simulation sim(s.seed);
  const std::unique_ptr<Fabric> fabric = make_fabric(sim, s, cluster);
  Message m;
  m.src = 0;
  m.dst = static_cast<std::uint32_t>(dst);
  m.size = Bytes(static_cast<Bytes::rep>(bytes));
  m.connection = fabric->open_connection();
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < count; ++i) ids.push_back(fabric->post(m));
  sim.run();
  std::vector<Time> finish;
  for (const std::uint64_t id : ids) {
    const Message& done = fabric->message(id);  // slots are not reused here
    if (!done.complete())
      throw std::runtime_error(
          fmt::format("the simulated {} B RDMA write did not complete", bytes));
    finish.push_back(done.finish);
  }
  return finish;
}

}  // namespace

double rdma_message_latency_us(const Scenario& s, const BuiltCluster& cluster,
                               std::uint64_t bytes) {
  return rdma_writes(s, cluster, bytes, 1).front().us();  // posted at time 0
}

double rdma_stream_message_us(const Scenario& s, const BuiltCluster& cluster, std::uint64_t bytes) {
  // Enough messages for a steady spacing (the first ones share the path's fill), at most
  // perftest's default window of 128 and about 64 MiB in all.
  const int count = static_cast<int>(
      std::clamp<std::uint64_t>((64u << 20) / std::max<std::uint64_t>(bytes, 1), 8, 128));
  const std::vector<Time> finish = rdma_writes(s, cluster, bytes, count);
  return (finish.back() - finish.front()).us() / (count - 1);
}

std::vector<std::string> perftest_binaries() {
  return {"ib_write_bw", "ib_send_bw", "ib_write_lat", "ib_send_lat"};
}

std::string perftest_binary(const std::string& title) {
  // Titles: "RDMA_Write BW Test", "Send Latency Test" (older versions: "... Lat Test").
  const char* kind = title.find("Lat") != std::string::npos  ? "lat"
                     : title.find("BW") != std::string::npos ? "bw"
                                                             : nullptr;
  if (kind == nullptr) return {};
  if (title.find("Write") != std::string::npos) return fmt::format("ib_write_{}", kind);
  if (title.find("Send") != std::string::npos) return fmt::format("ib_send_{}", kind);
  return {};
}

std::vector<PerftestRow> run_perftest(const Scenario& s, const BuiltCluster& cluster,
                                      const PerftestArgs& a) {
  std::vector<std::uint64_t> sizes;
  if (a.all_sizes) {
    for (std::uint64_t b = 2; b <= (8u << 20); b *= 2) sizes.push_back(b);
  } else {
    sizes.push_back(a.size > 0 ? a.size : a.latency() ? 2 : 65536);
  }
  std::vector<PerftestRow> rows;
  for (const std::uint64_t b : sizes)
    rows.push_back({b, a.latency() ? rdma_message_latency_us(s, cluster, b)
                                   : rdma_stream_message_us(s, cluster, b)});
  return rows;
}

}  // namespace fabricsim
