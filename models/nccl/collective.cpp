#include "models/nccl/collective.hpp"

#include "models/nccl/plan.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

namespace fabricsim {

namespace {

std::uint64_t pack(std::uint32_t hi, std::uint32_t lo) {
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}
}  // namespace

Time CollectiveResult::finish() const {
  Time t = start;
  for (Time f : rank_finish) t = std::max(t, f);
  return t;
}

double CollectiveResult::mean_us() const {
  if (rank_finish.empty()) return 0;
  double sum = 0;
  for (Time f : rank_finish) sum += (f - start).us();
  return sum / static_cast<double>(rank_finish.size());
}

// Turns one request into streams, primitives and connections (see the header for the rules):
// per channel the algorithm's plan (models/nccl/plan.hpp), executed as primitives or streamed.
class CollectiveEngine::Builder {
 public:
  Builder(CollectiveEngine& engine, Run& run, const CommLayout& layout, int channels)
      : e_(engine), run_(run), layout_(layout), channels_(channels), chunker_(run.sizing) {}

  // Primitives per slice, or (streamed) one pipeline per channel and per sender for point
  // to point.
  void build(const CollectiveRequest& req, bool streamed) {
    const int n = static_cast<int>(layout_.ranks.size());
    if (n == 1 || req.op == CollOp::kSendRecv || req.op == CollOp::kAllToAll) {
      streamed ? stream_point_to_point(req) : point_to_point(req);
      return;
    }
    for (int c = 0; c < channels_; ++c) {
      const CollectivePlan plan = plan_collective(layout_, c, req.op, run_.result.algo, req.root);
      if (plan.nvls()) run_.nvls_heads = plan.heads;
      streamed ? run_streamed(plan, c, share(req.bytes, c)) : execute(plan, c, share(req.bytes, c));
    }
  }

