#include "scenario/nccl_env.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <stdexcept>

#include "scenario/config_tree.hpp"
#include "scenario/schema.hpp"

namespace fabricsim {

namespace {

// Variables that change what NCCL logs, dumps or which interface its bootstrap uses, nothing a
// simulated run has: they get a note rather than a "not modelled" warning.
constexpr std::string_view kNoEffect[] = {"NCCL_DEBUG",
                                          "NCCL_DEBUG_FILE",
                                          "NCCL_DEBUG_SUBSYS",
                                          "NCCL_DEBUG_TIMESTAMP_LEVELS",
                                          "NCCL_SET_THREAD_NAME",
                                          "NCCL_WARN_ENABLE_DEBUG_INFO",
                                          "NCCL_PARAM_DUMP_ALL",
                                          "NCCL_GRAPH_DUMP_FILE",
                                          "NCCL_GRAPH_DUMP_FILE_RANK",
                                          "NCCL_TOPO_DUMP_FILE",
                                          "NCCL_TOPO_DUMP_FILE_RANK",
                                          "NCCL_NVTX_DISABLE",
                                          "NCCL_SOCKET_IFNAME",
                                          "NCCL_OOB_NET_IFNAME",
                                          "NCCL_COMM_ID",
                                          "NCCL_HOSTID",
                                          "NCCL_ENABLE_VERSION_CHECK",
                                          "NCCL_REPORT_CONNECT_PROGRESS"};

}  // namespace

const std::vector<std::string_view>& nccl_variable_names() {
  static const std::vector<std::string_view> names{
      "NCCL_ALGO",
      "NCCL_ALLGATHERV_ENABLE",
      "NCCL_ALLOC_P2P_NET_LL_BUFFERS",
      "NCCL_BUFFSIZE",
      "NCCL_CGA_CLUSTER_SIZE",
      "NCCL_CHECK_MODE",
      "NCCL_CHECK_POINTERS",
      "NCCL_CHUNK_SIZE",
      "NCCL_COLLNET_ENABLE",
      "NCCL_COLLNET_NODE_THRESHOLD",
      "NCCL_COMM_BLOCKING",
      "NCCL_COMM_ID",
      "NCCL_COMM_SHRINK_SHARE_RESOURCES",
      "NCCL_COMM_SPLIT_SHARE_RESOURCES",
      "NCCL_CONF_FILE",
      "NCCL_CONNECT_ROUND_MAX_PEERS",
      "NCCL_CROSS_NIC",
      "NCCL_CTA_POLICY",
      "NCCL_CUMEM_ENABLE",
      "NCCL_CUMEM_HOST_ENABLE",
      "NCCL_DEBUG",
      "NCCL_DEBUG_FILE",
      "NCCL_DEBUG_SUBSYS",
      "NCCL_DEBUG_TIMESTAMP_LEVELS",
      "NCCL_DEV_API_JIT",
      "NCCL_DISABLE_MEM_MANAGER",
      "NCCL_DMABUF_ENABLE",
      "NCCL_ELASTIC_BUFFER_REGISTER",
      "NCCL_ENABLE_VERSION_CHECK",
      "NCCL_ENV_PLUGIN",
      "NCCL_GDAKI_USE_RELIABLE_DB",
      "NCCL_GDRCOPY_ENABLE",
      "NCCL_GDRCOPY_FIFO_ENABLE",
      "NCCL_GDRCOPY_FLUSH_ENABLE",
      "NCCL_GDRCOPY_SYNC_ENABLE",
      "NCCL_GDR_FLUSH_DISABLE",
      "NCCL_GIN_ENABLE",
      "NCCL_GIN_ERROR_QUERY_SEC",
      "NCCL_GIN_GDAKI_MAX_DEST_RD_ATOMIC",
      "NCCL_GIN_GDAKI_MAX_QP_RD_ATOMIC",
      "NCCL_GIN_GDAKI_NIC_HANDLER",
      "NCCL_GIN_GDAKI_QP_DEPTH",
      "NCCL_GIN_IB_TC",
      "NCCL_GIN_NCONNECTIONS",
      "NCCL_GIN_PLUGIN",
      "NCCL_GIN_PLUGIN_REF_COUNT",
      "NCCL_GIN_PROXY_QUEUE_SIZE",
      "NCCL_GIN_TYPE",
      "NCCL_GRAPH_DUMP_FILE",
      "NCCL_GRAPH_DUMP_FILE_RANK",
      "NCCL_GRAPH_FILE",
      "NCCL_GRAPH_HELPER_DISABLE",
      "NCCL_GRAPH_MIXING_SUPPORT",
      "NCCL_GRAPH_REGISTER",
      "NCCL_GRAPH_STREAM_ORDERING",
      "NCCL_GROUP_CUDA_STREAM",
      "NCCL_HOSTID",
      "NCCL_IBVERBS_LIB",
      "NCCL_IB_ADAPTIVE_ROUTING",
      "NCCL_IB_ADDR_FAMILY",
      "NCCL_IB_ADDR_RANGE",
      "NCCL_IB_AR_THRESHOLD",
      "NCCL_IB_DATA_DIRECT",
      "NCCL_IB_DEVICE_PCI_ORDER",
      "NCCL_IB_DISABLE",
      "NCCL_IB_ECE_ENABLE",
      "NCCL_IB_FIFO_TC",
      "NCCL_IB_GID_INDEX",
      "NCCL_IB_HCA",
      "NCCL_IB_MERGE_NICS",
      "NCCL_IB_MERGE_VFS",
      "NCCL_IB_MQP_RETRY_ALL",
      "NCCL_IB_MQP_RETRY_CNT",
      "NCCL_IB_MQP_RETRY_SLEEP_MSEC",
      "NCCL_IB_OOO_RQ",
      "NCCL_IB_PCI_RELAXED_ORDERING",
      "NCCL_IB_PKEY",
      "NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS",
      "NCCL_IB_QPS_PER_CONNECTION",
      "NCCL_IB_QUERY_PORT_SPEED",
      "NCCL_IB_RECEIVER_SIDE_MATCHING_SCHEME",
      "NCCL_IB_RESILIENCY_PORT_FAILOVER",
      "NCCL_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS",
      "NCCL_IB_RESILIENCY_PORT_FAILOVER_PROBE_DELAY",
      "NCCL_IB_RESILIENCY_PORT_RECOVERY",
      "NCCL_IB_RESILIENCY_PORT_RECOVERY_ACK_TIMEOUT",
      "NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_INTERVAL",
      "NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_SIZE",
      "NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_SEQUENCE_SIZE",
      "NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_TIMEOUT",
      "NCCL_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX",
      "NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY",
      "NCCL_IB_RETRY_CNT",
      "NCCL_IB_RETURN_ASYNC_EVENTS",
      "NCCL_IB_ROCE_VERSION_NUM",
      "NCCL_IB_ROUTABLE_FLID_GID_INDEX",
      "NCCL_IB_SL",
      "NCCL_IB_SPLIT_DATA_ON_QPS",
      "NCCL_IB_SUBNET_AWARE_ROUTING",
      "NCCL_IB_SUBNET_PREFIX_LEN",
      "NCCL_IB_TC",
      "NCCL_IB_TIMEOUT",
      "NCCL_IB_USE_INLINE",
      "NCCL_IB_WARN_RAIL_LOCAL",
      "NCCL_IGNORE_COLLNET_MISMATCH",
      "NCCL_IGNORE_CPU_AFFINITY",
      "NCCL_IGNORE_DISABLED_P2P",
      "NCCL_IGNORE_NET_MISMATCH",
      "NCCL_IPC_USE_ABSTRACT_SOCKET",
      "NCCL_L1_SHARED_MEMORY_CARVEOUT",
      "NCCL_LAUNCH_MODE",
      "NCCL_LAUNCH_ORDER_IMPLICIT",
      "NCCL_LAUNCH_RACE_FATAL",
      "NCCL_LEGACY_CUDA_REGISTER",
      "NCCL_LL128_BUFFSIZE",
      "NCCL_LL128_C2C",
      "NCCL_LL128_NTHREADS",
      "NCCL_LL_BUFFSIZE",
      "NCCL_LOCAL_REGISTER",
      "NCCL_LSA_TEAM_SIZE",
      "NCCL_MAX_CTAS",
      "NCCL_MAX_NCHANNELS",
      "NCCL_MAX_NRINGS",
      "NCCL_MAX_P2P_NCHANNELS",
      "NCCL_MEM_SYNC_DOMAIN",
      "NCCL_MIN_CTAS",
      "NCCL_MIN_NCHANNELS",
      "NCCL_MIN_NRINGS",
      "NCCL_MIN_P2P_NCHANNELS",
      "NCCL_MLOPART_RDMA_ENABLE",
      "NCCL_MNNVL_CLIQUE_ID",
      "NCCL_MNNVL_CROSS_CLIQUE",
      "NCCL_MNNVL_ENABLE",
      "NCCL_MNNVL_RAIL_PER_HOST",
      "NCCL_MNNVL_SCATTER_NETS_ENABLE",
      "NCCL_MNNVL_UUID",
      "NCCL_MULTI_RANK_GPU_ENABLE",
      "NCCL_MULTI_SEGMENT_REGISTER",
      "NCCL_NCHANNELS_PER_NET_PEER",
      "NCCL_NET",
      "NCCL_NETDEVS_POLICY",
      "NCCL_NET_DISABLE_INTRA",
      "NCCL_NET_FORCE_FLUSH",
      "NCCL_NET_FORCE_MERGE",
      "NCCL_NET_GDR_C2C",
      "NCCL_NET_GDR_LEVEL",
      "NCCL_NET_GDR_MLOPART",
      "NCCL_NET_GDR_READ",
      "NCCL_NET_MERGE_LEVEL",
      "NCCL_NET_MERGE_POLICY",
      "NCCL_NET_OPTIONAL_RECV_COMPLETION",
      "NCCL_NET_OVERHEAD",
      "NCCL_NET_PLUGIN",
      "NCCL_NET_PLUGIN_REF_COUNT",
      "NCCL_NET_SHARED_BUFFERS",
      "NCCL_NET_SHARED_COMMS",
      "NCCL_NSOCKS_PERTHREAD",
      "NCCL_NTHREADS",
      "NCCL_NUM_RMA_CTX",
      "NCCL_NVB_DISABLE",
      "NCCL_NVB_PRECONNECT",
      "NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE",
      "NCCL_NVLSTREE_MAX_CHUNKSIZE",
      "NCCL_NVLS_CHUNKSIZE",
      "NCCL_NVLS_ENABLE",
      "NCCL_NVLS_NCHANNELS",
      "NCCL_NVTX_DISABLE",
      "NCCL_OOB_NET_ENABLE",
      "NCCL_OOB_NET_IFNAME",
      "NCCL_P2P_DIRECT_DISABLE",
      "NCCL_P2P_DISABLE",
      "NCCL_P2P_EPOCH_ENABLE",
      "NCCL_P2P_LEVEL",
      "NCCL_P2P_LL_THRESHOLD",
      "NCCL_P2P_MAX_PEERS",
      "NCCL_P2P_NET_CHUNKSIZE",
      "NCCL_P2P_NVL_CHUNKSIZE",
      "NCCL_P2P_PCI_CHUNKSIZE",
      "NCCL_P2P_PER_CHANNEL_NET_BW",
      "NCCL_P2P_PXN_LEVEL",
      "NCCL_P2P_READ_ENABLE",
      "NCCL_P2P_SCHEDULE_GROUP_SIZE",
      "NCCL_P2P_USE_CUDA_MEMCPY",
      "NCCL_PARAM_DUMP_ALL",
      "NCCL_PAT_ENABLE",
      "NCCL_PROFILER_PLUGIN",
      "NCCL_PROGRESS_APPENDOP_FREQ",
      "NCCL_PROTO",
      "NCCL_PROXY_APPEND_BATCH_SIZE",
      "NCCL_PROXY_CPUSET",
      "NCCL_PROXY_DUMP_SIGNAL",
      "NCCL_PXN_C2C",
      "NCCL_PXN_DISABLE",
      "NCCL_RAS_ADDR",
      "NCCL_RAS_ENABLE",
      "NCCL_RAS_TIMEOUT_FACTOR",
      "NCCL_REPORT_CONNECT_PROGRESS",
      "NCCL_RMA_DISABLE",
      "NCCL_RMA_PLUGIN",
      "NCCL_RMA_PLUGIN_REF_COUNT",
      "NCCL_RMA_PROXY_DUMP_SIGNAL",
      "NCCL_RMA_PROXY_QUEUE_SIZE",
      "NCCL_RUNTIME_CONNECT",
      "NCCL_SET_CPU_STACK_SIZE",
      "NCCL_SET_STACK_SIZE",
      "NCCL_SET_THREAD_NAME",
      "NCCL_SHADOW_MEMPOOL_MAX_SIZE",
      "NCCL_SHM_DISABLE",
      "NCCL_SHM_LOCALITY",
      "NCCL_SINGLE_PROC_MEM_REG_ENABLE",
      "NCCL_SOCKET_FAMILY",
      "NCCL_SOCKET_IFNAME",
      "NCCL_SOCKET_INLINE",
      "NCCL_SOCKET_MAGIC",
      "NCCL_SOCKET_MIN_TASKSIZE",
      "NCCL_SOCKET_NTHREADS",
      "NCCL_SOCKET_POLL_TIMEOUT_MSEC",
      "NCCL_SOCKET_RCVBUF",
      "NCCL_SOCKET_RETRY_CNT",
      "NCCL_SOCKET_RETRY_SLEEP_MSEC",
      "NCCL_SOCKET_SNDBUF",
      "NCCL_SYM_CE_THRESHOLD",
      "NCCL_SYM_CTAS",
      "NCCL_SYM_GIN_KERNELS_ENABLE",
      "NCCL_SYM_KERNEL",
      "NCCL_SYM_NOWIN_ENABLE",
      "NCCL_SYM_REUSE_SYSMEM_HANDLES",
      "NCCL_SYM_RS_GIN_CHUNK_SIZE",
      "NCCL_SYM_TMA_ENABLE",
      "NCCL_THREAD_THRESHOLDS",
      "NCCL_TOPO_DUMP_FILE",
      "NCCL_TOPO_DUMP_FILE_RANK",
      "NCCL_TOPO_FILE",
      "NCCL_TOPO_SPLIT_MLOPART",
      "NCCL_TUNER_PLUGIN",
      "NCCL_UID_STAGGER_RATE",
      "NCCL_UID_STAGGER_THRESHOLD",
      "NCCL_UNPACK_DOUBLE_NCHANNELS",
      "NCCL_WARN_ENABLE_DEBUG_INFO",
      "NCCL_WIN_ENABLE",
      "NCCL_WIN_STRIDE",
      "NCCL_WORK_ARGS_BYTES",
      "NCCL_WORK_FIFO_BYTES"};
  return names;
}

std::pair<std::string, std::string> split_assignment(std::string_view assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw std::invalid_argument(
        fmt::format("'{}': expected NAME=VALUE, e.g. NCCL_ALGO=Ring", assignment));
  return {std::string(assignment.substr(0, eq)), std::string(assignment.substr(eq + 1))};
}

std::vector<std::pair<std::string, std::string>> nccl_variables(const char* const* envp) {
  std::vector<std::pair<std::string, std::string>> out;
  for (; envp != nullptr && *envp != nullptr; ++envp) {
    const std::string_view entry(*envp);
    if (!entry.starts_with("NCCL_") || entry.find('=') == std::string_view::npos) continue;
    out.push_back(split_assignment(entry));
  }
  return out;
}

NcclEnvironment nccl_environment(const std::vector<std::pair<std::string, std::string>>& vars) {
  NcclEnvironment env;
  const auto& known = nccl_variable_names();
  for (const auto& [name, value] : vars) {
    if (!name.starts_with("NCCL_")) continue;
    if (find_scenario_key("nccl." + name) != nullptr) {
      env.overrides.push_back(fmt::format("nccl.{}={}", name, value));
    } else if (std::binary_search(known.begin(), known.end(), name)) {
      const bool no_effect =
          std::find(std::begin(kNoEffect), std::end(kNoEffect), name) != std::end(kNoEffect);
      env.warnings.push_back(
          no_effect ? fmt::format("{}={}: NCCL's own logging or set-up; nothing simulated "
                                  "depends on it",
                                  name, value)
                    : fmt::format("{}={}: NCCL reads it, but fabricsim does not model it; the "
                                  "run ignores it",
                                  name, value));
    } else {
      const std::vector<std::string> candidates(known.begin(), known.end());
      const auto near = nearest_key(name, candidates);
      env.warnings.push_back(
          fmt::format("{}={}: not a variable NCCL reads{}; ignored", name, value,
                      near ? fmt::format(" (did you mean {}?)", *near) : std::string{}));
    }
  }
  return env;
}

}  // namespace fabricsim
