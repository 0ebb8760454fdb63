#include "report/perftest_output.hpp"

#include <fmt/format.h>

namespace fabricsim {

std::string perftest_text(const Scenario& s, const PerftestArgs& a,
                          const std::vector<PerftestRow>& rows) {
  const std::string rule(87, '-');
  const bool send = a.binary.starts_with("ib_send");
  const int iters = a.iters > 0 ? a.iters : a.latency() ? 1000 : 5000;
  std::string t = rule + "\n";
  t += fmt::format("{:>20}{} {} Test\n", "", send ? "Send" : "RDMA_Write",
                   a.latency() ? "Latency" : "BW");
  t += " Number of qps   : 1\t\tTransport type : IB\n";
  t += " Connection type : RC\t\tUsing SRQ      : OFF\n";
  if (!a.latency()) t += " TX depth        : 128\n";
  t += fmt::format(" Mtu             : {}[B]\n", s.network.nic.format.mtu.count());
  t += fmt::format(" Link type       : {}\n",
                   s.cluster.fabric.technology == Technology::kInfiniband ? "IB" : "Ethernet");
  t += rule + "\n";
  if (a.latency()) {
    t += " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
         "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n";
    for (const auto& r : rows)
      t += fmt::format(
          " {:<7} {:<7}       {:<7.2f}        {:<7.2f}      {:<7.2f}            "
          "{:<7.2f}        {:<7.2f}         {:<7.2f}                {:<7.2f}\n",
          r.bytes, iters, r.us, r.us, r.us, r.us, 0.0, r.us, r.us);
  } else {
    const char* unit = a.report_gbits ? "Gb/sec" : "MiB/sec";
    t += fmt::format(" #bytes     #iterations    BW peak[{0}]    BW average[{0}]   MsgRate[Mpps]\n",
                     unit);
    for (const auto& r : rows) {
      // perftest's format_factor: 2^20 (MiB/s) or 125,000,000 (Gb/s, decimal).
      const double bytes_per_s = static_cast<double>(r.bytes) / (r.us * 1e-6);
      const double bw = bytes_per_s / (a.report_gbits ? 125e6 : 1048576.0);
      t += fmt::format(" {:<7}    {:<10}       {:<7.2f}            {:<7.2f}\t\t     {:<7.6f}\n",
                       r.bytes, iters, bw, bw, 1 / r.us);
    }
  }
  t += rule + "\n";
  const bool servers = s.cluster.servers >= 2;
  t += fmt::format("# fabricsim: {} at {} level, {}, one QP\n", s.name, to_string(s.fidelity),
                   servers ? "first NIC of server 0 -> first NIC of server 1, GPU memory"
                           : "first endpoint -> last endpoint");
  return t;
}

}  // namespace fabricsim
