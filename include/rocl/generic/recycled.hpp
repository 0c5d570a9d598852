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
    if (n == sizeof(T) && t_state != kDead) {
      Cache &c = cache();
      if (c.count < Keep) {
        c.items[c.count++] = p;
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  struct Cache {
    void *items[Keep];
    std::size_t count = 0;
    ~Cache() {
      t_state = kDead;
      while (count > 0) ::operator delete(items[--count]);
    }
  };
  static Cache &cache() noexcept {
    thread_local Cache c;
    return c;
  }
  static void *take(std::size_t n) noexcept {
    if (n != sizeof(T) || t_state == kDead) return nullptr;
    t_state = kAlive;
    Cache &c = cache();
    return c.count > 0 ? c.items[--c.count] : nullptr;
  }
  // Trivially destructible, so readable after the cache's destructor ran.
  enum State : unsigned char { kUnused, kAlive, kDead };
  static inline thread_local State t_state = kUnused;
};

}  // namespace rocl::generic
