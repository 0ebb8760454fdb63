// fabricsim-bench: what calibration needs, measured on real GPUs (built only when the CUDA
// Toolkit and NCCL are found). Like nccl-tests, each process drives -g local GPUs: one process
// on its own (ncclCommInitAll), or several under mpirun when built with MPI (one NCCL
// communicator over every process's GPUs, ncclCommInitRank; process p on a host uses that
// host's GPUs p*g .. p*g+g-1):
//   - collectives swept over sizes (-b -e -f), timed with CUDA events after warm-up, results
//     checked, printed in nccl-tests' format (so `fabricsim calibrate` reads them) and, with
//     --json, as JSON (bench_report.hpp; `fabricsim calibrate` reads that too);
//   - with --micro, single-GPU figures: pinned host<->device copy bandwidth and latency over
//     PCIe, device-to-device bandwidth, kernel launch latency.
// Every error ends the run with a message naming what failed (no GPU: exit 2; a CUDA or NCCL
// failure, or wrong results: exit 1); under MPI the failing process aborts the job.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>
#if FABRICSIM_BENCH_MPI
#include <mpi.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_report.hpp"

namespace {

// This process's place in the job (one process, rank 0, without MPI).
int g_process = 0, g_processes = 1;

// Ends MPI when this process started it (a lone process under mpirun too).
void finalize_mpi() {
#if FABRICSIM_BENCH_MPI
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) MPI_Finalize();
#endif
}

