#pragma once
// Object pool for high-rate objects (packets): storage comes in chunks and is reused through
// a free list, so steady-state acquire/release never touches the allocator. Objects are
// constructed on acquire and destroyed on release. Not thread-safe (one pool per simulation).

#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace fabricsim {

template <class T, std::size_t ChunkSize = 1024>
class Pool {
 public:
  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() = default;  // objects still acquired are the owner's leak; storage is freed here

  template <class... Args>
  T* acquire(Args&&... args) {
    if (free_.empty()) grow();
    Slot* s = free_.back();
    free_.pop_back();
    ++in_use_;
    return std::construct_at(reinterpret_cast<T*>(s->bytes), std::forward<Args>(args)...);
  }
  void release(T* p) {
    std::destroy_at(p);
    free_.push_back(reinterpret_cast<Slot*>(p));
    --in_use_;
  }
  std::size_t in_use() const { return in_use_; }
  std::size_t capacity() const { return chunks_.size() * ChunkSize; }

 private:
  struct Slot {
    alignas(T) std::byte bytes[sizeof(T)];
  };
  void grow() {
    chunks_.push_back(std::make_unique<Slot[]>(ChunkSize));
    Slot* chunk = chunks_.back().get();
    free_.reserve(free_.size() + ChunkSize);
    for (std::size_t i = ChunkSize; i-- > 0;) free_.push_back(&chunk[i]);
  }
  std::vector<std::unique_ptr<Slot[]>> chunks_;
  std::vector<Slot*> free_;
  std::size_t in_use_ = 0;
};

}  // namespace fabricsim