 private:
  // Point to point (sender, receiver) pairs: AllToAll every ordered pair, SendRecv its senders
  // to their peers.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs(const CollectiveRequest& req) const {
    const auto n = static_cast<std::uint32_t>(layout_.ranks.size());
    std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
    if (req.op == CollOp::kAllToAll) {
      for (std::uint32_t a = 0; a < n; ++a)
        for (std::uint32_t d = 1; d < n; ++d) out.emplace_back(a, (a + d) % n);
      return out;
    }
    const std::uint32_t count = req.send_count == 0 ? n : req.send_count;
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::uint32_t a = (req.send_first + i) % n;
      const std::uint32_t b = (a + req.peer_offset) % n;
      if (a != b) out.emplace_back(a, b);
    }
    return out;
  }

  // Bytes of channel c: S split evenly, the remainder to the first channels.
  std::uint64_t share(std::uint64_t bytes, int c) const {
    const auto nc = static_cast<std::uint64_t>(channels_);
    return bytes / nc + (static_cast<std::uint64_t>(c) < bytes % nc ? 1 : 0);
  }

  const CommChannel& channel(int c) const {
    return layout_.channels[static_cast<std::size_t>(c) % layout_.channels.size()];
  }

  std::uint32_t stream(std::uint32_t rank) {
    run_.streams.push_back({.rank = rank});
    return static_cast<std::uint32_t>(run_.streams.size() - 1);
  }

  // The connection from rank a to rank b on channel c (kind separates tree up and down).
  // With `own_nics` a network connection leaves and enters through the ranks' own NICs (NVLSTree's
  // and CollNet's heads), else through the channel's. `plan` names CollNet's aggregation nodes.
  std::uint32_t conn(int c, std::uint32_t a, std::uint32_t b, int kind, std::uint32_t sender,
                     std::uint32_t receiver, bool own_nics = false,
                     const CollectivePlan* plan = nullptr) {
    auto [it, inserted] =
        run_.conn_index.try_emplace({c, a, b, kind}, static_cast<std::uint32_t>(run_.conns.size()));
    if (!inserted) return it->second;
    Conn k;
    k.sender = sender;
    k.receiver = receiver;
    const auto n = static_cast<std::uint32_t>(layout_.ranks.size());
    const bool sharp = plan != nullptr && (plan->aggregator(a) || plan->aggregator(b));
    if (sharp) {
      // To or from a switch's aggregation node (SHARP): over the network, a head's end at its
      // GPU behind its own NIC, the node's at its fabric endpoint. The switch's sends need no
      // proxy.
      const auto end = [&](std::uint32_t r, std::uint32_t& endpoint, std::uint32_t& gpu) {
        if (plan->aggregator(r)) {
          endpoint = plan->endpoints[r - plan->aggregators_from];
          gpu = Message::kPairedGpu;
        } else {
          endpoint = layout_.ranks[r].nic;
          gpu = layout_.ranks[r].gpu;
        }
      };
      end(a, k.address.src, k.address.src_gpu);
      end(b, k.address.dst, k.address.dst_gpu);
      k.local = false;
      k.link = LinkClass::kNet;
      k.from_switch = plan->aggregator(a);
    } else if (a >= n || b >= n) {
      // Half of an NVLink transfer, between a GPU and the NVSwitches (an NVLS pseudo-rank):
      // addressed at the GPU's own endpoint, the switch side marked kNvSwitch.
      const CommRank& gpu = layout_.ranks[a >= n ? b : a];
      k.local = true;
      k.link = LinkClass::kNvLink;
      k.address.src = k.address.dst = gpu.nic;
      k.address.src_gpu = a >= n ? Message::kNvSwitch : gpu.gpu;
      k.address.dst_gpu = b >= n ? Message::kNvSwitch : gpu.gpu;
    } else {
      const CommRank& ra = layout_.ranks[a];
      const CommRank& rb = layout_.ranks[b];
      k.local = ra.server == rb.server;
      const bool p2p = c < 0;
      const CommChannel* ch = p2p ? nullptr : &channel(c);
      k.address.src = k.local || p2p || own_nics ? ra.nic : ch->nic[a];
      if (p2p && !k.local) k.address.src = p2p_send_nic(ra, rb);
      k.address.dst = k.local || p2p || own_nics ? rb.nic : ch->nic[b];
      k.address.src_gpu = ra.gpu;
      k.address.dst_gpu = rb.gpu;
      k.link = k.local ? layout_.intra_link : LinkClass::kNet;
    }
    // Queue pairs per (channel, sender, receiver), kept for the communicator's lifetime:
    // NCCL_IB_QPS_PER_CONNECTION across servers (net_ib connect.cc), one inside a server.
    // NVLS kinds keep their own (a head's scatter and store both go to its switch side).
    auto [q, fresh] = e_.comms_[run_.comm].qps.try_emplace({c, a, b, kind >= 3 ? kind : 0});
    if (fresh) {
      // (SHARP's connections are the aggregation library's own: one QP each.)
      const int count = k.local || sharp ? 1 : std::max(1, e_.cfg_.ib_qps_per_connection);
      for (int i = 0; i < count; ++i) q->second.push_back(e_.port_.open_connection());
    }
    k.qps = &q->second;  // std::map nodes stay where they are
    k.address.connection = q->second.front();
    run_.conns.push_back(std::move(k));
    return it->second;
  }

  // The connection of plan edge `e` on channel c (a tree's two lanes are kinds 1 and 2, so
  // that its up and down connections between two ranks differ), between the streams (or, for
  // the streamed execution, the ranks) given.
  std::uint32_t plan_conn(const CollectivePlan& plan, int c, std::uint32_t e, std::uint32_t sender,
                          std::uint32_t receiver) {
    const PlanEdge& pe = plan.edges[e];
    const int kind = plan.shape == CollectivePlan::Shape::kTree ? pe.lane + 1
                     : plan.nvls()                              ? 3 + pe.lane
                     : plan.collnet()                           ? 8 + pe.lane
                                                                : 0;
    return conn(c, pe.from, pe.to, kind, sender, receiver,
                plan.shape == CollectivePlan::Shape::kNvlsTree || plan.collnet(), &plan);
  }

  // The primitives: per unit, rank and step, `repeat` primitives per slice (or per unit where
  // the plan is not sliced), on the rank's stream of the step's lane.
  void execute(const CollectivePlan& plan, int c, std::uint64_t bytes) {
    const auto lanes = static_cast<std::uint32_t>(plan.lanes);
    std::vector<std::uint32_t> position(std::max(layout_.ranks.size(), plan.order.size()));
    std::vector<std::uint32_t> streams(plan.order.size() * lanes);
    for (std::uint32_t p = 0; p < plan.order.size(); ++p) {
      position[plan.order[p]] = p;
      for (std::uint32_t l = 0; l < lanes; ++l) {
        streams[p * lanes + l] = stream(plan.order[p]);
        run_.streams.back().aggregator = plan.aggregator(plan.order[p]);
        run_.streams.back().nvswitch =
            plan.order[p] >= plan.switch_ranks_from && !run_.streams.back().aggregator;
      }
      // A tree's reduce block pokes its broadcast block (the root's waits for it).
      if (lanes == 2)
        run_.streams[streams[p * lanes]].partner =
            static_cast<std::int32_t>(streams[p * lanes + 1]);
    }
    const auto stream_of = [&](std::uint32_t rank, std::uint8_t lane) {
      return streams[position[rank] * lanes + lane];
    };
    std::vector<std::uint32_t> conns(plan.edges.size());
    for (std::uint32_t e = 0; e < plan.edges.size(); ++e)
      conns[e] = plan_conn(plan, c, e, stream_of(plan.edges[e].from, plan.edges[e].lane),
                           stream_of(plan.edges[e].to, plan.edges[e].to_lane));
    std::vector<std::uint32_t> recvs, sends;
    for (const std::uint64_t unit : plan.units(chunker_, bytes)) {
      const std::vector<std::uint64_t> parts =
          plan.sliced() ? chunker_.slices(unit) : std::vector<std::uint64_t>{unit};
      for (std::uint32_t p = 0; p < plan.order.size(); ++p) {
        std::int32_t lane0_op = -1;
        for (const PlanStep& step : plan.steps_of(p)) {
          recvs.clear();
          sends.clear();
          for (const std::uint32_t e : plan.recvs(step)) recvs.push_back(conns[e]);
          for (const std::uint32_t e : plan.sends(step)) sends.push_back(conns[e]);
          const std::uint32_t s = streams[p * lanes + step.lane];
          const auto copies =
              static_cast<std::uint32_t>(step.distinct ? std::max(recvs.size(), sends.size()) : 1);
          for (std::uint32_t k = 0; k < step.repeat; ++k)
            for (const std::uint64_t b : parts)
              op(s, recvs, sends, b, step.reduce, step.after_lane0 ? lane0_op : -1, copies);
          if (step.lane == 0) lane0_op = static_cast<std::int32_t>(run_.ops.size() - 1);
        }
      }
    }
    commit();
  }

  void op(std::uint32_t s, const std::vector<std::uint32_t>& recvs,
          const std::vector<std::uint32_t>& sends, std::uint64_t bytes, bool reduce,
          std::int32_t wait_op = -1, std::uint32_t copies = 1) {
    Op o;
    o.recv_begin = static_cast<std::uint32_t>(run_.op_conns.size());
    run_.op_conns.insert(run_.op_conns.end(), recvs.begin(), recvs.end());
    o.recv_end = o.send_begin = static_cast<std::uint32_t>(run_.op_conns.size());
    run_.op_conns.insert(run_.op_conns.end(), sends.begin(), sends.end());
    o.send_end = static_cast<std::uint32_t>(run_.op_conns.size());
    o.bytes = bytes;
    o.reduce = reduce;
    o.wait_op = wait_op;
    o.copies = copies;
    run_.ops.push_back(o);
    ops_[s].push_back(static_cast<std::uint32_t>(run_.ops.size() - 1));
  }

  // SendRecv: rank r sends S to r+1. AllToAll: S/n from every rank to every other. Each
  // pair's bytes are split over the layout's p2p channels per peer (`channels_` of them,
  // share() as for collectives), each channel a thread block at both ends and its own
  // connection (p2p channel ch is connection channel -1 - ch). (A single rank always runs
  // streamed: see launch.)
  void point_to_point(const CollectiveRequest& req) {
    const auto n = static_cast<std::uint32_t>(layout_.ranks.size());
    const std::uint64_t per_pair = req.op == CollOp::kAllToAll ? req.bytes / n : req.bytes;
    for (const auto& [a, b] : pairs(req))
      for (int ch = 0; ch < channels_; ++ch) {
        const std::uint64_t bytes = share(per_pair, ch);
        if (bytes == 0 && ch > 0) continue;
        const std::uint32_t s = stream(a), r = stream(b);
        const std::uint32_t k = conn(-1 - ch, a, b, 0, s, r);
        const std::uint64_t chunk = p2p_chunk(run_.conns[k]);
        std::uint64_t offset = 0;
        do {
          const std::uint64_t part = std::min(chunk, bytes - offset);
          op(s, {}, {k}, part, false);
          op(r, {k}, {}, part, false);
          offset += part;
        } while (offset < bytes);
      }
    commit();
  }

  // The NIC a point-to-point send to another server leaves through (NCCL's
  // ncclTopoGetNetDev, search.cc, with the receiver on its own NIC, net.cc recvSetup): with
  // PXN (NCCL_PXN_DISABLE=0, NCCL_P2P_PXN_LEVEL 1 or 2) the NIC of the sender's server's GPU
  // on the receiver's rail (the same GPU index), when that GPU is in the communicator and
  // shares NVLink with the sender: the data crosses NVLink to it and leaves on the receiver's
  // rail (the fabric routes the host side, HostFabricParams::nic_gpu). Otherwise its own NIC.
  // The (server, GPU index) -> NIC table is built on first use, once per collective, so an
  // AllToAll's n^2 connections look their NIC up instead of scanning the n ranks each.
  std::uint32_t p2p_send_nic(const CommRank& from, const CommRank& to) {
    const NcclConfig& cfg = e_.cfg_;
    if (cfg.pxn_disable || cfg.p2p_pxn_level == 0 || layout_.intra_link != LinkClass::kNvLink ||
        from.local == to.local || from.gpu == Message::kPairedGpu)
      return from.nic;
    const auto key = [](std::uint32_t server, std::uint32_t local) {
      return std::uint64_t{server} << 32 | local;
    };
    if (rail_nic_.empty())
      for (const CommRank& r : layout_.ranks) rail_nic_.try_emplace(key(r.server, r.local), r.nic);
    const auto it = rail_nic_.find(key(from.server, to.local));
    return it != rail_nic_.end() ? it->second : from.nic;
  }

  // NCCL's point-to-point chunk on a connection (init.cc NCCL_P2P_NVL/PCI/NET_CHUNKSIZE).
  std::uint64_t p2p_chunk(const Conn& k) const {
    const Bytes chunk = !k.local                       ? e_.cfg_.p2p_net_chunksize
                        : k.link == LinkClass::kNvLink ? e_.cfg_.p2p_nvl_chunksize
                                                       : e_.cfg_.p2p_pci_chunksize;
    return static_cast<std::uint64_t>(std::max<Bytes::rep>(1, chunk.count()));
  }

  // --- streamed execution (see the header) ---

  // A block's time for one primitive moving `bytes`: its step latency (GPU side: the link
  // class it sends on, the NVLink figure for the network) and its copy.
  double op_seconds(const Conn& k, std::uint64_t bytes, bool reduce) const {
    const LinkClass cls = k.local ? k.link : LinkClass::kNvLink;
    const double rate = e_.block_rate(run_, reduce);
    return e_.step_latency(run_.result.proto, cls).seconds() +
           (rate > 0 ? static_cast<double>(bytes) * 8 / rate : 0.0);
  }
  // One hop of a slice's way: the sender's primitive (step latency and copy; inside a server
  // the copy is the transfer), the proxy's hand-off over the network, and the route.
  double hop_seconds(const Conn& k, std::uint64_t bytes, bool reduce) const {
    const double path = e_.port_.pipelines()->path_latency(k.address).seconds();
    if (k.local) {
      // The block's stores are the transfer: its primitive ends when the copy is done and the
      // stores have landed (try_advance), the route's latency beside the copy, not after it.
      const double rate = e_.block_rate(run_, reduce);
      const double copy = rate > 0 ? static_cast<double>(bytes) * 8 / rate : 0.0;
      return e_.step_latency(run_.result.proto, k.link).seconds() + std::max(copy, path);
    }
    return op_seconds(k, bytes, reduce) + e_.proxy_delay(run_.result.proto).seconds() + path;
  }
  static Time seconds(double s) {
    return Time::from_ps(static_cast<Time::rep>(std::llround(s * 1e12)));
  }

  // Adds a pipeline over connections `members` moving `data` bytes each.
  //
  // With q queue pairs per network connection the connection's data spreads evenly over them
  // (round robin over sends, or split across all). The pipeline then stands for y = rate / q:
  // each network member appears once per QP (its own path, each carrying rate / q), every
  // in-server member q times (it carries the whole rate), and the bytes and the rate cap are
  // divided by q, so the time to drain is unchanged and every resource sees what it carries.
  void pipeline(const std::vector<std::uint32_t>& members, std::uint64_t data, double data_rate_cap,
                double floor_s, double tail_s) {
    Pipeline p;
    std::size_t q = 1;
    for (const std::uint32_t k : members) q = std::max(q, run_.conns[k].qps->size());
    for (const std::uint32_t k : members) {
      const Conn& c = run_.conns[k];
      for (std::size_t i = 0; i < q; ++i) {
        p.members.push_back(c.address);
        if (c.qps->size() == q) p.members.back().connection = (*c.qps)[i];
      }
      // (An NVLS pseudo-rank, the NVSwitch, finishes nothing of its own.)
      for (const std::uint32_t r : {c.sender, c.receiver})
        if (r < layout_.ranks.size()) p.ranks.push_back(r);
    }
    std::sort(p.ranks.begin(), p.ranks.end());
    p.ranks.erase(std::unique(p.ranks.begin(), p.ranks.end()), p.ranks.end());
    const double wire = run_.sizing.wire_factor;
    const Bytes total(std::max<Bytes::rep>(
        1, static_cast<Bytes::rep>(std::ceil(static_cast<double>(data) * wire))));
    const auto qs = static_cast<Bytes::rep>(q);
    p.bytes = Bytes((total.count() + qs - 1) / qs);
    p.rate_cap = data_rate_cap * wire / static_cast<double>(q);
    p.floor = seconds(floor_s);
    p.tail = seconds(tail_s);
    run_.result.wire_bytes += total * static_cast<Bytes::rep>(members.size());
    run_.pipelines.push_back(std::move(p));
  }

  // The streamed execution of a plan: one pipeline per channel over the plan's edges.
  void run_streamed(const CollectivePlan& plan, int c, std::uint64_t bytes) {
    // NVLS opens only the connections its pipeline uses (2n of its 2n (n + 1) edges).
    if (plan.shape == CollectivePlan::Shape::kNvls) return stream_nvls(plan, c, bytes);
    if (plan.shape == CollectivePlan::Shape::kNvlsTree) return stream_nvls_tree(plan, c, bytes);
    std::vector<std::uint32_t> conns(plan.edges.size());  // streams are the ranks here
    for (std::uint32_t e = 0; e < plan.edges.size(); ++e)
      conns[e] = plan_conn(plan, c, e, plan.edges[e].from, plan.edges[e].to);
    switch (plan.shape) {
      case CollectivePlan::Shape::kRing:
        return stream_ring(plan, conns, bytes);
      case CollectivePlan::Shape::kChain:
        return stream_chain(plan, conns, bytes);
      case CollectivePlan::Shape::kTree:
        return stream_tree(plan, conns, bytes);
      case CollectivePlan::Shape::kCollNetDirect:
      case CollectivePlan::Shape::kCollNetChain:
        return stream_collnet(plan, conns, bytes);
      case CollectivePlan::Shape::kNvls:
      case CollectivePlan::Shape::kNvlsTree:
        return;  // above
    }
  }

  // Ring: every rank sends from the first step on (its own chunk), so there is no fill; the
  // steps of a rank are coupled to its predecessor's previous step, so the ring takes at least
  // its steps' latencies one after the other (floor: steps x hop, latency-bound sizes), and
  // otherwise its bytes at the common rate; then the last receive.
  void stream_ring(const CollectivePlan& plan, const std::vector<std::uint32_t>& out,
                   std::uint64_t bytes) {
    const auto n = static_cast<std::uint32_t>(plan.order.size());  // edge i leaves rank i
    // Sends per connection per chunk, and a rank's primitives per slice by kind (every rank
    // of a ring runs the same steps).
    std::uint32_t sends = 0, reduces = 0, copies = 0;
    for (const PlanStep& st : plan.steps_of(0)) {
      if (st.send_end > st.send_begin) sends += st.repeat;
      (st.reduce ? reduces : copies) += st.repeat;
    }
    const auto chunks = plan.units(chunker_, bytes);
    const std::uint64_t data =
        std::accumulate(chunks.begin(), chunks.end(), std::uint64_t{0}) * sends;
    const std::uint64_t steps = chunks.size() * sends;
    const std::uint64_t slice = chunker_.first_slice(chunks.front());
    // The slowest rank's block bounds the ring: per slice of every step it runs each of its
    // primitives once (on the edge it sends on, the last on the edge it receives on).
    double block = 0, hop = 0;
    const double reduce_share = static_cast<double>(reduces) / (reduces + copies);
    for (std::uint32_t i = 0; i < n; ++i) {
      block = std::max(block, block_seconds(plan, i, out, slice));
      const Conn& k = run_.conns[out[i]];
      hop += reduce_share * hop_seconds(k, slice, true) +
             (1 - reduce_share) * hop_seconds(k, slice, false);
    }
    hop /= n;
    pipeline(out, data, static_cast<double>(sends * slice) / block,
             static_cast<double>(steps) * hop, op_seconds(run_.conns[out[0]], slice, false));
  }

  // A rank's block time for one slice of every step: its primitives grouped by (edge,
  // reduce), count x one primitive's time, in the order the groups first appear.
  double block_seconds(const CollectivePlan& plan, std::uint32_t position,
                       const std::vector<std::uint32_t>& conns, std::uint64_t slice) const {
    std::vector<std::pair<std::pair<std::uint32_t, bool>, std::uint32_t>> groups;
    for (const PlanStep& st : plan.steps_of(position)) {
      const std::uint32_t e =
          st.send_end > st.send_begin ? plan.sends(st).front() : plan.recvs(st).front();
      const auto key = std::make_pair(conns[e], st.reduce);
      const auto it =
          std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
      if (it == groups.end())
        groups.push_back({key, st.repeat});
      else
        it->second += st.repeat;
    }
    double t = 0;
    for (const auto& [key, count] : groups)
      t += count * op_seconds(run_.conns[key.first], slice, key.second);
    return t;
  }

  // The reduce flag of the primitive that sends on edge e (the plan's sender step).
  static bool sends_reduced(const CollectivePlan& plan, std::uint32_t position, std::uint32_t e) {
    for (const PlanStep& st : plan.steps_of(position))
      for (const std::uint32_t s : plan.sends(st))
        if (s == e) return st.reduce;
    return false;
  }

  // Chain (Broadcast, Reduce): a slice takes n-1 hops before the last rank has it (fill),
  // then the rest streams at the common rate.
  void stream_chain(const CollectivePlan& plan, const std::vector<std::uint32_t>& out,
                    std::uint64_t bytes) {
    const std::uint64_t slice = chunker_.first_slice(chunker_.first_chunk(bytes));
    double block = 0, fill = 0;
    for (const std::uint32_t e : plan.fill) {  // edge e leaves the chain's rank e
      const bool reduce = sends_reduced(plan, e, e);
      block = std::max(block, op_seconds(run_.conns[out[e]], slice, reduce));
      fill += hop_seconds(run_.conns[out[e]], slice, reduce);
    }
    // The last rank's receive.
    fill += op_seconds(run_.conns[out.back()], slice, plan.steps.back().reduce);
    pipeline(out, bytes, static_cast<double>(slice) / block, 0, fill);
  }

  // Tree: a chunk goes up to the root and back down before the deepest rank has it (fill:
  // the deepest rank's way), then the rest streams at the common rate.
  void stream_tree(const CollectivePlan& plan, const std::vector<std::uint32_t>& conns,
                   std::uint64_t bytes) {
    const auto n = static_cast<std::uint32_t>(plan.order.size());  // rank r at position r
    const std::uint64_t b = chunker_.first_chunk(bytes);
    std::vector<std::uint32_t> up_of(n, UINT32_MAX), down_of(n, UINT32_MAX);
    for (std::uint32_t e = 0; e < plan.edges.size(); ++e)
      (plan.edges[e].lane == 0 ? up_of[plan.edges[e].from] : down_of[plan.edges[e].to]) = conns[e];
    // Up: a reduction per chunk (a leaf's a send); down: a copy (each rank has a block for each).
    const auto reduces = [&](std::uint32_t r) { return plan.steps_of(r).front().reduce; };
    std::vector<std::uint32_t> members;
    double block = 0;
    for (std::uint32_t r = 0; r < n; ++r) {
      if (up_of[r] == UINT32_MAX) continue;  // the root
      members.push_back(up_of[r]);
      members.push_back(down_of[r]);
      block = std::max({block, op_seconds(run_.conns[up_of[r]], b, reduces(r)),
                        op_seconds(run_.conns[down_of[r]], b, false)});
    }
    if (members.empty()) return;
    double fill = 0;
    for (std::size_t i = 0; i + 1 < plan.fill.size(); i += 2) {
      const PlanEdge& up = plan.edges[plan.fill[i]];
      fill += hop_seconds(run_.conns[conns[plan.fill[i]]], b, reduces(up.from)) +
              hop_seconds(run_.conns[conns[plan.fill[i + 1]]], b, false);
    }
    pipeline(members, bytes, static_cast<double>(b) / block, 0, fill);
  }

  // NVLS: every edge carries one chunk per loop, so all of them move bytes / n at one rate,
  // capped by the busiest block: a GPU's scatter and gather lanes each copy n chunks per loop,
  // its reduce lane one, a switch pseudo-rank's lanes one multimem operation each (the
  // multimem rate, see nvls_seconds). Fill: one chunk's way, scatter, switch, head, switch,
  // gather.
  void stream_nvls(const CollectivePlan& plan, int c, std::uint64_t bytes) {
    const std::uint32_t n = plan.switch_ranks_from;
    const auto conn_of = [&](std::uint32_t e) {
      return plan_conn(plan, c, e, plan.edges[e].from, plan.edges[e].to);
    };
    // The n + 1 edges into (out of) a GPU's switch side all cross the same NVLink bundle: one
    // member per GPU and direction carrying their n + 1 shares loads every link alike with
    // 2n members instead of 2n (n + 1), which the max-min solver pays for on every change.
    std::vector<std::uint32_t> members;
    std::vector<bool> up_of(n), down_of(n);
    for (std::uint32_t e = 0; e < plan.edges.size(); ++e) {
      const PlanEdge& pe = plan.edges[e];
      std::vector<bool>& seen = pe.to >= n ? up_of : down_of;
      const std::uint32_t gpu = pe.to >= n ? pe.from : pe.to;
      if (!seen[gpu]) members.push_back(conn_of(e));
      seen[gpu] = true;
    }
    const std::vector<std::uint64_t> units = plan.units(chunker_, bytes);
    const std::uint64_t data = std::accumulate(units.begin(), units.end(), std::uint64_t{0});
    const std::uint64_t b = units.front();
    const std::uint32_t k_up = conn_of(plan.fill[0]), k_store = conn_of(plan.fill[2]),
                        k_down = conn_of(plan.fill[3]);  // before any reference into conns
    const Conn &up = run_.conns[k_up], &store = run_.conns[k_store], &down = run_.conns[k_down];
    const double lane = std::max(op_seconds(up, n * b, false), op_seconds(down, n * b, false));
    const double block = std::max(lane, e_.nvls_seconds(run_, b, n));
    const double fill = hop_seconds(up, b, false) + 2 * e_.nvls_seconds(run_, b, n) +
                        hop_seconds(store, b, false) + op_seconds(down, b, false);
    pipeline(members, data * (n + 1), static_cast<double>(b) * (n + 1) / block, 0, fill);
  }

  // NVLSTree: every edge carries one chunk per loop, so every member moves bytes / heads at
  // one rate. A GPU's NVLink carries, each way, one chunk per head (scatter to the heads'
  // loads, the heads' stores) and a head's one more (its reduction, its store): one member per
  // GPU and direction, repeated that many times; each network edge one member. The rate cap is
  // the busiest block per loop: scatter and gather lanes copy a chunk per head, a head's reduce
  // lane one chunk (a sum where it has children), the switch's operations the multimem rate.
  // Fill: one chunk's way (plan.fill), each GPU-side hop its step and copy (and for the
  // network the proxy and the route), each switch-side hop a multimem operation.
  void stream_nvls_tree(const CollectivePlan& plan, int c, std::uint64_t bytes) {
    const std::uint32_t n = plan.switch_ranks_from, nh = plan.heads;
    const auto conn_of = [&](std::uint32_t e) {
      return plan_conn(plan, c, e, plan.edges[e].from, plan.edges[e].to);
    };
    // Edges to or from the network: between heads, or (NVLS with SHARP) a head and its tree.
    const auto network = [&](const PlanEdge& pe) {
      return (pe.from < n && pe.to < n) || plan.aggregator(pe.from) || plan.aggregator(pe.to);
    };
    std::vector<std::uint32_t> share(n, nh);  // chunks per loop each way over a GPU's NVLink
    for (const PlanEdge& pe : plan.edges)
      if (!network(pe) && pe.from >= n && pe.to_lane == 1)
        ++share[pe.to];  // the switch's reduction to a head
    std::vector<std::uint32_t> members;
    std::vector<bool> up_of(n), down_of(n);
    std::uint32_t up = UINT32_MAX, down = UINT32_MAX, net = UINT32_MAX;
    for (std::uint32_t e = 0; e < plan.edges.size(); ++e) {
      const PlanEdge& pe = plan.edges[e];
      if (network(pe)) {
        members.push_back(conn_of(e));
        if (pe.from < n) net = members.back();  // a head's send (a node's takes no block)
        continue;
      }
      std::vector<bool>& seen = pe.to >= n ? up_of : down_of;
      const std::uint32_t gpu = pe.to >= n ? pe.from : pe.to;
      if (seen[gpu]) continue;
      seen[gpu] = true;
      const std::uint32_t k = conn_of(e);
      members.insert(members.end(), share[gpu], k);
      (pe.to >= n ? up : down) = k;
    }
    const std::vector<std::uint64_t> units = plan.units(chunker_, bytes);
    const std::uint64_t data = std::accumulate(units.begin(), units.end(), std::uint64_t{0});
    const std::uint64_t b = units.front();
    const double multimem = e_.nvls_seconds(run_, b, nh);
    double block = std::max({op_seconds(run_.conns[up], nh * b, false),
                             op_seconds(run_.conns[down], nh * b, false), multimem});
    if (net != UINT32_MAX) block = std::max(block, op_seconds(run_.conns[net], b, true));
    std::vector<std::uint32_t> way;
    for (const std::uint32_t e : plan.fill) way.push_back(conn_of(e));
    double fill = 0;
    for (std::size_t i = 0; i < way.size(); ++i) {
      const std::uint32_t from = plan.edges[plan.fill[i]].from;
      const Conn& k = run_.conns[way[i]];
      fill += plan.aggregator(from) ? e_.port_.pipelines()->path_latency(k.address).seconds()
              : from >= n           ? multimem
                                    : hop_seconds(k, b, false);
    }
    fill += op_seconds(run_.conns[way.back()], b, false);  // the gather's copy out
    pipeline(members, data, static_cast<double>(b) / block, 0, fill);
  }

  // CollNet: every edge carries one unit per unit of the plan (Direct: a loop's chunk for its
  // head; Chain: every chunk), so all of them move the channel's units at one rate, capped by
  // the busiest block: per rank and lane the time of its primitive on one unit (the scatter
  // and gather lanes copy a chunk per edge); the aggregation nodes take no block time (the
  // switch reduces at line rate, which its internal port bounds as a fabric resource). Fill:
  // one unit's way (plan.fill), each GPU-side hop its step, copy, proxy and route, each hop
  // out of a node its route only, then the last receive's copy.
  void stream_collnet(const CollectivePlan& plan, const std::vector<std::uint32_t>& conns,
                      std::uint64_t bytes) {
    const std::vector<std::uint64_t> units = plan.units(chunker_, bytes);
    const std::uint64_t data = std::accumulate(units.begin(), units.end(), std::uint64_t{0});
    const std::uint64_t b = units.front();
    double block = 0;
    for (std::uint32_t p = 0; p < plan.order.size(); ++p) {
      if (plan.aggregator(plan.order[p])) continue;
      for (const PlanStep& st : plan.steps_of(p)) {
        const auto edges = st.send_end > st.send_begin ? plan.sends(st) : plan.recvs(st);
        if (edges.empty()) continue;
        const std::uint64_t copies =
            st.distinct ? std::max(st.recv_end - st.recv_begin, st.send_end - st.send_begin) : 1;
        block =
            std::max(block, op_seconds(run_.conns[conns[edges.front()]], copies * b, st.reduce));
      }
    }
    double fill = 0;
    for (const std::uint32_t e : plan.fill) {
      const Conn& k = run_.conns[conns[e]];
      const std::uint32_t from = plan.edges[e].from;
      fill += plan.aggregator(from) ? e_.port_.pipelines()->path_latency(k.address).seconds()
                                    : hop_seconds(k, b, sends_reduced(plan, from, e));
    }
    if (!plan.fill.empty()) fill += op_seconds(run_.conns[conns[plan.fill.back()]], b, false);
    std::vector<std::uint32_t> members(conns.begin(), conns.end());
    pipeline(members, data, block > 0 ? static_cast<double>(b) / block : HUGE_VAL, 0, fill);
  }

  // Point to point: one pipeline per sender over its pairs (NCCL schedules a rank's sends to
  // all its peers in rounds across its channels, so they progress together): each pair moves
  // its bytes at the sender's common rate, capped by a pair's send and receive blocks.
  void stream_point_to_point(const CollectiveRequest& req) {
    const auto n = static_cast<std::uint32_t>(layout_.ranks.size());
    if (n == 1) return;  // a copy inside one GPU, timed by launch
    const std::uint64_t per_pair = req.op == CollOp::kAllToAll ? req.bytes / n : req.bytes;
    const auto all = pairs(req);
    for (std::size_t i = 0; i < all.size();) {
      std::vector<std::uint32_t> members;
      double cap = HUGE_VAL, tail = 0;
      const std::uint32_t sender = all[i].first;
      // Each pair over the p2p channels per peer: one member per (pair, channel), each moving
      // its share at up to one block's rate.
      const std::uint64_t bytes = std::max<std::uint64_t>(1, share(per_pair, 0));
      for (; i < all.size() && all[i].first == sender; ++i)
        for (int ch = 0; ch < channels_; ++ch) {
          const std::uint32_t k = conn(-1 - ch, sender, all[i].second, 0, sender, all[i].second);
          const std::uint64_t chunk =
              std::max<std::uint64_t>(1, std::min(bytes, p2p_chunk(run_.conns[k])));
          const double op = op_seconds(run_.conns[k], chunk, false);
          cap = std::min(cap, static_cast<double>(chunk) / op);
          tail = std::max(tail, hop_seconds(run_.conns[k], chunk, false) + op);
          members.push_back(k);
        }
      pipeline(members, bytes, cap, 0, tail);
    }
  }

  // Lays the collected per-stream op lists out contiguously, in stream order.
  void commit() {
    std::vector<Op> ops;
    std::vector<std::int32_t> moved(run_.ops.size() - first_op_, -1);
    for (std::uint32_t s = first_stream_; s < run_.streams.size(); ++s) {
      Stream& st = run_.streams[s];
      st.begin = st.next = static_cast<std::uint32_t>(first_op_ + ops.size());
      for (std::uint32_t o : ops_[s]) {
        moved[o - first_op_] = static_cast<std::int32_t>(first_op_ + ops.size());
        ops.push_back(run_.ops[o]);
      }
      st.end = static_cast<std::uint32_t>(first_op_ + ops.size());
    }
    for (Op& o : ops)
      if (o.wait_op >= 0) o.wait_op = moved[static_cast<std::size_t>(o.wait_op) - first_op_];
    std::copy(ops.begin(), ops.end(), run_.ops.begin() + first_op_);
    first_op_ = run_.ops.size();
    first_stream_ = static_cast<std::uint32_t>(run_.streams.size());
    ops_.clear();
  }

  CollectiveEngine& e_;
  Run& run_;
  const CommLayout& layout_;
  int channels_;
  const Chunker chunker_;                                      // every cut of this run's bytes
  std::map<std::uint32_t, std::vector<std::uint32_t>> ops_;    // stream -> its ops, in order
  std::unordered_map<std::uint64_t, std::uint32_t> rail_nic_;  // (server, GPU index) -> NIC
  std::size_t first_op_ = 0;
  std::uint32_t first_stream_ = 0;
};

