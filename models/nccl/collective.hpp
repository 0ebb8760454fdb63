#pragma once
// NCCL collectives executed as real traffic on a fabric backend.
//
// A collective becomes, per rank and channel, the sequence of primitives NCCL's kernels run
// (send, recvReduceSend, recvReduceCopySend, recvCopySend, recv, ...), one per slice, grouped
// into streams (one thread block's work: a ring channel has one stream per rank, a tree channel
// an up and a down stream per rank, as NCCL's split tree kernel runs reduce and broadcast in
// separate warps). A stream executes its primitives in order; primitive k may start when
//   - the previous primitive of its stream has finished,
//   - every slice it receives has arrived (connection by connection, in order),
//   - every connection it sends on has a free slot in the receiver's buffer (credits:
//     NCCL_STEPS / sliceSteps slices outstanding; a slot frees when the receiving primitive
//     has finished with it), and
//   - (tree root) the reduction of the same chunk has finished.
// It then takes the step latency (protocol, link class of its first send, else of its
// receive; for the network only its GPU side, the NVLink figure, while the rest, the proxy's
// hand-off to the NIC, delays the network send without holding the block) and copies its
// data at
//   copy rate = min(per-block rate, HBM / (accesses x blocks)),
// with accesses 3 for a reduction (two reads, one write) and 2 for a copy, and blocks the
// collective's channels (they share the GPU's HBM). Network sends are posted when the copy
// (into the proxy's buffer) is done. In-server sends (NVLink, PCIe peer to peer) are the copy:
// the block stores straight into the peer's buffer, so they are posted after the step
// latency and the primitive ends when both its copy time has passed and they have arrived. Wire
// bytes are data x the protocol's factor (LL 2, LL128 128/120). A send's slice arrives when the
// fabric delivers its last byte (GPU memory to GPU memory: NVLink, PCIe, NIC, network).
// Transfers of one connection stay in order: over the network they are messages on one queue
// pair; inside a server the next one starts when the previous has arrived.
//
// Ring: data of a channel goes in loops of n x chunk; AllReduce takes 2(n-1) steps per chunk
// (reduce-scatter then all-gather), ReduceScatter and AllGather n-1, Broadcast and Reduce a
// chain of n-1 hops from / to the root. Tree (AllReduce only): channel c uses the double binary
// tree's tree c mod 2 across servers, chains inside servers. NVLS (AllReduce inside one
// server with NVSwitches): scatter, in-switch reduction, multicast and gather through the
// NVSwitch's pseudo-ranks of models/nccl/plan.hpp, whose operations take no thread block and
// run at the multimem rate (nvls_seconds). CollNet (AllReduce across servers whose switches
// aggregate, SHARP): the heads' partial sums through aggregation trees whose nodes are the
// switches' aggregation endpoints (pseudo-ranks run by the switch: no thread block, no step
// latency, no proxy). AllToAll and SendRecv are
// point-to-point, in chunks of NCCL's P2P chunk size (NVLink 512 KiB, otherwise 128 KiB).
// A collective's time at a rank is launch latency + the time its last stream finishes.
//
// Streamed execution (backends with pipelines, i.e. the flow level): a collective with many
// primitives runs instead as one pipeline per channel (ring: its n connections; chain: its
// n-1; tree: its up and down edges; point to point: one per sender), every member moving the
// bytes the primitives would send on it, at one max-min rate capped by the blocks' copy rate
// per primitive (step latency + slice / copy rate, over the primitives of a chunk). Its time
// is that fluid transfer plus the pipeline fill: the first slice's way along the critical path
// (D hops: ring AllReduce 2(n-1), ring AllGather/ReduceScatter n-1, chain n-1, tree the
// deepest leaf's way up and back down), each hop its step latency, its copy and, over the
// network, the proxy hand-off, plus the route's latency. Steady state and fill are those of the
// primitives' execution; what it leaves out is the interplay of individual slices (credits
// running dry, slices of two channels meeting on a link), so streaming is the default only
// above `stream_above` primitives, where that is noise.

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "models/nccl/nccl.hpp"
#include "net/message.hpp"
#include "sim/simulation.hpp"

