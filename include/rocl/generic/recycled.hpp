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
    if (n == sizeof(T) && (c.count < c.room || arm_unless_dead())) {
      c.items[c.count++] = p;
      return;
    }
    ::operator delete(p);
  }

 private:
  // Trivial and constant-initialised, so that every access is a plain
  // thread-local load or store: a function-local thread_local with a
  // destructor costs a guard check on every use. `room` is Keep while the
  // cache may be used and 0 before its first use and after the thread's
  // exit freed it, so that the common case of new and delete is one
  // comparison (an MPI_Irecv/MPI_Wait loop makes four of them per message:
  // compare's rocl-mpi-shm streams show it). The destructor lives in Reaper.
  struct Cache {
    void *items[Keep];
    std::size_t count;
    std::size_t room;
    bool dead;
  };
  static constinit inline thread_local Cache t_cache{};

  // Gives the cache's objects back to the heap when the thread exits; a
  // delete after that (another thread_local's destructor) goes to the heap.
  struct Reaper {
    ~Reaper() {
      Cache &c = t_cache;
      c.dead = true;
      c.room = 0;
      while (c.count > 0) ::operator delete(c.items[--c.count]);
    }
  };
  // For a delete that found no room: true if this was the thread's first
  // use, which arms the cache (registers its Reaper, a thread_local with a
  // destructor touched only here), leaving room for p. False if the cache
  // is full, or gone with the thread's exit.
  [[gnu::noinline, gnu::cold]] static bool arm_unless_dead() noexcept {
    Cache &c = t_cache;
    if (c.dead || c.room != 0) return false;
    thread_local Reaper reaper;
    static_cast<void>(reaper);
    c.room = Keep;
    return true;
  }
  static void *take(std::size_t n) noexcept {
    Cache &c = t_cache;
    if (n != sizeof(T)) return nullptr;
    if (c.count > 0) [[likely]]
      return c.items[--c.count];
    if (c.room == 0) arm_unless_dead();  // the first new of the thread: empty anyway
    return nullptr;
  }
};

}  // namespace rocl::generic
