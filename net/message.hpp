#pragma once
// A message: one RDMA transfer from a source endpoint to a destination endpoint, posted on a
// connection (one queue pair; messages of a connection go out in order, as work requests on
// one QP do), with where its data lives on each side.

#include <cstdint>
#include <deque>
#include <limits>

#include "sim/units.hpp"

namespace fabricsim {

struct Message {
  // Host-side location meaning "the GPU paired with the endpoint's NIC".
  static constexpr std::uint32_t kPairedGpu = std::numeric_limits<std::uint32_t>::max();
  // GPU value naming the NVSwitches of the other end's server: a message from (or to) them is
  // half of an NVLink transfer, the GPU's multimem traffic (NVLS) on its NVLink links only.
  static constexpr std::uint32_t kNvSwitch = std::numeric_limits<std::uint32_t>::max() - 1;
  // Connection value asking for a connection of the message's own.
  static constexpr std::uint32_t kOwnConnection = std::numeric_limits<std::uint32_t>::max();

  std::uint32_t src = 0;
  std::uint32_t dst = 0;
  Bytes size{};
  Time start{};
  std::uint32_t connection = kOwnConnection;
  // GPUs (cluster-wide GPU ordinals) the data comes from and goes to, when a server model is
  // present; a NIC may serve a GPU other than its paired one.
  std::uint32_t src_gpu = kPairedGpu;
  std::uint32_t dst_gpu = kPairedGpu;
  Bytes received{};           // payload delivered in order at the destination
  Time finish = Time::max();  // when the last byte was delivered; Time::max() while incomplete
  bool failed = false;        // the sender's QP gave up (retries exhausted)
  bool complete() const { return finish != Time::max(); }
};

// Told when a message completes (its finish time may lie in the future: a receiving host
// stack's latency). Called from inside the network models: it may post new messages (the log
// and the queue pairs live in deques, so references held up the stack stay valid) but must not
// expect anything to have run yet.
class CompletionListener {
 public:
  virtual void on_message_complete(std::uint64_t id) = 0;

 protected:
  ~CompletionListener() = default;
};

// The messages of one network run, indexed by id, shared by the models that move them.
struct MessageLog {
  std::deque<Message> messages;
  CompletionListener* listener = nullptr;
  Bytes delivered{};  // payload delivered in order, over all messages

  Message& operator[](std::uint64_t id) { return messages[id]; }
  const Message& operator[](std::uint64_t id) const { return messages[id]; }
  std::size_t size() const { return messages.size(); }
  auto begin() const { return messages.begin(); }
  auto end() const { return messages.end(); }
  void push_back(const Message& m) { messages.push_back(m); }
  template <class Range>
  void assign(const Range& r) {
    messages.assign(r.begin(), r.end());
  }
  void add_received(std::uint64_t id, Bytes payload) {
    messages[id].received += payload;
    delivered += payload;
  }
  void complete(std::uint64_t id, Time at) {
    messages[id].finish = at;
    if (listener != nullptr) listener->on_message_complete(id);
  }
};

}  // namespace fabricsim
