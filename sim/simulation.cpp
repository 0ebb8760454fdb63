#include "sim/simulation.hpp"

#include <fmt/format.h>

namespace fabricsim {

HandlerId Simulation::add_handler(void* self, HandlerFn fn) {
  handlers_.push_back(Handler{fn, self});
  return static_cast<HandlerId>(handlers_.size() - 1);
}

void Simulation::throw_past(Time t) const {
  throw std::logic_error(fmt::format("event scheduled in the past: at {} while the time is {}",
                                     to_string(t), to_string(now_)));
}

EventHandle Simulation::schedule_cancellable_at(Time t, HandlerId h, std::uint64_t payload,
                                                Priority priority) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  slots_[slot].live = true;
  push(t, h, payload, priority, slot);
  return EventHandle{slot, slots_[slot].generation};
}

bool Simulation::cancel(EventHandle handle) {
  if (!handle.valid() || handle.slot >= slots_.size()) return false;
  Slot& s = slots_[handle.slot];
  if (s.generation != handle.generation || !s.live) return false;
  s.live = false;
  ++cancelled_pending_;
  return true;
}

StopReason Simulation::run_until(Time limit) {
  stop_requested_ = false;
  Event e;
  std::uint64_t next_progress = events_processed_ + progress_every_;
  while (pending_events() > 0 && queue_.pop_until(limit, e)) {
    now_ = e.time;
    if (e.slot == kBackgroundSlot) {
      --background_pending_;
    } else if (e.slot != 0) {
      // The slot is released when its event leaves the queue, so a handle can never refer
      // to a reused slot: the generation moves on here.
      Slot& s = slots_[e.slot];
      const bool live = s.live;
      s.live = false;
      ++s.generation;
      free_slots_.push_back(e.slot);
      if (!live) {
        --cancelled_pending_;
        continue;
      }
    }
    ++events_processed_;
    // FNV-1a-style fold of (time, handler, payload): a multiply per field, no branch.
    fingerprint_ = (fingerprint_ ^ static_cast<std::uint64_t>(e.time.ps())) * 0x100000001b3ull;
    fingerprint_ = (fingerprint_ ^ e.handler) * 0x100000001b3ull;
    fingerprint_ = (fingerprint_ ^ e.payload) * 0x100000001b3ull;
    const Handler& h = handlers_[e.handler];
    h.fn(h.self, e.payload);
    if (events_processed_ >= next_progress) [[unlikely]] {
      next_progress = events_processed_ + progress_every_;
      if (progress_) progress_(now_, events_processed_);
    }
    if (stop_requested_) [[unlikely]]
      return StopReason::kStopped;
  }
  if (pending_events() == 0) return StopReason::kIdle;
  now_ = std::max(now_, limit);
  return StopReason::kTimeLimit;
}

}  // namespace fabricsim