CollectiveEngine::CollectiveEngine(Simulation& sim, TransferPort& port, const GpuSpec& gpu,
                                   const NcclConfig& cfg, const ExecutionOptions& exec)
    : sim_(sim),
      port_(port),
      gpu_(gpu),
      cfg_(cfg),
      exec_(exec),
      start_(sim.bind<&CollectiveEngine::on_start>(*this)),
      op_done_(sim.bind<&CollectiveEngine::on_op_done>(*this)),
      op_post_(sim.bind<&CollectiveEngine::on_op_post>(*this)),
      copy_done_(sim.bind<&CollectiveEngine::on_copy_done>(*this)),
      handoff_(sim.bind<&CollectiveEngine::on_handoff>(*this)),
      arrival_(sim.bind<&CollectiveEngine::on_arrival>(*this)),
      pipeline_done_(sim.bind<&CollectiveEngine::on_pipeline_done>(*this)) {
  port_.set_listener(this);
  port_.set_recycle(true);  // the engine keeps what it needs of a completed message
}

std::uint32_t CollectiveEngine::add_communicator(CommLayout layout) {
  comms_.push_back({std::move(layout), {}});
  return static_cast<std::uint32_t>(comms_.size() - 1);
}

int CollectiveEngine::channels(std::uint32_t comm) const {
  int nc = static_cast<int>(comms_[comm].layout.channels.size());
  if (cfg_.max_channels > 0) nc = std::min(nc, cfg_.max_channels);
  if (cfg_.min_channels > 0) nc = std::max(nc, cfg_.min_channels);
  // More than the layout has (NCCL_MIN_NCHANNELS): NCCL duplicates channels, reusing their
  // rings and trees.
  return std::clamp(nc, 1, 64);
}

