// fabricsim-bench: what calibration needs, measured on real GPUs (built only when the CUDA
// Toolkit and NCCL are found). One process drives every local GPU (ncclCommInitAll), like
// nccl-tests with -g N:
//   - collectives swept over sizes (-b -e -f), timed with CUDA events after warm-up, results
//     checked, printed in nccl-tests' format (so `fabricsim calibrate` reads them) and, with
//     --json, as JSON;
//   - with --micro, single-GPU figures: pinned host<->device copy bandwidth and latency over
//     PCIe, device-to-device bandwidth, kernel launch latency.
// Every error ends the run with a message naming what failed (no GPU: exit 2; a CUDA or NCCL
// failure, or wrong results: exit 1).
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(int code, const std::string& what) {
  std::fprintf(stderr, "fabricsim-bench: %s\n", what.c_str());
  std::exit(code);
}

#define CUDA_OK(call)                                                                 \
  do {                                                                                \
    const cudaError_t e_ = (call);                                                    \
    if (e_ != cudaSuccess)                                                            \
      fail(1, std::string("CUDA error in ") + #call + ": " + cudaGetErrorString(e_)); \
  } while (0)
#define NCCL_OK(call)                                                                 \
  do {                                                                                \
    const ncclResult_t r_ = (call);                                                   \
    if (r_ != ncclSuccess)                                                            \
      fail(1, std::string("NCCL error in ") + #call + ": " + ncclGetErrorString(r_)); \
  } while (0)

__global__ void empty_kernel() {}

__global__ void fill(float* p, std::size_t n, float v) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}

std::uint64_t parse_size(const char* s) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  std::uint64_t mul = 1;
  const char suffix = *end;
  if (suffix == 'K' || suffix == 'k') mul = 1ull << 10;
  if (suffix == 'M' || suffix == 'm') mul = 1ull << 20;
  if (suffix == 'G' || suffix == 'g') mul = 1ull << 30;
  if (mul > 1) ++end;
  if (v <= 0 || end == s || *end != '\0')
    fail(2, std::string("bad size '") + s + "' (bytes, or with K, M, G)");
  return static_cast<std::uint64_t>(v * static_cast<double>(mul));
}

struct Op {
  const char* name;  // nccl-tests binary without _perf
  bool rooted, reduces;
  double bus_factor(int n) const {
    const std::string s = name;
    if (s == "all_reduce") return 2.0 * (n - 1) / n;
    if (s == "all_gather" || s == "reduce_scatter" || s == "alltoall") return double(n - 1) / n;
    return 1.0;
  }
};
const Op kOps[] = {{"all_reduce", false, true},     {"all_gather", false, false},
                   {"reduce_scatter", false, true}, {"broadcast", true, false},
                   {"reduce", true, true},          {"alltoall", false, false},
                   {"sendrecv", false, false}};

struct Gpu {
  int dev = 0;
  cudaStream_t stream{};
  float* send = nullptr;
  float* recv = nullptr;
  ncclComm_t comm{};
};

// Elements each rank sends/receives for nccl-tests' size S (bytes, total as nccl-tests counts).
struct Counts {
  std::size_t send, recv;
};
Counts counts(const std::string& op, std::size_t elems, int n) {
  if (op == "all_gather") return {elems / n, elems / n * n};
  if (op == "reduce_scatter") return {elems / n * n, elems / n};
  if (op == "alltoall") return {elems / n * n, elems / n * n};
  return {elems, elems};
}

void launch(const std::string& op, std::vector<Gpu>& g, std::size_t elems) {
  const int n = static_cast<int>(g.size());
  const Counts c = counts(op, elems, n);
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    Gpu& x = g[r];
    if (op == "all_reduce")
      NCCL_OK(ncclAllReduce(x.send, x.recv, c.send, ncclFloat, ncclSum, x.comm, x.stream));
    else if (op == "all_gather")
      NCCL_OK(ncclAllGather(x.send, x.recv, c.send, ncclFloat, x.comm, x.stream));
    else if (op == "reduce_scatter")
      NCCL_OK(ncclReduceScatter(x.send, x.recv, c.recv, ncclFloat, ncclSum, x.comm, x.stream));
    else if (op == "broadcast")
      NCCL_OK(ncclBroadcast(x.send, x.recv, c.send, ncclFloat, 0, x.comm, x.stream));
    else if (op == "reduce")
      NCCL_OK(ncclReduce(x.send, x.recv, c.send, ncclFloat, ncclSum, 0, x.comm, x.stream));
    else if (op == "alltoall") {
      const std::size_t chunk = c.send / n;
      for (int p = 0; p < n; ++p) {
        NCCL_OK(ncclSend(x.send + p * chunk, chunk, ncclFloat, p, x.comm, x.stream));
        NCCL_OK(ncclRecv(x.recv + p * chunk, chunk, ncclFloat, p, x.comm, x.stream));
      }
    } else {  // sendrecv: to the next rank, from the previous
      NCCL_OK(ncclSend(x.send, c.send, ncclFloat, (r + 1) % n, x.comm, x.stream));
      NCCL_OK(ncclRecv(x.recv, c.recv, ncclFloat, (r + n - 1) % n, x.comm, x.stream));
    }
  }
  NCCL_OK(ncclGroupEnd());
}

