// futex.hpp - sleeping on a 32-bit word until another thread changes it
// (Linux futex): among the threads of one process, or across processes on
// a word in shared memory. The one place rocl makes the system call; locks,
// completions and the shared-memory rings' wake-ups build on it.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
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