namespace fabricsim {

// Where a communicator's ranks are and how each channel connects them (built from a topology
// by topo/communicator.hpp; plain data here).
struct CommRank {
  std::uint32_t server = 0;
  std::uint32_t gpu = Message::kPairedGpu;  // cluster GPU ordinal (kPairedGpu: the NIC's GPU)
  std::uint32_t nic = 0;                    // endpoint of the rank's own NIC (P2P traffic)
  std::uint32_t local = 0;                  // its GPU's index inside its server (its rail)
};
struct CommChannel {
  std::vector<std::uint32_t> ring;    // ranks in ring order: ring[i] sends to ring[i + 1]
  std::vector<std::uint32_t> nic;     // per rank: the endpoint it uses across servers here
  std::vector<std::int32_t> tree_up;  // per rank: tree parent, -1 at the root
  std::vector<std::array<std::int32_t, 3>> tree_down;  // per rank: children, -1 for none
};
// A SHARP streaming-aggregation tree over the switches (the aggregation manager's, for one
// CollNet head of every server): its nodes are the switches' aggregation nodes.
struct AggregationTree {
  std::vector<std::uint32_t> node;    // the nodes' fabric endpoints
  std::vector<std::int32_t> parent;   // per node: its parent's index, -1 at the root
  std::vector<std::uint32_t> attach;  // per server position: the node its head's NIC hangs off
};
struct CommLayout {
  std::vector<CommRank> ranks;
  std::vector<CommChannel> channels;  // the most a collective may use
  int servers = 1;
  LinkClass intra_link = LinkClass::kNvLink;  // between GPUs of a server (PCIe without NVLink)
  // Per channel, for the tuner: NCCL's graph bwIntra (on one NVSwitch server the graph's
  // speed over the communicator's twice as many channels, so channels x bw_intra_gbs is
  // NCCL's nChannels x bwIntra).
  double bw_intra_gbs = 20;
  double bw_inter_gbs = 12;  // per channel, for the tuner (NCCL's graph bwInter)
  // The first rank's GPU: its NVLink links, and whether they all lead to NVSwitches (what
  // NVLS needs, with every rank on one server).
  int nvlink_links = 0;
  bool nvswitch = false;
  double nic_gbs = 0;  // the first rank's own NIC, GB/s (NVLSTree's heads send through theirs)
  // Channels a point-to-point transfer to one peer is split over (NCCL's
  // p2pnChannelsPerPeer), each its own thread block and connection.
  int p2p_channels = 1;
  // CollNet (SHARP): per head index h (nvls_tree_heads' heads, models/nccl/plan.hpp: the ranks
  // with a NIC of their own, server positions in the order of their first rank), the tree
  // joining head h of every server. Empty where the fabric cannot aggregate; with a reason
  // in sharp_refused where it could but not for this communicator (a switch's tree limit).
  std::vector<AggregationTree> sharp_trees;
  std::string sharp_refused;
  // NCCL's hardware rule for LL128 left at its default (tuning.cc, protocol enable 2): the
  // graph's GPU-to-GPU hops inside a server are NVLink (typeIntra <= NVB) and, across servers,
  // every GPU reaches its NIC within PXB (typeInter; on compute capability 9.0 and later also
  // through PXN, NCCL_LL128_C2C's default). A PCIe-only server has no LL128 unless named.
  bool ll128_paths = true;
};

// What the engine needs of a fabric backend (packet level now, flow level later).
// What a fabric that runs pipelines offers (the flow level): one fluid flow standing for
// connections whose transfers are coupled so that all move at one rate (the connections of a
// ring or tree channel, tied together by credits). Each member moves `bytes`; the common rate
// is max-min fair over every resource the members' routes cross (a resource crossed by k
// members is used k times) and at most `rate_cap` bytes/s. It completes like a message (the id
// returned) at max(its bytes drained, start + floor) + tail.
class PipelinePort {
 public:
  virtual std::uint64_t post_pipeline(std::span<const Message> members, Bytes bytes,
                                      double rate_cap, Time floor, Time tail) = 0;
  // The latency of a message's route (propagation, switching, store and forward of its last
  // packet), for a pipeline's fill.
  virtual Time path_latency(const Message& m) = 0;
  // Whether pipelines may cross the network (false: the hybrid fidelity, whose network runs
  // packet by packet; only collectives inside one server stream there).
  virtual bool streams_network() const { return true; }

