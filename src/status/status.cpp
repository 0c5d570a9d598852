// status.cpp - thread-local failure text behind rocl_last_error().
#include "status/status.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace rocl::impl {
namespace {
thread_local char t_last_error[512];
}

// Formats into a buffer of its own first: an argument may be last_error()
// itself (a sentence that wraps the one before it).
int fail(int code, const char *fmt, ...) {
  char sentence[sizeof t_last_error];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(sentence, sizeof sentence, fmt, ap);
  va_end(ap);
  std::memcpy(t_last_error, sentence, sizeof sentence);
  return code;
}

const char *last_error() noexcept {
  return t_last_error;
}

void clear_error() noexcept {
  t_last_error[0] = '\0';
}

const char *error_name(int code) noexcept {
  switch (code) {
    case ROCL_OK:
      return "success";
    case ROCL_EINVAL:
      return "invalid argument";
    case ROCL_ENOINIT:
      return "rocl is not initialised (call rocl_init)";
    case ROCL_ENOMEM:
      return "buffer pool cap reached";
    case ROCL_EBADBUF:
      return "not a live rocl buffer";
    case ROCL_EBUSY:
      return "buffer or resource busy";
    case ROCL_ETOOBIG:
      return "message too big";
    case ROCL_EBADGID:
      return "unknown resource gid";
    case ROCL_ETIMEDOUT:
      return "timed out";
    case ROCL_ENOTFOUND:
      return "no matching resource in the directory";
    case ROCL_EEND:
      return "no more answers";
    case ROCL_ENOSPC:
      return "no space left in attribute list";
    case ROCL_EDELETED:
      return "resource deleted";
    case ROCL_ECANCELED:
      return "operation cancelled";
    case ROCL_EALREADY:
      return "operation already completed";
    case ROCL_EPEER:
      return "peer failed or unreachable";
    case ROCL_EINTERNAL:
      return "internal error";
    case ROCL_EEXIST:
      return "already exists";
    default:
      return "unknown error";
  }
}

}  // namespace rocl::impl
