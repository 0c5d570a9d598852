// shm_written_parts.hpp - which part of a recently received message this
// process's cpu wrote, for the placement hint of sending it on.
//
// A message received through a copy offer (shm_copy_offer.cpp) was written
// by two cpus: one part by the receiver, the rest by the sender with
// process_vm_writev, and each part stays dirty in the cache of the cpu that
// wrote it. A program that sends the message on (a ping-pong, a ring of
// ranks passing data along) would otherwise have both cpus read lines
// dirty in the other's cache: the receiver of the next hop copies the part
// offers give receivers, the sender the rest, whoever wrote them. With the
// hint (wire::kFlagSenderHoldsFirst) each cpu copies the part it holds.
//
// Contract: remember() after a receive, sender_holds_first() before a
// rendezvous send; any thread. Only a hint: a wrong answer (the buffer was
// rewritten, or reused for other data of the same length) costs cache
// misses, never correctness, so a small table of the latest receives is
// enough and an entry is never invalidated but by a newer one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace rocl::impl::shm::detail {

class WrittenParts {
 public:
  // `data`'s len bytes were received here; first_here: this cpu wrote the
  // first part (the sender the rest). false also when it wrote them all.
  void remember(const void *data, std::size_t len, bool first_here) {
    const std::lock_guard<std::mutex> g(mu_);
    Entry *e = find(data, len);
    if (e == nullptr) {
      e = &entries_[next_];
      next_ = (next_ + 1) % kEntries;
    }
    *e = Entry{address(data), len, first_here};
  }

  // Whether this cpu wrote the first part of the message at data (len
  // bytes) when it last received it, and not the rest.
  bool sender_holds_first(const void *data, std::size_t len) {
    const std::lock_guard<std::mutex> g(mu_);
    const Entry *e = find(data, len);
    return e != nullptr && e->first_here;
  }

 private:
  // Enough for the messages a few threads bounce at once.
  static constexpr unsigned kEntries = 8;
  struct Entry {
    std::uintptr_t data = 0;
    std::size_t len = 0;
    bool first_here = false;
  };
  static std::uintptr_t address(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }
  Entry *find(const void *data, std::size_t len) {
    for (Entry &e : entries_) {
      if (e.data == address(data) && e.len == len && len != 0) return &e;
    }
    return nullptr;
  }

  std::mutex mu_;
  Entry entries_[kEntries];
  unsigned next_ = 0;
};

}  // namespace rocl::impl::shm::detail
