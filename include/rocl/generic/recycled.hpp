// recycled.hpp - a per-thread cache of freed objects of one type, for
// objects made and freed at message rate (the requests of immediate
// operations): `struct R : rocl::generic::Recycled<R> {...}` gives R an
// operator new/delete that take from and give back to the calling thread's
// cache (up to Keep objects) before the heap. A message-rate benchmark spent
// a fifth of the receiver's time in malloc and free for two requests per
// message; from the cache they cost a few loads and stores.
//
// Contract: objects may be freed by another thread than the one that made
// them (they join the freeing thread's cache). Only objects of exactly
// sizeof(T) are cached (a derived type goes to the heap). A thread's cache
// is freed when it exits; a delete after that (from another thread_local's
// destructor) goes to the heap.
#pragma once

#include <cstddef>
#include <new>

namespace rocl::generic {

template <class T, std::size_t Keep = 64>
class Recycled {
 public:
  static void *operator new(std::size_t n) {
    if (void *p = take(n)) return p;
    return ::operator new(n);
  }
  static void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
    if (void *p = take(n)) return p;
    return ::operator new(n, std::nothrow);
  }
  static void operator delete(void *p, std::size_t n) noexcept {
    if (p == nullptr) return;
    Cache &c = t_cache;
    if (n == sizeof(T) && (c.state == kAlive || arm_unless_dead()) && c.count < Keep) {
      c.items[c.count++] = p;
      return;
    }
    ::operator delete(p);
  }

 private:
  enum State : unsigned char { kUnused, kAlive, kDead };
  // Trivial and constant-initialised, so that every access is a plain
  // thread-local load or store: a function-local thread_local with a
  // destructor (as this was) costs a guard check on every use (18
  // instructions per new or delete against 14-15 now, four of them per
  // message of an MPI_Irecv/MPI_Wait loop). The destructor lives in Reaper.
  struct Cache {
    void *items[Keep];
    std::size_t count;
    State state;
  };
  static constinit inline thread_local Cache t_cache{};

  // Gives the cache's objects back to the heap when the thread exits; a
  // delete after that (another thread_local's destructor) goes to the heap.
  struct Reaper {
    ~Reaper() {
      Cache &c = t_cache;
      c.state = kDead;
      while (c.count > 0) ::operator delete(c.items[--c.count]);
    }
  };
  // The thread's first use: registers its Reaper (a thread_local with a
  // destructor, touched only here).
  [[gnu::noinline, gnu::cold]] static void arm() noexcept {
    thread_local Reaper reaper;
    static_cast<void>(reaper);
    t_cache.state = kAlive;
  }
  // The first use of this thread's cache arms it (true); false once the
  // thread's exit has freed it.
  static bool arm_unless_dead() noexcept {
    if (t_cache.state == kDead) return false;
    arm();
    return true;
  }
  static void *take(std::size_t n) noexcept {
    Cache &c = t_cache;
    if (n != sizeof(T) || (c.state != kAlive && !arm_unless_dead())) return nullptr;
    return c.count > 0 ? c.items[--c.count] : nullptr;
  }
};

}  // namespace rocl::generic