 protected:
  ~PipelinePort() = default;
};

class TransferPort {
 public:
  virtual std::uint32_t open_connection() = 0;
  // Adds a message (start >= now) and schedules it; completion is reported to the listener.
  virtual std::uint64_t post(const Message& m) = 0;
  virtual const Message& message(std::uint64_t id) const = 0;
  virtual void set_listener(CompletionListener* listener) = 0;
  // Reuse a message's log slot once its completion has been reported to the listener (the
  // collective engine keeps what it needs and turns it on; a fabric may ignore it). Off by
  // default: a run's message statistics read every message at the end.
  virtual void set_recycle(bool) {}
  // The fabric's pipelines, if it runs them (null: every transfer is a message).
  virtual PipelinePort* pipelines() { return nullptr; }

 protected:
  ~TransferPort() = default;
};

// How finely collectives run on a backend that offers pipelines (the flow level).
enum class Granularity { kAuto, kSlices, kStreams };
struct ExecutionOptions {
  Granularity granularity = Granularity::kAuto;
  std::uint64_t stream_above = 50'000;  // auto: stream collectives with more primitives
};

struct CollectiveRequest {
  CollOp op = CollOp::kAllReduce;
  std::uint64_t bytes = 0;  // S: the data size nccl-tests divides by (TestCounts::bytes)
  int root = 0;
  std::optional<Algo> algo{};    // overrides NCCL_ALGO / the tuner
  std::optional<Proto> proto{};  // overrides NCCL_PROTO / the tuner
  // SendRecv: ranks send_first .. send_first + send_count - 1 (count 0: every rank) send S to
  // rank (r + peer_offset) mod n. nccl-tests' sendrecv: every rank to the next; a pipeline
  // stage boundary: one server's GPUs to the next stage's.
  std::uint32_t peer_offset = 1, send_first = 0, send_count = 0;
};

struct CollectiveResult {
  CollOp op = CollOp::kAllReduce;
  std::uint64_t bytes = 0;
  Algo algo = Algo::kRing;
  Proto proto = Proto::kSimple;
  int channels = 0;
  double tuner_us = 0;          // NCCL's own estimate for the chosen pair
  bool tuner_fallback = false;  // TunerChoice::fallback
  Time start{};
  std::vector<Time> rank_finish;
  Bytes wire_bytes{};     // bytes handed to the fabric, protocol overhead included
  bool streamed = false;  // ran as pipelines (see the header), not primitive by primitive
  bool done = false;
  Time finish() const;     // the last rank's finish
  double mean_us() const;  // mean over ranks of (finish - start)
};

// One primitive a rank executed (for traces): from when it started to when it finished.
struct StepSpan {
  std::uint32_t comm = 0, rank = 0;
  Time start{}, end{};
};

class CollectiveListener {
 public:
  virtual void on_collective_done(std::uint32_t id) = 0;

 protected:
  ~CollectiveListener() = default;
};

class CollectiveEngine final : public CompletionListener {
 public:
  CollectiveEngine(Simulation& sim, TransferPort& port, const GpuSpec& gpu, const NcclConfig& cfg,
                   const ExecutionOptions& exec = {});
  CollectiveEngine(const CollectiveEngine&) = delete;
  CollectiveEngine& operator=(const CollectiveEngine&) = delete;

  std::uint32_t add_communicator(CommLayout layout);
  const CommLayout& layout(std::uint32_t comm) const { return comms_[comm].layout; }
  // The channel count NCCL would use (NCCL_MIN/MAX_NCHANNELS applied to the layout's).
  int channels(std::uint32_t comm) const;
  // Starts a collective at `at` on every rank; returns its id. The listener (optional) is told
  // when the last rank finishes.
  std::uint32_t launch(std::uint32_t comm, const CollectiveRequest& req, Time at,
                       CollectiveListener* listener = nullptr);
  const CollectiveResult& result(std::uint32_t id) const { return runs_[id].result; }
  // Bytes still held by the plans (connections, primitives, streams, pipelines) of all runs:
  // a finished run keeps only its result, so this stays bounded by the running ones.
  std::size_t retained_plan_bytes() const;
  // What NCCL's tuner picks for this request on this communicator.
  TunerChoice choose(std::uint32_t comm, const CollectiveRequest& req) const;