bool CollectiveEngine::nvls_available(const CommLayout& l) const {
  // NCCL (nvls.cc, search.cc): NVLS needs NVSwitches, compute capability 9.0 or later and
  // NCCL_NVLS_ENABLE not 0. This is NVLS inside one server; across servers NCCL runs NVLS only
  // with CollNet (the tuner's row needs collnet_heads) and NVLSTree otherwise.
  return cfg_.nvls_enable != 0 && l.servers == 1 && l.nvswitch && l.ranks.size() >= 2 &&
         gpu_.sm_version >= 90 && gpu_.nvls_efficiency > 0;
}

int CollectiveEngine::nvls_tree_heads(const CommLayout& l) const {
  // NVLSTree (tuning.cc: disabled on one node; enqueue.cc: NVLS support needed, "NVLS/NVLStree
  // needs at least 2 channels", i.e. heads): servers with NVSwitches and at least two GPUs
  // with a NIC of their own, as many ranks on each.
  if (cfg_.nvls_enable == 0 || l.servers < 2 || !l.nvswitch || gpu_.sm_version < 90 ||
      gpu_.nvls_efficiency <= 0)
    return 0;
  const auto heads = fabricsim::nvls_tree_heads(l);
  const int h = heads.empty() ? 0 : static_cast<int>(heads.front().size());
  return h >= 2 ? h : 0;
}

