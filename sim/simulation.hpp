#pragma once
// The Simulation object: clock, pending events, handler table, cancellation slots, RNG
// streams and probes. There are no globals: two Simulations in one process are independent.
//
// Handlers are bound once, at build time, to (object, member function) pairs and referred to
// by a 32-bit id; dispatch is one indirect call through a plain function pointer, no
// std::function and no allocation per event. Models that keep one pending event per
// component (design.md principle 6) schedule with the payload naming what is due.
//
// Order: events run in (time, priority, insertion sequence) order. Lower priority values run
// first among events at the same time; equal priorities run in the order they were scheduled.

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "sim/event_queue.hpp"
#include "sim/probes.hpp"
#include "sim/rng.hpp"
#include "sim/units.hpp"

namespace fabricsim {

using Priority = std::uint8_t;
inline constexpr Priority kDefaultPriority = 128;

// Identifies a cancellable event. Cancelling after it ran or was cancelled is a no-op.
struct EventHandle {
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;
  bool valid() const { return slot != 0; }
};

enum class StopReason { kIdle, kTimeLimit, kStopped };

// Thrown by a model when the simulated system is in an impossible state or a configured
// condition (deadlock, no progress) ends the run; the CLI maps it to exit code 1.
class SimulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Simulation {
 public:
  explicit Simulation(std::uint64_t seed = 1) : rng_(seed) {}
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  Time now() const { return now_; }
  std::uint64_t events_processed() const { return events_processed_; }
  // Event-stream fingerprint (as OMNeT++ keeps one): a hash folded over every event run, of
  // its time, handler id and payload, in run order. Handler ids are given in binding order and
  // payloads name model state by index, so the value depends only on the scenario and seed:
  // any change to which events run, when, or in what order changes it. Tests pin it per kind
  // of run, so a refactor that claims to keep behaviour shows it does.
  std::uint64_t fingerprint() const { return fingerprint_; }
  // Events that are still to run and are model work: cancelled events waiting to be discarded
  // and background events (observers) are not counted.
  std::size_t pending_events() const {
    return queue_.size() - cancelled_pending_ - background_pending_;
  }
  RngStreams& rng() { return rng_; }
  ProbeRegistry& probes() { return probes_; }

  // Binds `obj.*Method(std::uint64_t payload)` as an event handler.
  template <auto Method, class C>
  HandlerId bind(C& obj) {
    return add_handler(
        &obj, [](void* self, std::uint64_t payload) { (static_cast<C*>(self)->*Method)(payload); });
  }
  // Binds a callable object (kept by reference; it must outlive the simulation's use of it).
  template <class F>
  requires std::is_invocable_v<F&, std::uint64_t> HandlerId bind_callable(F& f) {
    return add_handler(
        &f, [](void* self, std::uint64_t payload) { (*static_cast<F*>(self))(payload); });
  }

  void schedule_at(Time t, HandlerId h, std::uint64_t payload = 0,
                   Priority priority = kDefaultPriority) {
    push(t, h, payload, priority, 0);
  }
  void schedule_in(Time delay, HandlerId h, std::uint64_t payload = 0,
                   Priority priority = kDefaultPriority) {
    push(now_ + delay, h, payload, priority, 0);
  }
  // A background event (a periodic observer: sampler, monitor) runs like any other but does not
  // keep the simulation alive: run() ends idle when only background events are left, so two
  // observers that reschedule while "work is pending" cannot keep each other going.
  void schedule_background_in(Time delay, HandlerId h, std::uint64_t payload = 0,
                              Priority priority = kDefaultPriority) {
    ++background_pending_;
    push(now_ + delay, h, payload, priority, kBackgroundSlot);
  }
  EventHandle schedule_cancellable_at(Time t, HandlerId h, std::uint64_t payload = 0,
                                      Priority priority = kDefaultPriority);
  EventHandle schedule_cancellable_in(Time delay, HandlerId h, std::uint64_t payload = 0,
                                      Priority priority = kDefaultPriority) {
    return schedule_cancellable_at(now_ + delay, h, payload, priority);
  }
  // O(1): marks the slot dead; the event is skipped when it reaches the front.
  bool cancel(EventHandle handle);

  // Runs events with time <= limit. Returns why it stopped: kIdle when no live event is left
  // (cancelled events still queued do not count). Afterwards now() == limit when the limit was
  // reached, so later schedule_in calls count from there.
  StopReason run_until(Time limit);
  StopReason run() { return run_until(Time::max()); }
  // Ends the current run after the event being handled.
  void stop() { stop_requested_ = true; }

  // Called every `every_events` events with the current time and the events processed so far
  // (CLI progress display). Not on the per-event path: one counter compare per event.
  using ProgressFn = std::function<void(Time now, std::uint64_t events)>;
  void set_progress_callback(ProgressFn fn, std::uint64_t every_events = 1 << 16) {
    progress_ = std::move(fn);
    progress_every_ = every_events == 0 ? 1 : every_events;
  }

 private:
  using HandlerFn = void (*)(void*, std::uint64_t);
  struct Handler {
    HandlerFn fn;
    void* self;
  };
  struct Slot {
    std::uint32_t generation = 0;
    bool live = false;
  };

  HandlerId add_handler(void* self, HandlerFn fn);
  void push(Time t, HandlerId h, std::uint64_t payload, Priority priority, std::uint32_t slot);
  [[noreturn]] void throw_past(Time t) const;

  EventQueue queue_;
  std::vector<Handler> handlers_;
  std::vector<Slot> slots_{1};  // slot 0 means "not cancellable"
  std::vector<std::uint32_t> free_slots_;
  Time now_ = Time::zero();
  std::uint64_t next_sequence_ = 0;
  std::uint64_t events_processed_ = 0;
  std::uint64_t fingerprint_ = 0;
  std::size_t cancelled_pending_ = 0;
  std::size_t background_pending_ = 0;
  static constexpr std::uint32_t kBackgroundSlot = 0xffffffffu;
  bool stop_requested_ = false;
  ProgressFn progress_;
  std::uint64_t progress_every_ = 1 << 16;
  RngStreams rng_;
  ProbeRegistry probes_;
};

inline void Simulation::push(Time t, HandlerId h, std::uint64_t payload, Priority priority,
                             std::uint32_t slot) {
  if (t < now_) [[unlikely]]
    throw_past(t);
  queue_.push(Event{t, (std::uint64_t{priority} << 56) | next_sequence_++, h, slot, payload});
}

}  // namespace fabricsim
