// futex.hpp - sleeping on a 32-bit word until another thread changes it
// (Linux futex): among the threads of one process, or across processes on
// a word in shared memory. The one place rocl makes the system call; locks,
// completions and the shared-memory rings' wake-ups build on it.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <ctime>
#include <type_traits>

namespace rocl::platform {

// A word a futex can sleep on: a lock-free atomic of a 32-bit integer,
// laid out as the integer itself.
template <class Word>
concept FutexWord = (std::is_same_v<Word, std::atomic<std::uint32_t>> ||
                     std::is_same_v<Word, std::atomic<std::int32_t>>)&&sizeof(Word) == 4 &&
                    Word::is_always_lock_free;

// Who may wait on and wake a word: threads of this process (the cheaper
// private futex), or processes that map the word's shared memory.
enum class FutexScope { kProcess, kShared };

// Sleeps while *word == expected, at most `timeout` (nullptr: no limit; a
// relative time). Returns at once if the word differs already; may also
// return on a signal or spuriously: callers re-read the word and loop.
template <FutexWord Word>
inline void futex_wait(Word *word, typename Word::value_type expected,
                       const timespec *timeout = nullptr,
                       FutexScope scope = FutexScope::kProcess) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<typename Word::value_type *>(word),
            scope == FutexScope::kProcess ? FUTEX_WAIT_PRIVATE : FUTEX_WAIT, expected, timeout,
            nullptr, 0);
}

// futex_wait for at most `timeout`.
template <FutexWord Word>
inline void futex_wait_for(Word *word, typename Word::value_type expected,
                           std::chrono::nanoseconds timeout) noexcept {
  if (timeout < std::chrono::nanoseconds::zero()) timeout = std::chrono::nanoseconds::zero();
  const auto ns = timeout.count();
  const timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  futex_wait(word, expected, &ts);
}

// Whether futex_waitv works here (Linux 5.16 on, and not refused by a
// seccomp filter): tried once, on a word that differs (EAGAIN at once).
inline bool futex_waitv_available() noexcept {
#if defined(SYS_futex_waitv) && defined(FUTEX_32)
  static const bool works = [] {
    std::uint32_t word = 1;
    struct futex_waitv w = {};
    w.val = 0;
    w.uaddr = reinterpret_cast<std::uintptr_t>(&word);
    w.flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
    return ::syscall(SYS_futex_waitv, &w, 1u, 0u, nullptr, CLOCK_MONOTONIC) >= 0 || errno == EAGAIN;
  }();
  return works;
#else
  return false;
#endif
}

// Sleeps while *a == expected_a and *b == expected_b (a of this process,
// b in shared memory if b_shared), until the absolute CLOCK_MONOTONIC
// time `until` (nullptr: no limit); may return spuriously, as futex_wait.
// Without futex_waitv (futex_waitv_available()) it sleeps on `a` alone for
// at most 1 ms, so that a change of `b` is seen within that.
template <FutexWord Word>
inline void futex_wait_either(Word *a, typename Word::value_type expected_a, Word *b,
                              typename Word::value_type expected_b, bool b_shared,
                              const timespec *until) noexcept {
#if defined(SYS_futex_waitv) && defined(FUTEX_32)
  struct futex_waitv w[2] = {};
  w[0].val = static_cast<std::uint32_t>(expected_a);
  w[0].uaddr = reinterpret_cast<std::uintptr_t>(a);
  w[0].flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
  w[1].val = static_cast<std::uint32_t>(expected_b);
  w[1].uaddr = reinterpret_cast<std::uintptr_t>(b);
  w[1].flags = FUTEX_32 | (b_shared ? 0 : FUTEX_PRIVATE_FLAG);
  if (futex_waitv_available()) {
    ::syscall(SYS_futex_waitv, w, 2u, 0u, until, CLOCK_MONOTONIC);
    return;
  }
#endif
  (void)b;
  (void)expected_b;
  (void)b_shared;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  long long left_ns = 1000000;
  if (until != nullptr) {
    left_ns = std::min<long long>(
        left_ns, (until->tv_sec - now.tv_sec) * 1000000000LL + (until->tv_nsec - now.tv_nsec));
    if (left_ns <= 0) return;
  }
  const timespec ts{static_cast<time_t>(left_ns / 1000000000),
                    static_cast<long>(left_ns % 1000000000)};
  futex_wait(a, expected_a, &ts);
}

// futex_wait for a waiter that names itself with `bits` (not 0): only
// wakes whose bits meet them, and plain futex_wake, wake it. `until` is an
// absolute CLOCK_MONOTONIC time (nullptr: no limit).
template <FutexWord Word>
inline void futex_wait_bits(Word *word, typename Word::value_type expected, std::uint32_t bits,
                            const timespec *until, FutexScope scope) noexcept {
  ::syscall(
      SYS_futex, reinterpret_cast<typename Word::value_type *>(word),
      scope == FutexScope::kProcess ? (FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG) : FUTEX_WAIT_BITSET,
      expected, until, nullptr, bits);
}

// Wakes up to `count` of the threads sleeping on word whose bits meet
// `bits` (futex_wait_bits); those of futex_wait and futex_wait_either
// meet every bit.
template <FutexWord Word>
inline void futex_wake_bits(Word *word, int count, std::uint32_t bits, FutexScope scope) noexcept {
  ::syscall(
      SYS_futex, reinterpret_cast<typename Word::value_type *>(word),
      scope == FutexScope::kProcess ? (FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG) : FUTEX_WAKE_BITSET,
      count, nullptr, nullptr, bits);
}

// Wakes up to `count` threads sleeping on word (INT_MAX: all), in the
// scope they wait in.
template <FutexWord Word>
inline void futex_wake(Word *word, int count = INT_MAX,
                       FutexScope scope = FutexScope::kProcess) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<typename Word::value_type *>(word),
            scope == FutexScope::kProcess ? FUTEX_WAKE_PRIVATE : FUTEX_WAKE, count, nullptr,
            nullptr, 0);
}

}  // namespace rocl::platform