  void on_message_complete(std::uint64_t id) override;
  // Records every primitive into `out` (until it holds `limit` spans; the rest are only
  // counted, steps_dropped()); null: off.
  void trace_steps(std::vector<StepSpan>* out, std::size_t limit) {
    steps_ = out;
    step_limit_ = limit;
    steps_dropped_ = 0;
  }
  std::uint64_t steps_dropped() const { return steps_dropped_; }

 private:
  // A first-in first-out queue on a vector (moves without allocating, unlike std::deque, so
  // a run's many connections relocate cheaply; allocates only once something is queued).
  template <class T>
  struct Fifo {
    std::vector<T> items;
    std::size_t head = 0;
    bool empty() const { return head == items.size(); }
    std::size_t size() const { return items.size() - head; }
    T& front() { return items[head]; }
    T& operator[](std::size_t i) { return items[head + i]; }
    void push(T v) { items.push_back(v); }
    void pop() {
      if (++head == items.size()) {
        items.clear();
        head = 0;
      }
    }
  };
  struct Conn {
    std::uint32_t sender = 0, receiver = 0;  // streams
    Message address{};                       // address.connection: (*qps)[0]
    bool local = false;
    bool from_switch = false;  // sent by a SHARP aggregation node: no proxy hand-off
    LinkClass link = LinkClass::kNet;
    std::uint32_t posted = 0, arrived = 0, consumed = 0;
    Fifo<Bytes> handoff;  // network sends the proxy has not handed to the NIC yet
    // Its queue pairs (the communicator's, NCCL_IB_QPS_PER_CONNECTION; one inside a server),
    // the sends handed to them so far (NCCL's request id, which picks the QP), and with more
    // than one QP, per send not yet arrived in order, its parts still in flight (one, or one
    // per QP with NCCL_IB_SPLIT_DATA_ON_QPS).
    const std::vector<std::uint32_t>* qps = nullptr;
    std::uint32_t requests = 0;
    Fifo<std::uint32_t> parts_left;        // from send arrived + arrivals_scheduled on
    std::uint32_t arrivals_scheduled = 0;  // arrived in order, their events not yet run
  };
  struct Op {
    std::uint32_t recv_begin = 0, recv_end = 0, send_begin = 0, send_end = 0;  // op_conns
    std::uint64_t bytes = 0;                                                   // per edge
    bool reduce = false;
    std::int32_t wait_op = -1;  // op that must finish first (tree root: up before down)
    std::uint32_t copies = 1;   // chunks the block copies (NVLS scatter/gather: one per edge)
  };
  struct Stream {
    std::uint32_t rank = 0;
    std::uint32_t begin = 0, end = 0, next = 0;  // ops
    bool busy = false;
    Time since{};               // when the current primitive started (traces)
    std::uint32_t pending = 0;  // copy timer + in-server sends still to land
    std::int32_t partner = -1;  // stream to poke when one of its ops finishes
    bool nvswitch = false;      // an NVLS pseudo-rank's: the switch's multimem operations
    bool aggregator = false;    // a SHARP aggregation node's: reductions at line rate
  };
  // One pipeline of a streamed collective (PipelinePort::post_pipeline's arguments).
  struct Pipeline {
    std::vector<Message> members;
    Bytes bytes{};
    double rate_cap = 0;
    Time floor{}, tail{};
    std::vector<std::uint32_t> ranks;  // they finish when it completes
  };
  struct Run {
    std::uint32_t comm = 0;
    CollectiveResult result;
    StepSizing sizing{};
    CollectiveListener* listener = nullptr;
    std::vector<Conn> conns;
    std::vector<Op> ops;
    std::vector<std::uint32_t> op_conns;
    std::vector<Stream> streams;
    std::vector<bool> op_done;
    std::uint32_t streams_left = 0;
    std::vector<Pipeline> pipelines;
    std::map<std::tuple<int, std::uint32_t, std::uint32_t, int>, std::uint32_t> conn_index;
    std::uint32_t nvls_heads = 0;  // NVLS, NVLSTree: chunks per loop (the switch's fan-in)
    // A cap on every thread block's copy rate (bits/s; 0: none): LL's GPU-wide ceiling
    // (ll_gpu_busbw_gbs) or NVLSTree's per-channel one (nvls_tree_channel_busbw_gbs), as a
    // rate of data per channel.
    double block_rate_cap = 0;
  };
  struct Comm {
    CommLayout layout;
    // (channel, sender, receiver, NVLS kind or 0) -> its queue pairs.
    std::map<std::tuple<int, std::uint32_t, std::uint32_t, int>, std::vector<std::uint32_t>> qps;
  };
  class Builder;

