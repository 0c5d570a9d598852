// check.cpp - see check.hpp.
#include "check.hpp"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <string>

#include "rocl/rocl.h"

namespace rocl_bench {

void die(const char *format, ...) {
  std::fflush(stdout);
  std::va_list args;
  va_start(args, format);
  std::fputs("rocl-bench: ", stderr);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
  std::fflush(stderr);
  _exit(1);
}

void die_rocl(const char *call, std::int64_t rc) {
  // Copy first: the sentence is only valid until this thread's next rocl call.
  std::string why = rocl_last_error();
  const char *name = rocl_strerror(static_cast<int>(rc));
  die("%s failed with %s: %s", call, name, why.empty() ? "(no explanation given)" : why.c_str());
}

void *check_buffer(void *p, const char *call) {
  if (p == nullptr) [[unlikely]]
    die_rocl(call, ROCL_ENOMEM);
  return p;
}

}  // namespace rocl_bench