// Elements of rank r's receive buffer that differ from what the operation must produce, with
// rank q's send buffer filled with q + 1.
std::size_t wrong(const std::string& op, const Gpu& x, int r, int n, std::size_t elems) {
  const Counts c = counts(op, elems, n);
  if ((op == "reduce") && r != 0) return 0;
  std::vector<float> h(c.recv);
  CUDA_OK(cudaSetDevice(x.dev));
  CUDA_OK(cudaMemcpy(h.data(), x.recv, c.recv * sizeof(float), cudaMemcpyDeviceToHost));
  const float sum = n * (n + 1) / 2.0f;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < c.recv; ++i) {
    float want = 0;
    if (op == "all_reduce" || op == "reduce_scatter" || op == "reduce") want = sum;
    if (op == "all_gather") want = static_cast<float>(i / c.send + 1);
    if (op == "broadcast") want = 1;
    if (op == "alltoall") want = static_cast<float>(i / (c.recv / n) + 1);
    if (op == "sendrecv") want = static_cast<float>((r + n - 1) % n + 1);
    bad += h[i] != want;
  }
  return bad;
}

struct Row {
  std::string op;
  std::uint64_t bytes;
  double time_us, algbw, busbw;
  std::size_t wrong;
};

void micro(FILE* json) {
  CUDA_OK(cudaSetDevice(0));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  const std::size_t big = 256u << 20;
  void *host = nullptr, *dev = nullptr, *dev2 = nullptr;
  CUDA_OK(cudaMallocHost(&host, big));
  CUDA_OK(cudaMalloc(&dev, big));
  CUDA_OK(cudaMalloc(&dev2, big));
  const auto time_us = [&](auto&& body, int reps) {
    body();  // warm-up
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaEventRecord(a, s));
    for (int i = 0; i < reps; ++i) body();
    CUDA_OK(cudaEventRecord(b, s));
    CUDA_OK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, a, b));
    return ms * 1e3 / reps;
  };
  const double h2d =
      time_us([&] { CUDA_OK(cudaMemcpyAsync(dev, host, big, cudaMemcpyHostToDevice, s)); }, 10);
  const double d2h =
      time_us([&] { CUDA_OK(cudaMemcpyAsync(host, dev, big, cudaMemcpyDeviceToHost, s)); }, 10);
  const double d2d =
      time_us([&] { CUDA_OK(cudaMemcpyAsync(dev2, dev, big, cudaMemcpyDeviceToDevice, s)); }, 10);
  const double h2d_lat =
      time_us([&] { CUDA_OK(cudaMemcpyAsync(dev, host, 8, cudaMemcpyHostToDevice, s)); }, 1000);
  const double d2h_lat =
      time_us([&] { CUDA_OK(cudaMemcpyAsync(host, dev, 8, cudaMemcpyDeviceToHost, s)); }, 1000);
  const double launch = time_us(
      [&] {
        empty_kernel<<<1, 1, 0, s>>>();
        CUDA_OK(cudaGetLastError());
      },
      10000);
  const double gbs = static_cast<double>(big) / 1e3;  // bytes per us -> GB/s
  std::printf(
      "# micro: h2d %.2f GB/s, d2h %.2f GB/s, d2d %.2f GB/s (read + write %.2f), "
      "h2d latency %.2f us, d2h latency %.2f us, kernel launch %.2f us\n",
      gbs / h2d, gbs / d2h, gbs / d2d, 2 * gbs / d2d, h2d_lat, d2h_lat, launch);
  if (json)
    std::fprintf(
        json,
        "  \"micro\": {\"h2d_gbs\": %.4f, \"d2h_gbs\": %.4f, \"d2d_gbs\": %.4f, "
        "\"h2d_latency_us\": %.4f, \"d2h_latency_us\": %.4f, \"kernel_launch_us\": %.4f},\n",
        gbs / h2d, gbs / d2h, gbs / d2d, h2d_lat, d2h_lat, launch);
  CUDA_OK(cudaFreeHost(host));
  CUDA_OK(cudaFree(dev));
  CUDA_OK(cudaFree(dev2));
}

