#pragma once
// What a NIC is built with (plain structs the loader fills): the packet format, the transport
// and its parameters, and the congestion-control algorithm with each algorithm's own
// parameters. The engine that acts on them is nic.hpp.

#include <cstdint>

#include "models/transport/congestion_control.hpp"
#include "models/transport/dcqcn.hpp"
#include "models/transport/dctcp.hpp"
#include "sim/units.hpp"

namespace fabricsim {

struct PacketFormat {
  Bytes mtu{};     // payload bytes per packet, at most
  Bytes header{};  // wire overhead per data packet (headers, trailers, preamble, gap)
};

// Plain Ethernet/TCP, the third transport the seed compares: window-based, on a lossy class.
// Reliability: fast retransmit after 3 duplicate ACKs with NewReno partial-ACK recovery,
// retransmission timeout RTO = min_rto x 2^backoff. The window is the congestion control's
// (NewReno or DCTCP: models/transport/newreno.hpp, dctcp.hpp).
// The receiver keeps out-of-order segments and ACKs every segment cumulatively (echoing CE).
// The kernel stack's per-message CPU time `host_latency` delays the start at the sender and
// the completion at the receiver. The window's own parameters are the congestion control's
// (RdmaConfig::newreno, RdmaConfig::dctcp).
struct TcpConfig {
  Time min_rto = Time::from_ps(200'000'000'000);  // 200 ms, Linux's TCP_RTO_MIN
  Time host_latency = Time::from_ps(5'000'000);   // 5 us: an estimate, configurable
};

enum class Transport { kRdma, kTcp };

struct RdmaConfig {
  Transport transport = Transport::kRdma;
  TcpConfig tcp{};
  PacketFormat format{};
  Bytes control_bytes{86};  // ACK/NAK/CNP on the wire: 82 B of headers + 4 B AETH
  std::uint8_t priority = 3;
  std::uint8_t cnp_priority = 6;
  // RDMA: the responder ACKs the last packet of every message and every ack_interval-th PSN
  // (coalesced, cumulative ACKs). The default is what a ConnectX QP opened through verbs (as
  // NCCL opens them) is given: Linux mlx5_ib sets the QP context's log_ack_req_freq to
  // MLX5_IB_ACK_REQ_FREQ = 8 on every modify (drivers/infiniband/hw/mlx5/qp.c, the enum at
  // the top of the file and __mlx5_ib_modify_qp), i.e. the requester asks for an ACK every
  // 2^8 = 256 packets, and IBTA RC requires an ACK for a message's last packet. The soft-RoCE
  // driver asks every 66 packets (rxe_req.c, RXE_MAX_PKT_PER_ACK = 64); 1 gives one ACK per
  // packet (what htsim and the HPCC ns-3 code model). TCP ACKs every segment whatever this is.
  int ack_interval = 256;
  bool out_of_order_placement = false;  // RDMA: accept packets in any order (see above)
  // Local ACK timeout exponent (4.096 us x 2^ib_timeout) and retries before the QP errors:
  // NCCL's defaults, src/transport/net_ib/connect.cc lines 15-16 (NCCL_IB_TIMEOUT 20,
  // NCCL_IB_RETRY_CNT 7). The loader takes its defaults from here.
  int ib_timeout = 20;
  int ib_retry_cnt = 7;
  // RDMA only: the NIC's own time per message from the doorbell to its first packet (WQE
  // fetch, DMA set-up), a latency: consecutive messages' processing overlaps, so it does not
  // limit the message rate. What ib_write_lat measures beyond the wire; 0 by default.
  Time message_overhead{};
  // RDMA only: the most messages per second the NIC's send engine starts, over all its QPs
  // (Mpps; 0: no limit). Messages pass the engine one at a time, in posting order, each
  // taking 1 / rate: a stream of size-S messages runs at S / max(S / link payload rate,
  // 1 / rate), what ib_write_bw measures at small sizes. A lone message does not wait.
  double message_rate_mpps = 0;
  // The congestion-control algorithm (kNoCongestionControl: every QP at line rate). The
  // loader sets it from nic.dcqcn.enabled/variant (RDMA) or nic.tcp.congestion (TCP).
  const CcAlgorithm* congestion = &kNoCongestionControl;
  DcqcnConfig dcqcn{};
  NewRenoConfig newreno{};  // TCP's window (NewReno and DCTCP)
  DctcpConfig dctcp{};
};

}  // namespace fabricsim