int CollectiveEngine::collnet_heads(const CommLayout& l) const {
  // init.cc: CollNet needs NCCL_COLLNET_ENABLE, a network that aggregates (the SHARP plugin:
  // here the layout's aggregation trees, which a switch's tree limit may refuse) and at least
  // NCCL_COLLNET_NODE_THRESHOLD servers; one tree per head, as many heads on every server.
  if (cfg_.collnet_enable == 0 || l.servers < std::max(2, cfg_.collnet_node_threshold) ||
      l.sharp_trees.empty() || !l.sharp_refused.empty())
    return 0;
  const auto heads = fabricsim::nvls_tree_heads(l);
  const int h = heads.empty() ? 0 : static_cast<int>(heads.front().size());
  return h == static_cast<int>(l.sharp_trees.size()) ? h : 0;
}

int CollectiveEngine::nvls_channels(int servers) const {
  if (cfg_.nvls_channels > 0) return cfg_.nvls_channels;
  // nvls.cc NVLS_NCHANNELS_SM90 16; SM100: 24 in one NVLink domain (NVLS_NCHANNELS_SM100_NVL),
  // 32 across servers (NVLS_NCHANNELS_SM100; ncclNvlsTreeSm100Tuning's adjustments are left out).
  if (gpu_.sm_version >= 100) return servers > 1 ? 32 : 24;
  return 16;
}