void usage() {
  std::printf(
      "usage: fabricsim-bench [--op NAME|all] [-b MIN] [-e MAX] [-f FACTOR] [-g GPUS] [-n ITERS]\n"
      "                       [-w WARMUP] [--out-dir DIR] [--json FILE] [--micro] [--probe]\n"
      "  ops: all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv\n"
      "  --out-dir writes one nccl-tests-format file per op (OP_perf.txt), for fabricsim "
      "calibrate\n"
      "  --probe prints the GPUs found and exits (2 when there is none)\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string op_name = "all_reduce", out_dir, json_path;
  std::uint64_t min_bytes = 8, max_bytes = 128u << 20, factor = 2;
  int ngpus = 0, iters = 20, warmup = 5;
  bool do_micro = false, probe = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> const char* {
      if (i + 1 >= argc) fail(2, "option " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--op")
      op_name = next();
    else if (a == "-b")
      min_bytes = parse_size(next());
    else if (a == "-e")
      max_bytes = parse_size(next());
    else if (a == "-f")
      factor = std::strtoull(next(), nullptr, 10);
    else if (a == "-g")
      ngpus = std::atoi(next());
    else if (a == "-n")
      iters = std::atoi(next());
    else if (a == "-w")
      warmup = std::atoi(next());
    else if (a == "--out-dir")
      out_dir = next();
    else if (a == "--json")
      json_path = next();
    else if (a == "--micro")
      do_micro = true;
    else if (a == "--probe")
      probe = true;
    else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else
      fail(2, "unknown option '" + a + "' (--help lists them)");
  }
  if (factor < 2 || iters < 1 || warmup < 0 || min_bytes > max_bytes)
    fail(2, "need -f >= 2, -n >= 1, -w >= 0 and -b <= -e");
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0)
    fail(2, std::string("no CUDA device (cudaGetDeviceCount: ") +
                (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
  if (ngpus <= 0) ngpus = devices;
  if (ngpus > devices)
    fail(2, "-g " + std::to_string(ngpus) + ": only " + std::to_string(devices) + " GPUs");
  std::vector<std::string> names(ngpus);
  for (int d = 0; d < ngpus; ++d) {
    cudaDeviceProp p{};
    CUDA_OK(cudaGetDeviceProperties(&p, d));
    names[d] = p.name;
  }
  if (probe) {
    for (int d = 0; d < ngpus; ++d) std::printf("GPU %d: %s\n", d, names[d].c_str());
    return 0;
  }
  FILE* json = nullptr;
  if (!json_path.empty() && !(json = std::fopen(json_path.c_str(), "w")))
    fail(2, "cannot write " + json_path);
  int version = 0;
  NCCL_OK(ncclGetVersion(&version));
  if (json)
    std::fprintf(json,
                 "{\n  \"tool\": \"fabricsim-bench\",\n  \"device\": \"%s\",\n  \"gpus\": %d,\n"
                 "  \"nccl_version\": %d,\n",
                 names[0].c_str(), ngpus, version);
  if (do_micro) micro(json);

  std::vector<Gpu> g(ngpus);
  std::vector<int> devs(ngpus);
  for (int r = 0; r < ngpus; ++r) devs[r] = g[r].dev = r;
  std::vector<ncclComm_t> comms(ngpus);
  NCCL_OK(ncclCommInitAll(comms.data(), ngpus, devs.data()));
  const std::size_t max_elems = max_bytes / sizeof(float) + ngpus;
  for (int r = 0; r < ngpus; ++r) {
    g[r].comm = comms[r];
    CUDA_OK(cudaSetDevice(r));
    CUDA_OK(cudaStreamCreate(&g[r].stream));
    CUDA_OK(cudaMalloc(&g[r].send, max_elems * sizeof(float)));
    CUDA_OK(cudaMalloc(&g[r].recv, max_elems * sizeof(float)));
  }
  std::vector<Row> rows;
  std::size_t total_wrong = 0;
  char host[64] = "localhost";
  gethostname(host, sizeof host - 1);
  for (const Op& op : kOps) {
    if (op_name != "all" && op_name != op.name) continue;
    std::string text;
    char line[512];
    const auto add = [&](const char* fmt, auto... args) {
      std::snprintf(line, sizeof line, fmt, args...);
      text += line;
    };
    add("# fabricsim-bench (NCCL %d)\n# Collective test starting: %s_perf\n", version, op.name);
    add("# nThread 1 nGpus %d minBytes %llu maxBytes %llu step: %llu(factor) warmup iters: %d "
        "iters: %d agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n",
        ngpus, (unsigned long long)min_bytes, (unsigned long long)max_bytes,
        (unsigned long long)factor, warmup, iters);
    for (int r = 0; r < ngpus; ++r) {
      cudaDeviceProp p{};
      CUDA_OK(cudaGetDeviceProperties(&p, r));
      add("#  Rank %2d Group  0 Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n", r, (int)getpid(),
          host, r, p.pciDomainID, p.pciBusID, p.pciDeviceID, p.name);
    }
    add("#\n#%58s  out-of-place\n", "");
    add("#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "     time   algbw   busbw  #wrong\n");
    add("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
        "     (us)  (GB/s)  (GB/s)\n");
    double bw_sum = 0;
    int bw_rows = 0;
    for (std::uint64_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
      const std::size_t elems = std::max<std::size_t>(ngpus, bytes / sizeof(float));
      for (int r = 0; r < ngpus; ++r) {
        CUDA_OK(cudaSetDevice(r));
        fill<<<128, 256, 0, g[r].stream>>>(g[r].send, max_elems, float(r + 1));
        CUDA_OK(cudaGetLastError());
      }
      for (int w = 0; w < warmup; ++w) launch(op.name, g, elems);
      for (int r = 0; r < ngpus; ++r) {
        CUDA_OK(cudaSetDevice(r));
        CUDA_OK(cudaStreamSynchronize(g[r].stream));
      }
      std::vector<cudaEvent_t> start(ngpus), stop(ngpus);
      for (int r = 0; r < ngpus; ++r) {
        CUDA_OK(cudaSetDevice(r));
        CUDA_OK(cudaEventCreate(&start[r]));
        CUDA_OK(cudaEventCreate(&stop[r]));
        CUDA_OK(cudaEventRecord(start[r], g[r].stream));
      }
      for (int it = 0; it < iters; ++it) launch(op.name, g, elems);
      double us = 0;
      for (int r = 0; r < ngpus; ++r) {
        CUDA_OK(cudaSetDevice(r));
        CUDA_OK(cudaEventRecord(stop[r], g[r].stream));
        CUDA_OK(cudaEventSynchronize(stop[r]));
        float ms = 0;
        CUDA_OK(cudaEventElapsedTime(&ms, start[r], stop[r]));
        us += ms * 1e3 / iters / ngpus;  // mean over ranks, as nccl-tests -a 1
        CUDA_OK(cudaEventDestroy(start[r]));
        CUDA_OK(cudaEventDestroy(stop[r]));
      }
      std::size_t bad = 0;
      for (int r = 0; r < ngpus; ++r) bad += wrong(op.name, g[r], r, ngpus, elems);
      total_wrong += bad;
      const double algbw = static_cast<double>(bytes) / (us * 1e3);
      const double busbw = algbw * op.bus_factor(ngpus);
      bw_sum += busbw;
      ++bw_rows;
      add("%12llu  %12llu  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f  %6zu  %7.2f  %6.2f  %6.2f  %6s\n",
          (unsigned long long)bytes, (unsigned long long)(bytes / sizeof(float)), "float",
          op.reduces ? "sum" : "none", op.rooted ? 0 : -1, us, algbw, busbw, bad, us, algbw, busbw,
          "N/A");
      rows.push_back({op.name, bytes, us, algbw, busbw, bad});
    }
    add("# Out of bounds values : %zu %s\n# Avg bus bandwidth    : %g \n#\n"
        "# Collective test concluded: %s_perf\n",
        total_wrong, total_wrong ? "FAILED" : "OK", bw_rows ? bw_sum / bw_rows : 0.0, op.name);
    std::fputs(text.c_str(), stdout);
    if (!out_dir.empty()) {
      const std::string path = out_dir + "/" + op.name + "_perf.txt";
      FILE* f = std::fopen(path.c_str(), "w");
      if (!f) fail(2, "cannot write " + path);
      std::fputs(text.c_str(), f);
      std::fclose(f);
    }
  }
  if (json) {
    std::fprintf(json, "  \"collectives\": [\n");
    for (std::size_t i = 0; i < rows.size(); ++i)
      std::fprintf(json,
                   "    {\"op\": \"%s\", \"bytes\": %llu, \"time_us\": %.4f, \"algbw_gbs\": %.4f, "
                   "\"busbw_gbs\": %.4f, \"wrong\": %zu}%s\n",
                   rows[i].op.c_str(), (unsigned long long)rows[i].bytes, rows[i].time_us,
                   rows[i].algbw, rows[i].busbw, rows[i].wrong, i + 1 < rows.size() ? "," : "");
    std::fprintf(json, "  ]\n}\n");
    std::fclose(json);
  }
  for (int r = 0; r < ngpus; ++r) {
    ncclCommDestroy(comms[r]);
    cudaSetDevice(r);
    cudaFree(g[r].send);
    cudaFree(g[r].recv);
    cudaStreamDestroy(g[r].stream);
  }
  if (rows.empty()) fail(2, "unknown --op '" + op_name + "' (--help lists them)");
  if (total_wrong > 0) fail(1, std::to_string(total_wrong) + " wrong result elements: see #wrong");
  return 0;
}
