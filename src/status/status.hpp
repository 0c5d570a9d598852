// status.hpp - how rocl code reports failure: a negative ROCL_E* code as the
// value, plus a thread-local sentence naming what was wrong, which the C API
// shows through rocl_last_error(). Normal outcomes are values, never
// exceptions.
#pragma once

#include "rocl/rocl.h"

namespace rocl::impl {

// Records "what went wrong" for the calling thread and returns code, so that
// call sites read `return fail(ROCL_EBADGID, "rocl_send: ...", gid);`.
int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// The calling thread's last recorded failure ("" if none).
const char *last_error() noexcept;

// Forgets the calling thread's last failure (called on entry to API calls).
void clear_error() noexcept;

// Static name of a code, as rocl_strerror.
const char *error_name(int code) noexcept;

}  // namespace rocl::impl