TunerChoice CollectiveEngine::choose(std::uint32_t comm, const CollectiveRequest& req) const {
  const CommLayout& l = comms_[comm].layout;
  const double nvlink_gbs = static_cast<double>(gpu_.nvlink_channel.bps()) / 8e9;
  NcclConfig cfg = cfg_;
  // A request's own choice enables exactly it (value 1: as NCCL_ALGO/NCCL_PROTO naming it).
  const auto only = [](EnableTable& t, int element) {
    for (auto& row : t.rows) {
      row.fill(0);
      row[element] = 1;
    }
  };
  if (req.algo) only(cfg.algos, static_cast<int>(*req.algo));
  if (req.proto) only(cfg.protos, static_cast<int>(*req.proto));
  TunerInput in{.op = req.op,
                .bytes = req.bytes,
                .nranks = static_cast<int>(l.ranks.size()),
                .nnodes = l.servers,
                .channels = channels(comm),
                .sm_version = gpu_.sm_version,
                .bw_intra_gbs = l.bw_intra_gbs,
                .bw_inter_gbs = l.bw_inter_gbs,
                .ll128_enabled = l.ll128_paths,  // tune() adds nccl.ll128
                .nvls_bw_intra_gbs =
                    nvls_available(l)
                        ? nvls_graph_bw_gbs(l.nvlink_links * nvlink_gbs,
                                            static_cast<int>(l.ranks.size()), gpu_.sm_version)
                        : 0,
                .nvls_efficiency = gpu_.nvls_efficiency};
  if (const int heads = nvls_tree_heads(l); heads > 0) {
    const NvlsTreeGraphBw bw =
        nvls_tree_graph_bw(l.nvlink_links * nvlink_gbs, heads, l.nic_gbs, gpu_.sm_version);
    in.nvls_tree_heads = heads;
    in.nvls_tree_bw_intra_gbs = bw.intra;
    in.nvls_tree_bw_inter_gbs = bw.inter;
  }
  if (const int heads = collnet_heads(l); heads > 0) {
    // tuning.cc: CollNetDirect only on NVSwitch systems (nvsCount > 0).
    const int ppn = static_cast<int>(l.ranks.size()) / l.servers;
    in.collnet_heads = heads;
    if (l.nvswitch)
      in.collnet_direct_bw_gbs = collnet_graph_bw(l.nvlink_links * nvlink_gbs, ppn, heads,
                                                  l.nic_gbs, gpu_.sm_version, true);
    in.collnet_chain_bw_gbs = collnet_graph_bw(l.nvlink_links * nvlink_gbs, ppn, heads, l.nic_gbs,
                                               gpu_.sm_version, false);
  }
  return tune(in, cfg);
}

std::uint32_t CollectiveEngine::launch(std::uint32_t comm, const CollectiveRequest& req, Time at,
                                       CollectiveListener* listener) {
  const auto id = static_cast<std::uint32_t>(runs_.size());
  Run& run = runs_.emplace_back();
  run.comm = comm;
  run.listener = listener;
  const TunerChoice choice = choose(comm, req);
  CollectiveResult& r = run.result;
  r.op = req.op;
  r.bytes = req.bytes;
  r.algo = choice.algo;
  r.proto =
      req.op == CollOp::kAllToAll || req.op == CollOp::kSendRecv ? Proto::kSimple : choice.proto;
  r.tuner_us = choice.predicted_us;
  r.tuner_fallback = choice.fallback;
  const bool p2p = req.op == CollOp::kAllToAll || req.op == CollOp::kSendRecv;
  const bool nvls = r.algo == Algo::kNvls || r.algo == Algo::kNvlsTree;
  r.channels = p2p    ? comms_[comm].layout.p2p_channels
               : nvls ? nvls_channels(comms_[comm].layout.servers)  // enqueue.cc: as they are
                      : channels_for_size(channels(comm), r.proto, req.bytes);
  r.start = at;
  const auto n = comms_[comm].layout.ranks.size();
  r.rank_finish.assign(n, at);
  run.sizing = step_sizing(req.op, r.algo, r.proto, cfg_);
  if (r.proto == Proto::kLL)
    // LL's GPU-wide ceiling (ll_gpu_busbw_gbs): a GPU's LL blocks together send at most that
    // rate of data, so each of the run's channels gets its share (1 MiB AllReduce on one DGX
    // A100: 87.7 GB/s over 24 channels, 3.65 GB/s of data per block).
    run.block_rate_cap = ll_gpu_busbw_gbs(gpu_.sm_version, comms_[comm].layout.servers) * 8e9 /
                         std::max(1, r.channels);
  if (r.algo == Algo::kNvls) {
    // enqueue.cc: smaller NVLS chunks for sizes that would leave the channels' heads idle
    // (every GPU is a head on one server; across servers the GPUs with a NIC).
    const CommLayout& l = comms_[comm].layout;
    const std::uint64_t heads = l.servers > 1 ? static_cast<std::uint64_t>(nvls_tree_heads(l)) : n;
    const Bytes chunk(static_cast<Bytes::rep>(
        nvls_chunk_bytes(req.bytes, static_cast<std::uint64_t>(r.channels) * heads,
                         static_cast<std::uint64_t>(run.sizing.chunk.count()))));
    run.sizing.step = run.sizing.chunk = run.sizing.slice = chunk;
  } else if (r.algo == Algo::kNvlsTree) {
    const CommLayout& l = comms_[comm].layout;
    // NCCL's per-channel ceiling, busbw per head, as the data rate of one of the run's
    // channels: algbw = busbw x N / (2 (N - 1)) over heads channels' worth, shared by the
    // run's channels. A loop moves H chunks through each scatter and gather block, so capping
    // every block at that rate caps a channel's data rate at it (2 x DGX H100: 8 x 57.7 GB/s
    // busbw = 461.6, algbw 246.2, 15.4 GB/s on each of 16 channels).
    const double ranks = static_cast<double>(n);
    run.block_rate_cap = nvls_tree_heads(l) *
                         nvls_tree_channel_busbw_gbs(gpu_.sm_version, l.servers) * 8e9 * ranks /
                         (2 * (ranks - 1)) / std::max(1, r.channels);
    const Bytes chunk(static_cast<Bytes::rep>(nvls_tree_chunk_bytes(
        req.bytes, static_cast<std::uint64_t>(r.channels) * nvls_tree_heads(l),
        static_cast<std::uint64_t>(run.sizing.chunk.count()), l.servers)));
    run.sizing.step = run.sizing.chunk = run.sizing.slice = chunk;
  } else if (r.algo == Algo::kCollNetDirect || r.algo == Algo::kCollNetChain) {
    // enqueue.cc's CollNet chunk (collnet_chunk_bytes): Direct's depth is 2 (a GPU to its
    // head, the head to the network), Chain's the ranks per server.
    const CommLayout& l = comms_[comm].layout;
    const bool direct = r.algo == Algo::kCollNetDirect;
    const std::uint64_t concurrent = static_cast<std::uint64_t>(r.channels) *
                                     (direct ? static_cast<std::uint64_t>(collnet_heads(l)) : 1);
    const Bytes chunk(static_cast<Bytes::rep>(collnet_chunk_bytes(
        req.bytes, concurrent, static_cast<std::uint64_t>(run.sizing.step.count()),
        direct ? 2 : static_cast<int>(n) / l.servers, direct)));
    run.sizing.chunk = run.sizing.slice = chunk;
  }
  // One rank: NCCL moves nothing between GPUs; it copies the send buffer into the receive
  // buffer (cudaMemcpyAsync device to device), which reads and writes HBM once each:
  //   t = launch + 2 x bytes / hbm  (hbm counts reads and writes together),
  // the whole GPU's copy rate, not one channel's. It runs as an empty streamed plan.
  Time local_copy{};
  if (n == 1 && gpu_.hbm.bps() > 0)
    local_copy = tx_time(Bytes(static_cast<Bytes::rep>(2 * req.bytes)), gpu_.hbm);
  r.streamed =
      n == 1 ||
      (port_.pipelines() != nullptr &&
       (comms_[comm].layout.servers <= 1 || port_.pipelines()->streams_network()) &&
       (exec_.granularity == Granularity::kStreams ||
        (exec_.granularity == Granularity::kAuto && primitives(run, req) > exec_.stream_above)));
  Builder(*this, run, comms_[comm].layout, r.channels).build(req, r.streamed);
  run.op_done.assign(run.ops.size(), false);
  run.streams_left = static_cast<std::uint32_t>(run.streams.size());
  const Time launch = Time::from_ps(static_cast<Time::rep>(
      std::llround(cfg_.launch_latency_us[static_cast<int>(r.proto)] * 1e6)));
  sim_.schedule_at(at + launch + local_copy, start_, id);
  return id;
}

