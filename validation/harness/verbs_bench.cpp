// fabricsim-verbs-bench: RDMA write bandwidth and latency between two hosts over libibverbs,
// as perftest's ib_write_bw / ib_write_lat measure them (built only when libibverbs is found).
//
//   server:  fabricsim-verbs-bench --server [--dev mlx5_0] [--gid-index 3]
//   client:  fabricsim-verbs-bench --client HOST [-s 65536] [-n 5000] [--lat] [--json FILE]
//
// One RC queue pair; addresses, keys and GIDs are exchanged over TCP (--port). Bandwidth:
// `iters` RDMA writes of `size` bytes with up to `depth` outstanding, average = size x iters /
// elapsed. Latency: one signalled write at a time, the time until its completion (the remote
// NIC's acknowledgement: one round trip), reported as perftest does for writes, halved
// (t_typical is the median). The client prints perftest's --report_gbits format, which
// `fabricsim calibrate/diagnose` read, and --json writes the same figures.
// Errors end the run naming the failed call: no RDMA device is exit 2, a verbs or socket
// failure exit 1.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(int code, const std::string& what) {
  std::fprintf(stderr, "fabricsim-verbs-bench: %s\n", what.c_str());
  std::exit(code);
}

void check(int rc, const char* call) {
  if (rc != 0) fail(1, std::string(call) + " failed: " + std::strerror(rc > 0 ? rc : errno));
}

struct Endpoint {
  std::uint16_t lid = 0;
  std::uint32_t qpn = 0, psn = 0, rkey = 0;
  std::uint64_t addr = 0;
  std::uint8_t gid[16] = {};
};

struct Options {
  bool server = false, latency = false;
  std::string host, dev, json;
  int port = 18515, ib_port = 1, gid_index = -1, depth = 128;
  std::size_t size = 65536;
  int iters = 5000;
};

int connect_tcp(const Options& o) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = o.server ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(o.port);
  if (getaddrinfo(o.server ? nullptr : o.host.c_str(), port.c_str(), &hints, &res) != 0)
    fail(1, "cannot resolve " + o.host);
  int fd = -1;
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    if (o.server) {
      const int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 1) != 0) {
        close(fd);
        fd = -1;
        continue;
      }
      const int c = accept(fd, nullptr, nullptr);
      close(fd);
      fd = c;
    } else if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) fail(1, "TCP connection on port " + port + " failed: " + std::strerror(errno));
  return fd;
}

void exchange(int fd, const Endpoint& mine, Endpoint& theirs) {
  if (write(fd, &mine, sizeof mine) != static_cast<ssize_t>(sizeof mine) ||
      read(fd, &theirs, sizeof theirs) != static_cast<ssize_t>(sizeof theirs))
    fail(1, "exchanging queue pair details over TCP failed");
}

