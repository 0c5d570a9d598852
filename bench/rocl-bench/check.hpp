// check.hpp - every rocl call of the benchmarks goes through check(): a
// failure prints the call and rocl_last_error() and ends the process with
// status 1. Benchmarks have no way to recover, and a benchmark that goes on
// after an error would print numbers that mean nothing.
#pragma once

#include <cstdint>

namespace rocl_bench {

// Prints "rocl-bench: <message>" to stderr and exits with status 1 at once
// (from any thread: other threads may still be inside rocl).
[[noreturn]] void die(const char *format, ...) __attribute__((format(printf, 1, 2)));

// Dies naming `call`, rocl's code rc and rocl_last_error() of this thread.
[[noreturn]] void die_rocl(const char *call, std::int64_t rc);

// rc if it is >= 0; otherwise dies (see die_rocl).
inline std::int64_t check(std::int64_t rc, const char *call) {
  if (rc < 0) [[unlikely]]
    die_rocl(call, rc);
  return rc;
}

// p if it is not NULL; otherwise dies (rocl_bfget's only failure is ENOMEM).
void *check_buffer(void *p, const char *call);

}  // namespace rocl_bench