std::uint64_t CollectiveEngine::primitives(const Run& run, const CollectiveRequest& req) const {
  const auto n = static_cast<std::uint64_t>(comms_[run.comm].layout.ranks.size());
  const auto nc = static_cast<std::uint64_t>(std::max(1, run.result.channels));
  const auto ceil_div = [](std::uint64_t a, std::uint64_t b) {
    return (a + b - 1) / std::max<std::uint64_t>(b, 1);
  };
  if (n == 1) return 1;
  if (req.op == CollOp::kAllToAll || req.op == CollOp::kSendRecv) {
    const std::uint64_t pairs = req.op == CollOp::kAllToAll ? n * (n - 1)
                                : req.send_count > 0        ? req.send_count
                                                            : n;
    const std::uint64_t per_pair = req.op == CollOp::kAllToAll ? req.bytes / n : req.bytes;
    // (The network chunk: the smallest, so the count is an upper bound.)
    return pairs * 2 *
           std::max<std::uint64_t>(
               1, ceil_div(per_pair, static_cast<std::uint64_t>(
                                         std::max<Bytes::rep>(1, cfg_.p2p_net_chunksize.count()))));
  }
  // Every channel runs the same plan on its share (rank order aside): count channel 0's.
  const std::uint64_t per_channel = std::max<std::uint64_t>(1, req.bytes / nc);
  const CollectivePlan plan =
      plan_collective(comms_[run.comm].layout, 0, req.op, run.result.algo, req.root);
  return nc * plan.primitives(Chunker(run.sizing), per_channel);
}

void CollectiveEngine::on_start(std::uint64_t id) {
  Run& run = runs_[id];
  if (run.result.streamed) {
    if (run.pipelines.empty()) {  // nothing to move (one rank)
      finish_pipelines(static_cast<std::uint32_t>(id));
      return;
    }
    run.streams_left = static_cast<std::uint32_t>(run.pipelines.size());
    for (std::uint32_t p = 0; p < run.pipelines.size(); ++p) {
      const Pipeline& pl = run.pipelines[p];
      const std::uint64_t mid =
          port_.pipelines()->post_pipeline(pl.members, pl.bytes, pl.rate_cap, pl.floor, pl.tail);
      messages_.emplace(mid, Posted{static_cast<std::uint32_t>(id), kPipelineBit | p, 0});
    }
    return;
  }
  for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
    if (run.streams[s].begin == run.streams[s].end) {
      finish_stream(static_cast<std::uint32_t>(id), s);
      continue;
    }
    try_advance(static_cast<std::uint32_t>(id), s);
  }
}

void CollectiveEngine::try_advance(std::uint32_t id, std::uint32_t s) {
  Run& run = runs_[id];
  Stream& st = run.streams[s];
  if (st.busy || st.next >= st.end) return;
  const Op& o = run.ops[st.next];
  if (o.wait_op >= 0 && !run.op_done[static_cast<std::size_t>(o.wait_op)]) return;
  for (std::uint32_t i = o.recv_begin; i < o.recv_end; ++i) {
    const Conn& k = run.conns[run.op_conns[i]];
    if (k.arrived <= k.consumed) return;
  }
  for (std::uint32_t i = o.send_begin; i < o.send_end; ++i) {
    const Conn& k = run.conns[run.op_conns[i]];
    if (k.posted - k.consumed >= static_cast<std::uint32_t>(run.sizing.credits)) return;
  }
  // The block's own time per primitive: the step latency of the link class it sends on (else
  // receives from); for a network connection only the GPU side of it (the NVLink-class
  // figure: the block works on a local buffer), the proxy's hand-off to the NIC runs beside
  // the block and delays the send (see post_sends).
  const std::uint32_t first = o.send_begin < o.send_end   ? run.op_conns[o.send_begin]
                              : o.recv_begin < o.recv_end ? run.op_conns[o.recv_begin]
                                                          : UINT32_MAX;
  const LinkClass cls = first == UINT32_MAX ? LinkClass::kNvLink : run.conns[first].link;
  Time t_latency =
      step_latency(run.result.proto, cls == LinkClass::kNet ? LinkClass::kNvLink : cls);
  Time t_copy{};
  if (st.aggregator) {
    // A switch's aggregation node: no thread block; it reduces as the data streams through
    // (its internal port's rate is a fabric resource), in no time of its own.
    t_latency = Time::zero();
  } else if (st.nvswitch) {
    // The NVSwitch: no thread block, its multimem operation at the multimem rate.
    t_latency = Time::zero();
    t_copy = Time::from_ps(
        static_cast<Time::rep>(std::ceil(nvls_seconds(run, o.bytes, run.nvls_heads) * 1e12)));
  } else if (const double rate = block_rate(run, o.reduce); rate > 0 && o.bytes > 0)
    t_copy = Time::from_ps(
        static_cast<Time::rep>(std::ceil(static_cast<double>(o.bytes * o.copies) * 8e12 / rate)));
  st.busy = true;
  st.since = sim_.now();
  std::uint32_t local_sends = 0;
  for (std::uint32_t i = o.send_begin; i < o.send_end; ++i)
    local_sends += run.conns[run.op_conns[i]].local;
  if (local_sends == 0) {
    // Network (or no) sends: the block copies into the proxy's buffer, then the NIC sends.
    sim_.schedule_in(t_latency + t_copy, op_done_, pack(id, s));
    return;
  }
  // Inside a server the block's stores go straight into the peer's buffer: the transfer is
  // the copy. The sends leave after the step latency; the primitive ends when its copy time
  // has passed and its in-server sends have arrived, whichever is later.
  st.pending = 1 + local_sends;
  sim_.schedule_in(t_latency, op_post_, pack(id, s));
  sim_.schedule_in(t_latency + t_copy, copy_done_, pack(id, s));
}

void CollectiveEngine::on_op_post(std::uint64_t payload) {
  const auto id = static_cast<std::uint32_t>(payload >> 32);
  const auto s = static_cast<std::uint32_t>(payload);
  post_sends(id, runs_[id].streams[s].next);
}

void CollectiveEngine::on_copy_done(std::uint64_t payload) {
  release(static_cast<std::uint32_t>(payload >> 32), static_cast<std::uint32_t>(payload));
}

void CollectiveEngine::release(std::uint32_t id, std::uint32_t s) {
  Stream& st = runs_[id].streams[s];
  if (st.pending > 0 && --st.pending == 0) complete_op(id, s);
}

Time CollectiveEngine::step_latency(Proto proto, LinkClass link) const {
  return Time::from_ps(static_cast<Time::rep>(
      std::llround(cfg_.step_latency_us[static_cast<int>(proto)][static_cast<int>(link)] * 1e6)));
}

Time CollectiveEngine::proxy_delay(Proto proto) const {
  return std::max(Time::zero(),
                  step_latency(proto, LinkClass::kNet) - step_latency(proto, LinkClass::kNvLink));
}

double CollectiveEngine::nvls_seconds(const Run& run, std::uint64_t bytes, std::uint32_t n) const {
  // Multimem traffic reaches nvlsEfficiency x NCCL's per-link NVLink figure on each of a GPU's
  // links (tuning.cc: NVLS bandwidth = bwIntra x nvlsEfficiency, bwIntra from topo.h's
  // SMxx_NVLINK_BW per link), each direction: R = links x efficiency x nvlink_channel, a share
  // R / channels per NVLS channel. Per loop a channel moves n + 1 chunks out of and into every
  // GPU (n scattered to the heads' loads, one store; one reduction, n stores received), so
  // each of its multimem operations (one per head and lane, all running side by side) takes
  // (n + 1) x bytes / (R / channels): each GPU then moves exactly R each way.
  const double rate = comms_[run.comm].layout.nvlink_links * gpu_.nvls_efficiency *
                      static_cast<double>(gpu_.nvlink_channel.bps()) /
                      std::max(1, run.result.channels);
  return rate > 0 ? static_cast<double>((n + 1) * bytes) * 8 / rate : 0.0;
}

double CollectiveEngine::copy_rate(bool reduce, int channels) const {
  if (gpu_.channel.bps() <= 0) return 0;   // unlimited
  const double accesses = reduce ? 3 : 2;  // a reduction reads two buffers and writes one
  const double hbm_share = static_cast<double>(gpu_.hbm.bps()) / (accesses * std::max(1, channels));
  return std::min(static_cast<double>(gpu_.channel.bps()), hbm_share);
}

double CollectiveEngine::block_rate(const Run& run, bool reduce) const {
  const double rate = copy_rate(reduce, run.result.channels);
  if (run.block_rate_cap <= 0) return rate;
  return rate > 0 ? std::min(rate, run.block_rate_cap) : run.block_rate_cap;
}

