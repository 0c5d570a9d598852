// cpu.hpp - what a spinning or lock-free thread asks of the processor:
// pausing in a spin, asking for a cache line ahead of a write, ordering
// after a locked read-modify-write. The lowest layer of rocl: it depends on
// nothing else of rocl, and every layer above may use it.
#pragma once

#include <atomic>
#include <cstddef>

namespace rocl::platform {

// The size of a cache line on the machines rocl targets: the unit of
// sharing between cores, which hot shared fields are aligned to.
inline constexpr std::size_t kCacheLine = 64;

// One round of a spin-wait: tells the core that this thread only waits (x86
// PAUSE, ARM YIELD), so that a sibling hyper-thread runs and the spin does
// not flood the memory system. Has no effect but on timing.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Asks for the line at p in exclusive state (x86: PREFETCHW, a no-op on
// cpus without it; elsewhere the compiler's write prefetch). Written as an
// instruction because __builtin_prefetch(p, 1) becomes a read prefetch (the
// line comes shared) unless the whole build targets prfchw. Two writes to
// lines another core holds then cost about one transfer instead of two.
// Has no effect but on timing.
inline void prefetch_for_write(const void *p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" ::"m"(*static_cast<const char *>(p)));
#else
  __builtin_prefetch(p, 1);
#endif
}

// Asks for the line at p to be read soon (kept in every cache level).
inline void prefetch_for_read(const void *p) noexcept {
  __builtin_prefetch(p, 0, 3);
}

// After a locked read-modify-write (a lock's exchange, a CAS): orders the
// stores before it against the loads after it, as a Dekker handshake needs
// (the Linux kernel's smp_mb__after_atomic). x86 has that from every locked
// instruction, so there it only keeps the compiler from moving accesses
// across; elsewhere it is a full fence.
inline void fence_after_locked_rmw() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  std::atomic_signal_fence(std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace rocl::platform
