// cache_line.hpp - asking for a cache line ahead of a write to it.
//
// A message between threads costs, above all, the cache lines it moves
// between cores (~0.056 us each on the VMs measured here): a write to a
// line another core holds waits for it, and two such waits in a row cost
// two transfers where asking for both at once costs about one.
#pragma once

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

}  // namespace rocl::impl
