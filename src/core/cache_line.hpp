// cache_line.hpp - asking for a cache line ahead of a write to it.
//
// A message between threads costs, above all, the cache lines it moves
// between cores (~0.056 us each on the VMs measured here): a write to a
// line another core holds waits for it, and two such waits in a row cost
// two transfers where asking for both at once costs about one.
#pragma once

#include <atomic>

namespace rocl::impl {

// Asks for the line at p in exclusive state (x86: PREFETCHW, a no-op on
// cpus without it; elsewhere the compiler's write prefetch). Written as an
// instruction because __builtin_prefetch(p, 1) becomes a read prefetch
// (the line comes shared) unless the whole build targets prfchw. Has no
// effect but on timing.
inline void prefetch_for_write(const void *p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" ::"m"(*static_cast<const char *>(p)));
#else
  __builtin_prefetch(p, 1);
#endif
}

// After a locked read-modify-write (a lock's exchange, a CAS): orders the
// stores before it against the loads after it, as a Dekker handshake needs
// (the Linux kernel's smp_mb__after_atomic). x86 has that from every locked
// instruction, so there it only keeps the compiler from moving accesses
// across; a separate MFENCE per small message was a fair part of its send.
inline void fence_after_locked_rmw() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  std::atomic_signal_fence(std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace rocl::impl
