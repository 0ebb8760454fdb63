#include "fabric/hybrid_network.hpp"

namespace fabricsim {

HybridNetwork::HybridNetwork(Simulation& sim, const Topology& topo, const Routing& routing,
                             const NetworkParams& params, const FlowEfficiency& efficiency)
    : packet_(sim, topo, routing, params),
      flow_(sim, topo, routing, params, efficiency, FlowScope::kNvSwitchOnly) {
  packet_.set_listener(this);
  flow_completions_.self = this;
  flow_.set_listener(&flow_completions_);
}

std::uint32_t HybridNetwork::open_connection() {
  connections_.emplace_back(packet_.open_connection(), flow_.open_connection());
  return static_cast<std::uint32_t>(connections_.size() - 1);
}

std::uint64_t HybridNetwork::adopt(Level level, std::uint64_t inner) {
  std::uint64_t id = refs_.size();
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
    refs_[id] = {level, inner};
  } else {
    refs_.push_back({level, inner});
  }
  std::vector<std::uint64_t>& back = level == kPacket ? from_packet_ : from_flow_;
  if (back.size() <= inner) back.resize(inner + 1);
  back[inner] = id;
  return id;
}

std::uint64_t HybridNetwork::post(const Message& m) {
  Message inner = m;
  const bool flow = flow_.nvswitch_route(m);
  if (m.connection != Message::kOwnConnection)
    inner.connection = flow ? connections_[m.connection].second : connections_[m.connection].first;
  // Both networks only schedule a posted message, so its completion comes after the mapping.
  return flow ? adopt(kFlow, flow_.post(inner)) : adopt(kPacket, packet_.post(inner));
}

std::uint64_t HybridNetwork::post_pipeline(std::span<const Message> members, Bytes bytes,
                                           double rate_cap, Time floor, Time tail) {
  std::vector<Message> inner(members.begin(), members.end());
  for (Message& m : inner)
    if (m.connection != Message::kOwnConnection) m.connection = connections_[m.connection].second;
  return adopt(kFlow, flow_.post_pipeline(inner, bytes, rate_cap, floor, tail));
}

const Message& HybridNetwork::message(std::uint64_t id) const {
  const Ref& r = refs_[id];
  return r.level == kPacket ? packet_.message(r.id) : flow_.message(r.id);
}

void HybridNetwork::set_recycle(bool on) {
  recycle_ = on;
  packet_.set_recycle(on);
  flow_.set_recycle(on);
}

void HybridNetwork::complete(std::uint64_t id) {
  if (listener_ != nullptr) listener_->on_message_complete(id);
  if (recycle_) free_ids_.push_back(id);
}

void HybridNetwork::on_message_complete(std::uint64_t inner) {
  if (inner >= from_packet_.size()) return;  // a traffic pattern's (start_messages): no listener
  complete(from_packet_[inner]);
}

void HybridNetwork::FlowCompletions::on_message_complete(std::uint64_t inner) {
  self->complete(self->from_flow_[inner]);
}

std::vector<Metric> HybridNetwork::level_metrics() const {
  std::vector<Metric> out = packet_.level_metrics();
  for (Metric& m : flow_.level_metrics()) out.push_back(std::move(m));
  return out;
}

void HybridNetwork::for_each_link(const std::function<void(const Link&)>& f) const {
  packet_.for_each_link(f);
  flow_.for_each_link(f);
}

}  // namespace fabricsim