[[noreturn]] void fail(int code, const std::string& what) {
  if (g_processes > 1)
    std::fprintf(stderr, "fabricsim-bench (process %d of %d): %s\n", g_process, g_processes,
                 what.c_str());
  else
    std::fprintf(stderr, "fabricsim-bench: %s\n", what.c_str());
#if FABRICSIM_BENCH_MPI
  // The other processes would wait forever in the next collective.
  if (g_processes > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  finalize_mpi();
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
  int rank = 0;  // in the communicator (over all processes)
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

// One operation on every local GPU of a communicator of n ranks.
void launch(const std::string& op, std::vector<Gpu>& g, int n, std::size_t elems) {
  const Counts c = counts(op, elems, n);
  NCCL_OK(ncclGroupStart());
  for (Gpu& x : g) {
    const int r = x.rank;
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

// Elements of x's receive buffer that differ from what the operation must produce, with rank
// q's send buffer filled with q + 1.
std::size_t wrong(const std::string& op, const Gpu& x, int n, std::size_t elems) {
  const int r = x.rank;
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

// Single-GPU figures on `device`.
fabricsim::bench::Micro micro(int device) {
  CUDA_OK(cudaSetDevice(device));
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
  const double gbs = static_cast<double>(big) / 1e3;  // bytes per us -> GB/s
  fabricsim::bench::Micro m;
  m.h2d_gbs =
      gbs /
      time_us([&] { CUDA_OK(cudaMemcpyAsync(dev, host, big, cudaMemcpyHostToDevice, s)); }, 10);
  m.d2h_gbs =
      gbs /
      time_us([&] { CUDA_OK(cudaMemcpyAsync(host, dev, big, cudaMemcpyDeviceToHost, s)); }, 10);
  m.d2d_gbs =
      gbs /
      time_us([&] { CUDA_OK(cudaMemcpyAsync(dev2, dev, big, cudaMemcpyDeviceToDevice, s)); }, 10);
  m.h2d_latency_us =
      time_us([&] { CUDA_OK(cudaMemcpyAsync(dev, host, 8, cudaMemcpyHostToDevice, s)); }, 1000);
  m.d2h_latency_us =
      time_us([&] { CUDA_OK(cudaMemcpyAsync(host, dev, 8, cudaMemcpyDeviceToHost, s)); }, 1000);
  m.kernel_launch_us = time_us(
      [&] {
        empty_kernel<<<1, 1, 0, s>>>();
        CUDA_OK(cudaGetLastError());
      },
      10000);
  std::printf(
      "# micro: h2d %.2f GB/s, d2h %.2f GB/s, d2d %.2f GB/s (read + write %.2f), "
      "h2d latency %.2f us, d2h latency %.2f us, kernel launch %.2f us\n",
      m.h2d_gbs, m.d2h_gbs, m.d2d_gbs, 2 * m.d2d_gbs, m.h2d_latency_us, m.d2h_latency_us,
      m.kernel_launch_us);
  CUDA_OK(cudaFreeHost(host));
  CUDA_OK(cudaFree(dev));
  CUDA_OK(cudaFree(dev2));
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  CUDA_OK(cudaStreamDestroy(s));
  return m;
}

void usage() {
  std::printf(
      "usage: fabricsim-bench [--op NAME|all] [-b MIN] [-e MAX] [-f FACTOR] [-g GPUS] [-n ITERS]\n"
      "                       [-w WARMUP] [--out-dir DIR] [--json FILE] [--micro] [--probe]\n"
      "  ops: all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv\n"
      "  -g: GPUs per process (default: all of this host's, divided among its processes)\n"
      "  --out-dir writes one nccl-tests-format file per op (OP_perf.txt), for fabricsim "
      "calibrate\n"
      "  --probe prints the GPUs found and exits (2 when there is none)\n"
      "  under mpirun (when built with MPI) the processes form one communicator; process 0 "
      "writes\n");
}

// ---- the job: one process, or MPI processes (sums and gathers are identities without MPI)

#if FABRICSIM_BENCH_MPI
bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}
#endif

// Processes on this host before this one (their GPUs come first), and how many share it.
struct HostPlace {
  int index = 0, count = 1;
};

HostPlace host_place() {
  HostPlace h;
#if FABRICSIM_BENCH_MPI
  if (g_processes > 1) {
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_process, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &h.index);
    MPI_Comm_size(local, &h.count);
    MPI_Comm_free(&local);
  }
#endif
  return h;
}

double sum_over_processes(double v) {
#if FABRICSIM_BENCH_MPI
  if (g_processes > 1) MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#endif
  return v;
}

// Every process's text, concatenated in process order, on process 0.
std::string gather_text(const std::string& mine) {
#if FABRICSIM_BENCH_MPI
  if (g_processes > 1) {
    const int len = static_cast<int>(mine.size());
    std::vector<int> lens(g_processes), offsets(g_processes);
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    int total = 0;
    for (int p = 0; p < g_processes; ++p) {
      offsets[p] = total;
      total += lens[p];
    }
    std::string all(g_process == 0 ? total : 0, '\0');
    MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0,
                MPI_COMM_WORLD);
    return all;
  }
#endif
  return mine;
}

ncclUniqueId shared_unique_id() {
  ncclUniqueId id{};
  if (g_process == 0) NCCL_OK(ncclGetUniqueId(&id));
#if FABRICSIM_BENCH_MPI
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
#endif
  return id;
}

}  // namespace

int main(int argc, char** argv) {
#if FABRICSIM_BENCH_MPI
  if (launched_by_mpirun()) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_process);
    MPI_Comm_size(MPI_COMM_WORLD, &g_processes);
  }