  void on_start(std::uint64_t run);
  void on_op_done(std::uint64_t payload);
  void on_op_post(std::uint64_t payload);
  void on_copy_done(std::uint64_t payload);
  void on_handoff(std::uint64_t payload);
  Time step_latency(Proto proto, LinkClass link) const;
  // The network step's share the proxy adds beyond the GPU side.
  Time proxy_delay(Proto proto) const;
  // One thread block's copy rate, bits/s: min(per-block rate, HBM / (accesses x channels)).
  double copy_rate(bool reduce, int channels) const;
  // A block of this run: copy_rate, capped by the run's block_rate_cap (0: unlimited).
  double block_rate(const Run& run, bool reduce) const;
  bool nvls_available(const CommLayout& layout) const;  // inside one server
  int nvls_tree_heads(const CommLayout& layout) const;  // NVLSTree's heads, 0: none
  int collnet_heads(const CommLayout& layout) const;    // CollNet's heads, 0: no CollNet
  int nvls_channels(int servers) const;  // NCCL_NVLS_NCHANNELS, else NCCL's per-architecture count
  // An NVSwitch multimem operation on one NVLS channel moving `bytes` per edge, with `heads`
  // heads (chunks per loop).
  double nvls_seconds(const Run& run, std::uint64_t bytes, std::uint32_t heads) const;
  // Primitives the request would run as (to choose streamed execution).
  std::uint64_t primitives(const Run& run, const CollectiveRequest& req) const;
  void on_pipeline_done(std::uint64_t payload);
  void finish_pipelines(std::uint32_t run);
  void finish_run(std::uint32_t run);  // done: drops the plan, tells the listener
  static constexpr std::uint32_t kPipelineBit = 1u << 31;  // in messages_: a pipeline index
  void release(std::uint32_t run, std::uint32_t stream);
  void post_sends(std::uint32_t run, std::uint32_t op);
  void complete_op(std::uint32_t run, std::uint32_t stream);
  void on_arrival(std::uint64_t payload);
  void try_advance(std::uint32_t run, std::uint32_t stream);
  void post_transfer(std::uint32_t run, std::uint32_t conn, Bytes wire);
  void finish_stream(std::uint32_t run, std::uint32_t stream);

  Simulation& sim_;
  TransferPort& port_;
  GpuSpec gpu_;
  NcclConfig cfg_;
  ExecutionOptions exec_;
  std::deque<Comm> comms_;  // a deque: Conn::qps points into its elements
  std::deque<Run> runs_;
  // message id -> (run, conn, the send's number on the connection); messages of other
  // traffic are not ours.
  struct Posted {
    std::uint32_t run = 0, conn = 0, send = 0;
  };
  std::map<std::uint64_t, Posted> messages_;
  HandlerId start_, op_done_, op_post_, copy_done_, handoff_, arrival_, pipeline_done_;
  void record_step(const StepSpan& span) {
    if (steps_->size() < step_limit_)
      steps_->push_back(span);
    else
      ++steps_dropped_;
  }
  std::vector<StepSpan>* steps_ = nullptr;
  std::size_t step_limit_ = 0;
  std::uint64_t steps_dropped_ = 0;
};

}  // namespace fabricsim
