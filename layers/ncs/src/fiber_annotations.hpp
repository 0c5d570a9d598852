// fiber_annotations.hpp - telling AddressSanitizer and ThreadSanitizer
// about the scheduler's stack switches, which they cannot see: ASan would
// take a user thread's stack for a wild region of the kernel thread's, and
// TSan would mix the threads' histories. Without a sanitizer every call is
// empty.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace ncs {

// One stack the scheduler switches to: a user thread's or its own.
struct AnnotatedStack {
  const void *bottom = nullptr;
  std::size_t size = 0;
  void *asan_fake_stack = nullptr;
  void *tsan_fiber = nullptr;
};

// Before a switch from `from` to `to`; from_ends: `from` will never run again.
inline void before_switch(AnnotatedStack &from, AnnotatedStack &to, bool from_ends) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(from_ends ? nullptr : &from.asan_fake_stack, to.bottom, to.size);
#endif
#if defined(__SANITIZE_THREAD__)
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
  (void)from;
  (void)to;
  (void)from_ends;
}

// On `self`, once a switch to it has completed; learns where it came from.
inline void after_switch(AnnotatedStack &self, AnnotatedStack *came_from) {
#if defined(__SANITIZE_ADDRESS__)
  const void *bottom = nullptr;
  std::size_t size = 0;
  __sanitizer_finish_switch_fiber(self.asan_fake_stack, &bottom, &size);
  if (came_from != nullptr) {
    came_from->bottom = bottom;
    came_from->size = size;
  }
#endif
  (void)self;
  (void)came_from;
}

// A user thread's stack, before it first runs; the kernel thread's own.
inline void annotate_new_stack(AnnotatedStack &s) {
#if defined(__SANITIZE_THREAD__)
  s.tsan_fiber = __tsan_create_fiber(0);
#endif
  (void)s;
}
inline void annotate_current_stack(AnnotatedStack &s) {
#if defined(__SANITIZE_THREAD__)
  s.tsan_fiber = __tsan_get_current_fiber();
#endif
  (void)s;
}
inline void forget_stack(AnnotatedStack &s) {
#if defined(__SANITIZE_THREAD__)
  if (s.tsan_fiber != nullptr) __tsan_destroy_fiber(s.tsan_fiber);
  s.tsan_fiber = nullptr;
#endif
  (void)s;
}

}  // namespace ncs