#endif
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
      if (g_process == 0) usage();
      finalize_mpi();
      return 0;
    } else
      fail(2, "unknown option '" + a + "' (--help lists them)");
  }
  if (factor < 2 || iters < 1 || warmup < 0 || min_bytes > max_bytes)
    fail(2, "need -f >= 2, -n >= 1, -w >= 0 and -b <= -e");
  bool known_op = op_name == "all";
  for (const Op& op : kOps) known_op |= op_name == op.name;
  if (!known_op) fail(2, "unknown --op '" + op_name + "' (--help lists them)");
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0)
    fail(2, std::string("no CUDA device (cudaGetDeviceCount: ") +
                (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
  const HostPlace place = host_place();
  if (ngpus <= 0) ngpus = devices / place.count;
  const int first_dev = place.index * ngpus;
  if (ngpus <= 0 || first_dev + ngpus > devices)
    fail(2, "-g " + std::to_string(ngpus) + " GPUs for each of " + std::to_string(place.count) +
                " processes on this host: it has " + std::to_string(devices) + " GPUs");
  std::vector<std::string> names(ngpus);
  for (int i = 0; i < ngpus; ++i) {
    cudaDeviceProp p{};
    CUDA_OK(cudaGetDeviceProperties(&p, first_dev + i));
    names[i] = p.name;
  }
  if (probe) {
    for (int i = 0; i < ngpus; ++i) std::printf("GPU %d: %s\n", first_dev + i, names[i].c_str());
    finalize_mpi();
    return 0;
  }
  const bool writer = g_process == 0;
  // Opened now, so an unwritable path ends the run before it measures.
  FILE* json = nullptr;
  if (writer && !json_path.empty() && !(json = std::fopen(json_path.c_str(), "w")))
    fail(2, "cannot write " + json_path);
  const int nranks = ngpus * g_processes;
  fabricsim::bench::Report report;
  report.device = names[0];
  report.gpus = ngpus;
  report.processes = g_processes;
  NCCL_OK(ncclGetVersion(&report.nccl_version));
  if (do_micro && writer) report.micro = micro(first_dev);

  std::vector<Gpu> g(ngpus);
  std::vector<ncclComm_t> comms(ngpus);
  if (g_processes == 1) {
    std::vector<int> devs(ngpus);
    for (int i = 0; i < ngpus; ++i) devs[i] = first_dev + i;
    NCCL_OK(ncclCommInitAll(comms.data(), ngpus, devs.data()));
  } else {
    const ncclUniqueId id = shared_unique_id();
    NCCL_OK(ncclGroupStart());
    for (int i = 0; i < ngpus; ++i) {
      CUDA_OK(cudaSetDevice(first_dev + i));
      NCCL_OK(ncclCommInitRank(&comms[i], nranks, id, g_process * ngpus + i));
    }
    NCCL_OK(ncclGroupEnd());
  }
  const std::size_t max_elems = max_bytes / sizeof(float) + nranks;
  char host[64] = "localhost";
  gethostname(host, sizeof host - 1);
  std::string rank_lines;  // "#  Rank ..." of this process's GPUs
  for (int i = 0; i < ngpus; ++i) {
    Gpu& x = g[i];
    x.dev = first_dev + i;
    x.rank = g_process * ngpus + i;
    x.comm = comms[i];
    CUDA_OK(cudaSetDevice(x.dev));
    CUDA_OK(cudaStreamCreate(&x.stream));
    CUDA_OK(cudaMalloc(&x.send, max_elems * sizeof(float)));
    CUDA_OK(cudaMalloc(&x.recv, max_elems * sizeof(float)));
    cudaDeviceProp p{};
    CUDA_OK(cudaGetDeviceProperties(&p, x.dev));
    char line[256];
    std::snprintf(line, sizeof line,
                  "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n", x.rank,
                  (int)getpid(), host, x.dev, p.pciDomainID, p.pciBusID, p.pciDeviceID, p.name);
    rank_lines += line;
  }
  rank_lines = gather_text(rank_lines);
  std::uint64_t total_wrong = 0;
  for (const Op& op : kOps) {
    if (op_name != "all" && op_name != op.name) continue;
    std::string text;
    char line[512];
    const auto add = [&](const char* fmt, auto... args) {
      std::snprintf(line, sizeof line, fmt, args...);
      text += line;
    };
    add("# fabricsim-bench (NCCL %d)\n# Collective test starting: %s_perf\n", report.nccl_version,
        op.name);
    add("# nThread 1 nGpus %d minBytes %llu maxBytes %llu step: %llu(factor) warmup iters: %d "
        "iters: %d agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n",
        ngpus, (unsigned long long)min_bytes, (unsigned long long)max_bytes,
        (unsigned long long)factor, warmup, iters);
    text += rank_lines;
    add("#\n#%58s  out-of-place\n", "");
    add("#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "     time   algbw   busbw  #wrong\n");
    add("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
        "     (us)  (GB/s)  (GB/s)\n");
    double bw_sum = 0;
    int bw_rows = 0;
    std::uint64_t op_wrong = 0;
    for (std::uint64_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
      const std::size_t elems = std::max<std::size_t>(nranks, bytes / sizeof(float));
      for (Gpu& x : g) {
        CUDA_OK(cudaSetDevice(x.dev));
        fill<<<128, 256, 0, x.stream>>>(x.send, max_elems, float(x.rank + 1));
        CUDA_OK(cudaGetLastError());
      }
      for (int w = 0; w < warmup; ++w) launch(op.name, g, nranks, elems);
      for (Gpu& x : g) {
        CUDA_OK(cudaSetDevice(x.dev));
        CUDA_OK(cudaStreamSynchronize(x.stream));
      }
      std::vector<cudaEvent_t> start(ngpus), stop(ngpus);
      for (int i = 0; i < ngpus; ++i) {
        CUDA_OK(cudaSetDevice(g[i].dev));
        CUDA_OK(cudaEventCreate(&start[i]));
        CUDA_OK(cudaEventCreate(&stop[i]));
        CUDA_OK(cudaEventRecord(start[i], g[i].stream));
      }
      for (int it = 0; it < iters; ++it) launch(op.name, g, nranks, elems);
      double us = 0;  // summed over this process's ranks
      for (int i = 0; i < ngpus; ++i) {
        CUDA_OK(cudaSetDevice(g[i].dev));
        CUDA_OK(cudaEventRecord(stop[i], g[i].stream));
        CUDA_OK(cudaEventSynchronize(stop[i]));
        float ms = 0;
        CUDA_OK(cudaEventElapsedTime(&ms, start[i], stop[i]));
        us += ms * 1e3 / iters;
        CUDA_OK(cudaEventDestroy(start[i]));
        CUDA_OK(cudaEventDestroy(stop[i]));
      }
      us = sum_over_processes(us) / nranks;  // mean over ranks, as nccl-tests -a 1
      double bad = 0;
      for (const Gpu& x : g) bad += static_cast<double>(wrong(op.name, x, nranks, elems));
      const auto wrong_here = static_cast<std::uint64_t>(sum_over_processes(bad));
      op_wrong += wrong_here;
      const double algbw = static_cast<double>(bytes) / (us * 1e3);
      const double busbw = algbw * op.bus_factor(nranks);
      bw_sum += busbw;
      ++bw_rows;
      add("%12llu  %12llu  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f  %6llu  %7.2f  %6.2f  %6.2f  %6s\n",
          (unsigned long long)bytes, (unsigned long long)(bytes / sizeof(float)), "float",
          op.reduces ? "sum" : "none", op.rooted ? 0 : -1, us, algbw, busbw,
          (unsigned long long)wrong_here, us, algbw, busbw, "N/A");
      report.collectives.push_back({op.name, bytes, us, algbw, busbw, wrong_here});
    }
    total_wrong += op_wrong;
    add("# Out of bounds values : %llu %s\n# Avg bus bandwidth    : %g \n#\n"
        "# Collective test concluded: %s_perf\n",
        (unsigned long long)op_wrong, op_wrong ? "FAILED" : "OK", bw_rows ? bw_sum / bw_rows : 0.0,
        op.name);
    if (!writer) continue;
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
    std::fputs(fabricsim::bench::to_json(report).c_str(), json);
    std::fclose(json);
  }
  for (int i = 0; i < ngpus; ++i) {
    ncclCommDestroy(comms[i]);
    cudaSetDevice(g[i].dev);
    cudaFree(g[i].send);
    cudaFree(g[i].recv);
    cudaStreamDestroy(g[i].stream);
  }
  if (total_wrong > 0) fail(1, std::to_string(total_wrong) + " wrong result elements: see #wrong");
  finalize_mpi();
  return 0;
}