void CollectiveEngine::post_sends(std::uint32_t id, std::uint32_t index) {
  Run& run = runs_[id];
  const Op& o = run.ops[index];
  const Bytes wire(std::max<Bytes::rep>(
      1,
      static_cast<Bytes::rep>(std::ceil(static_cast<double>(o.bytes) * run.sizing.wire_factor))));
  const Time proxy = proxy_delay(run.result.proto);
  for (std::uint32_t i = o.send_begin; i < o.send_end; ++i) {
    const std::uint32_t k = run.op_conns[i];
    Conn& c = run.conns[k];
    ++c.posted;
    run.result.wire_bytes += wire;
    if (c.local || c.from_switch || proxy == Time::zero()) {
      post_transfer(id, k, wire);
      continue;
    }
    c.handoff.push(wire);  // same delay for every send of a connection: order kept
    sim_.schedule_in(proxy, handoff_, pack(id, k));
  }
}

void CollectiveEngine::on_handoff(std::uint64_t payload) {
  const auto id = static_cast<std::uint32_t>(payload >> 32);
  const auto k = static_cast<std::uint32_t>(payload);
  Conn& c = runs_[id].conns[k];
  const Bytes wire = c.handoff.front();
  c.handoff.pop();
  post_transfer(id, k, wire);
}

void CollectiveEngine::on_op_done(std::uint64_t payload) {
  const auto id = static_cast<std::uint32_t>(payload >> 32);
  const auto s = static_cast<std::uint32_t>(payload);
  post_sends(id, runs_[id].streams[s].next);
  complete_op(id, s);
}

void CollectiveEngine::complete_op(std::uint32_t id, std::uint32_t s) {
  Run& run = runs_[id];
  Stream& st = run.streams[s];
  const std::uint32_t index = st.next;
  const Op o = run.ops[index];
  st.busy = false;
  ++st.next;
  if (steps_ != nullptr && !st.nvswitch && !st.aggregator)
    record_step({run.comm, st.rank, st.since, sim_.now()});
  run.op_done[index] = true;
  for (std::uint32_t i = o.recv_begin; i < o.recv_end; ++i) {
    Conn& k = run.conns[run.op_conns[i]];
    ++k.consumed;  // the slot is free again: its sender may be waiting for it
    try_advance(id, k.sender);
  }
  if (st.partner >= 0) try_advance(id, static_cast<std::uint32_t>(st.partner));
  if (st.next == st.end) {
    finish_stream(id, s);
    return;
  }
  try_advance(id, s);
}

void CollectiveEngine::post_transfer(std::uint32_t id, std::uint32_t k, Bytes wire) {
  Run& run = runs_[id];
  Conn& c = run.conns[k];
  Message m = c.address;
  m.start = sim_.now();
  m.size = wire;
  const std::vector<std::uint32_t>& qps = *c.qps;
  if (qps.size() == 1) {
    // One QP: the fabric delivers the connection's messages in order.
    messages_.emplace(port_.post(m), Posted{id, k, 0});
    return;
  }
  // NCCL's IB transport (net_ib p2p.cc, ncclIbCommBaseGetQpForRequest): request r goes on QP
  // r mod q; with NCCL_IB_SPLIT_DATA_ON_QPS every request is cut over all q QPs in equal
  // parts of ceil(ceil(size / q) / 128) x 128 bytes (IB_WRITE_CHUNK_ALIGNMENT), the last ones
  // shorter or empty (empty parts move nothing and are not posted).
  const auto send =
      c.arrived + c.arrivals_scheduled + static_cast<std::uint32_t>(c.parts_left.size());
  const auto q = static_cast<Bytes::rep>(qps.size());
  std::uint32_t parts = 0;
  if (cfg_.ib_split_data_on_qps) {
    const Bytes::rep aligned = ((wire.count() + q - 1) / q + 127) / 128 * 128;
    for (Bytes::rep i = 0; i < q && aligned * i < wire.count(); ++i, ++parts) {
      m.connection = qps[static_cast<std::size_t>(i)];
      m.size = Bytes(std::min(aligned, wire.count() - aligned * i));
      messages_.emplace(port_.post(m), Posted{id, k, send});
    }
  } else {
    m.connection = qps[c.requests % qps.size()];
    messages_.emplace(port_.post(m), Posted{id, k, send});
    parts = 1;
  }
  ++c.requests;
  c.parts_left.push(parts);
}

void CollectiveEngine::on_message_complete(std::uint64_t mid) {
  const auto it = messages_.find(mid);
  if (it == messages_.end()) return;
  const Posted posted = it->second;
  messages_.erase(it);
  // Called from inside the fabric: act in an event of our own, at the delivery time.
  const Time at = std::max(sim_.now(), port_.message(mid).finish);
  if ((posted.conn & kPipelineBit) != 0) {
    sim_.schedule_at(at, pipeline_done_, pack(posted.run, posted.conn & ~kPipelineBit));
    return;
  }
  Conn& c = runs_[posted.run].conns[posted.conn];
  if (c.qps->size() == 1) {
    sim_.schedule_at(at, arrival_, pack(posted.run, posted.conn));
    return;
  }
  // NCCL's receiver takes sends in order: a send has arrived when all its parts and every
  // earlier send have (with several QPs a later one may land first and waits).
  --c.parts_left[posted.send - (c.arrived + c.arrivals_scheduled)];
  while (!c.parts_left.empty() && c.parts_left.front() == 0) {
    c.parts_left.pop();
    ++c.arrivals_scheduled;
    sim_.schedule_at(at, arrival_, pack(posted.run, posted.conn));
  }
}

void CollectiveEngine::on_arrival(std::uint64_t payload) {
  const auto id = static_cast<std::uint32_t>(payload >> 32);
  const auto k = static_cast<std::uint32_t>(payload);
  Run& run = runs_[id];
  Conn& c = run.conns[k];
  ++c.arrived;
  if (c.qps->size() > 1) --c.arrivals_scheduled;
  // The sending block's stores have landed. (It waits for them, so an in-server connection
  // never has two transfers in flight.)
  if (c.local) release(id, c.sender);
  try_advance(id, c.receiver);
}

void CollectiveEngine::on_pipeline_done(std::uint64_t payload) {
  const auto id = static_cast<std::uint32_t>(payload >> 32);
  Run& run = runs_[id];
  const Pipeline& p = run.pipelines[static_cast<std::uint32_t>(payload)];
  for (const std::uint32_t rank : p.ranks) {
    run.result.rank_finish[rank] = std::max(run.result.rank_finish[rank], sim_.now());
    if (steps_ != nullptr) record_step({run.comm, rank, run.result.start, sim_.now()});
  }
  if (--run.streams_left == 0) finish_pipelines(id);
}

void CollectiveEngine::finish_pipelines(std::uint32_t id) {
  Run& run = runs_[id];
  if (run.pipelines.empty())  // one rank: nothing moved
    for (Time& f : run.result.rank_finish) f = sim_.now();
  finish_run(id);
}

std::size_t CollectiveEngine::retained_plan_bytes() const {
  std::size_t bytes = 0;
  for (const Run& r : runs_)
    bytes += r.conns.capacity() * sizeof(Conn) + r.ops.capacity() * sizeof(Op) +
             r.op_conns.capacity() * sizeof(std::uint32_t) + r.streams.capacity() * sizeof(Stream) +
             r.op_done.capacity() / 8 + r.pipelines.capacity() * sizeof(Pipeline) +
             r.conn_index.size() * 64;
  return bytes;
}

void CollectiveEngine::finish_run(std::uint32_t id) {
  Run& run = runs_[id];
  run.result.done = true;
  // The plan is no longer needed; the result stays. Swapping with empty containers frees
  // their storage: `v = {}` picks the initializer-list assignment, which keeps the capacity
  // (a 256-GPU training step kept 2 GB of finished plans that way).
  const auto free_storage = [](auto& c) { std::remove_reference_t<decltype(c)>().swap(c); };
  free_storage(run.conns);
  free_storage(run.ops);
  free_storage(run.op_conns);
  free_storage(run.streams);
  free_storage(run.op_done);
  free_storage(run.conn_index);
  free_storage(run.pipelines);
  if (run.listener != nullptr) run.listener->on_collective_done(id);
}

void CollectiveEngine::finish_stream(std::uint32_t id, std::uint32_t s) {
  Run& run = runs_[id];
  if (!run.streams[s].nvswitch && !run.streams[s].aggregator) {
    const std::uint32_t rank = run.streams[s].rank;
    run.result.rank_finish[rank] = std::max(run.result.rank_finish[rank], sim_.now());
  }
  if (--run.streams_left > 0) return;
  finish_run(id);
}

}  // namespace fabricsim