void usage() {
  std::printf(
      "usage: fabricsim-verbs-bench --server | --client HOST  [--dev NAME] [--ib-port N]\n"
      "       [--gid-index N (RoCE)] [--port TCP] [-s BYTES] [-n ITERS] [--depth N] [--lat]\n"
      "       [--json FILE]\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc) fail(2, "option " + a + " needs a value");
      return argv[++i];
    };
    const auto number = [&](long lo) {
      const std::string v = next();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (*end != '\0' || n < lo) fail(2, "option " + a + ": '" + v + "' is not a valid number");
      return n;
    };
    if (a == "--server")
      o.server = true;
    else if (a == "--client")
      o.host = next();
    else if (a == "--dev")
      o.dev = next();
    else if (a == "--ib-port")
      o.ib_port = static_cast<int>(number(1));
    else if (a == "--gid-index")
      o.gid_index = static_cast<int>(number(0));
    else if (a == "--port")
      o.port = static_cast<int>(number(1));
    else if (a == "-s")
      o.size = static_cast<std::size_t>(number(1));
    else if (a == "-n")
      o.iters = static_cast<int>(number(1));
    else if (a == "--depth")
      o.depth = static_cast<int>(number(1));
    else if (a == "--lat")
      o.latency = true;
    else if (a == "--json")
      o.json = next();
    else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      fail(2, "unknown option '" + a + "' (--help lists them)");
    }
  }
  if (o.server == !o.host.empty()) fail(2, "give exactly one of --server and --client HOST");

  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr || count == 0) fail(2, "no RDMA device (ibv_get_device_list found none)");
  ibv_device* dev = list[0];
  for (int d = 0; d < count && !o.dev.empty(); ++d)
    if (o.dev == ibv_get_device_name(list[d])) dev = list[d];
  if (!o.dev.empty() && o.dev != ibv_get_device_name(dev)) fail(2, "no RDMA device " + o.dev);
  ibv_context* ctx = ibv_open_device(dev);
  if (ctx == nullptr) fail(1, "ibv_open_device failed");
  ibv_pd* pd = ibv_alloc_pd(ctx);
  const std::size_t bytes = o.size * 2;
  std::vector<char> buffer(bytes, 1);
  ibv_mr* mr =
      pd ? ibv_reg_mr(pd, buffer.data(), bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
         : nullptr;
  ibv_cq* cq = ibv_create_cq(ctx, o.depth * 2, nullptr, nullptr, 0);
  if (pd == nullptr || mr == nullptr || cq == nullptr) fail(1, "allocating PD, MR or CQ failed");
  ibv_qp_init_attr qia{};
  qia.send_cq = qia.recv_cq = cq;
  qia.qp_type = IBV_QPT_RC;
  qia.cap.max_send_wr = static_cast<std::uint32_t>(o.depth);
  qia.cap.max_recv_wr = 1;
  qia.cap.max_send_sge = qia.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &qia);
  if (qp == nullptr) fail(1, std::string("ibv_create_qp failed: ") + std::strerror(errno));
  ibv_port_attr port{};
  check(ibv_query_port(ctx, static_cast<std::uint8_t>(o.ib_port), &port), "ibv_query_port");

  Endpoint mine, theirs;
  mine.lid = port.lid;
  mine.qpn = qp->qp_num;
  mine.psn = static_cast<std::uint32_t>(getpid()) & 0xffffff;
  mine.rkey = mr->rkey;
  mine.addr = reinterpret_cast<std::uintptr_t>(buffer.data());
  if (o.gid_index >= 0) {
    ibv_gid gid{};
    check(ibv_query_gid(ctx, static_cast<std::uint8_t>(o.ib_port), o.gid_index, &gid),
          "ibv_query_gid");
    std::memcpy(mine.gid, gid.raw, sizeof mine.gid);
  }
  const int fd = connect_tcp(o);
  exchange(fd, mine, theirs);

  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<std::uint8_t>(o.ib_port);
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  check(ibv_modify_qp(qp, &attr,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
        "ibv_modify_qp(INIT)");
  attr = {};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = port.active_mtu;
  attr.dest_qp_num = theirs.qpn;
  attr.rq_psn = theirs.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.dlid = theirs.lid;
  attr.ah_attr.port_num = static_cast<std::uint8_t>(o.ib_port);
  if (o.gid_index >= 0) {
    attr.ah_attr.is_global = 1;
    std::memcpy(attr.ah_attr.grh.dgid.raw, theirs.gid, sizeof theirs.gid);
    attr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(o.gid_index);
    attr.ah_attr.grh.hop_limit = 64;
  }
  check(ibv_modify_qp(qp, &attr,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
        "ibv_modify_qp(RTR)");
  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = mine.psn;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 1;
  check(ibv_modify_qp(qp, &attr,
                      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                          IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC),
        "ibv_modify_qp(RTS)");

  if (o.server) {
    char done = 0;  // the client writes into our buffer; we wait until it says it is done
    if (read(fd, &done, 1) != 1) fail(1, "the client went away before finishing");
    close(fd);
    return 0;
  }
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(buffer.data());
  sge.length = static_cast<std::uint32_t>(o.size);
  sge.lkey = mr->lkey;
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = theirs.addr + o.size;
  wr.wr.rdma.rkey = theirs.rkey;
  const auto poll = [&](int want) {
    ibv_wc wc[16];
    int got = 0;
    while (got < want) {
      const int n = ibv_poll_cq(cq, std::min(16, want - got), wc);
      if (n < 0) fail(1, "ibv_poll_cq failed");
      for (int i = 0; i < n; ++i)
        if (wc[i].status != IBV_WC_SUCCESS)
          fail(1, std::string("RDMA write failed: ") + ibv_wc_status_str(wc[i].status));
      got += n;
    }
  };
  using clock = std::chrono::steady_clock;
  std::string text = o.latency ? "                    RDMA_Write Latency Test\n"
                               : "                    RDMA_Write BW Test\n";
  text += std::string(" Link type       : ") +
          (port.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "IB") + "\n";
  text += " Mtu             : " + std::to_string(128 << port.active_mtu) + "[B]\n";
  char line[256];
  FILE* json = o.json.empty() ? nullptr : std::fopen(o.json.c_str(), "w");
  if (!o.json.empty() && json == nullptr) fail(2, "cannot write " + o.json);
  if (o.latency) {
    std::vector<double> us;
    for (int i = 0; i < o.iters; ++i) {
      ibv_send_wr* bad = nullptr;
      const auto t0 = clock::now();
      check(ibv_post_send(qp, &wr, &bad), "ibv_post_send");
      poll(1);
      us.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count() / 2);
    }
    std::sort(us.begin(), us.end());
    double sum = 0;
    for (double v : us) sum += v;
    const double med = us[us.size() / 2], avg = sum / static_cast<double>(us.size());
    text += " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]\n";
    std::snprintf(line, sizeof line, " %-7zu %-10d %-7.2f %-7.2f %-7.2f %-7.2f\n", o.size, o.iters,
                  us.front(), us.back(), med, avg);
    text += line;
    if (json)
      std::fprintf(json,
                   "{\"tool\": \"fabricsim-verbs-bench\", \"test\": \"write_lat\", \"bytes\": %zu, "
                   "\"iters\": %d, \"t_min_us\": %.3f, \"t_typical_us\": %.3f, \"t_avg_us\": %.3f, "
                   "\"t_max_us\": %.3f}\n",
                   o.size, o.iters, us.front(), med, avg, us.back());
  } else {
    int posted = 0, done = 0;
    const auto t0 = clock::now();
    while (done < o.iters) {
      while (posted < o.iters && posted - done < o.depth) {
        ibv_send_wr* bad = nullptr;
        check(ibv_post_send(qp, &wr, &bad), "ibv_post_send");
        ++posted;
      }
      poll(1);
      ++done;
    }
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    const double gbps = static_cast<double>(o.size) * o.iters * 8 / s / 1e9;
    text += " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n";
    std::snprintf(line, sizeof line,
                  " %-7zu    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f\n", o.size,
                  o.iters, gbps, gbps, o.iters / s / 1e6);
    text += line;
    if (json)
      std::fprintf(json,
                   "{\"tool\": \"fabricsim-verbs-bench\", \"test\": \"write_bw\", \"bytes\": %zu, "
                   "\"iters\": %d, \"bw_avg_gbps\": %.4f, \"msg_rate_mpps\": %.6f}\n",
                   o.size, o.iters, gbps, o.iters / s / 1e6);
  }
  std::fputs(text.c_str(), stdout);
  if (json) std::fclose(json);
  const char done = 1;
  if (write(fd, &done, 1) != 1) fail(1, "telling the server we are done failed");
  close(fd);
  ibv_destroy_qp(qp);
  ibv_destroy_cq(cq);
  ibv_dereg_mr(mr);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  return 0;
}
