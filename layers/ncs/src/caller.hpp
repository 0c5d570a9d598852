// caller.hpp - what every entry point checks first: NCS is initialised, the
// caller is a user thread, the ids it passes are in range.
#pragma once

#include "ncs.h"
#include "runtime.hpp"

namespace ncs {

// The runtime and the user thread a call is made by.
struct Caller {
  Runtime *runtime = nullptr;
  UserThread *thread = nullptr;

  int process() const { return runtime->job().process(); }
  int processes() const { return runtime->job().processes(); }
  bool is(int thread_id, int process_id) const {
    return thread_id == thread->id && process_id == process();
  }
};

// NCS_OK and *c filled in, NCS_ENOINIT or NCS_ENOTHREAD.
inline int enter(Caller *c) {
  c->runtime = Runtime::get();
  if (c->runtime == nullptr) return NCS_ENOINIT;
  c->thread = c->runtime->scheduler().current();
  return c->thread != nullptr ? NCS_OK : NCS_ENOTHREAD;
}

inline bool valid_thread(int t) {
  return t >= 0 && t < NCS_MAX_THREADS;
}
inline bool valid_process(const Caller &c, int p) {
  return p >= 0 && p < c.processes();
}

// A destination: no wildcard, both ids in range.
inline int check_destination(const Caller &c, int thread, int process) {
  if (thread == NCS_ANY || process == NCS_ANY) return NCS_EWILDCARD;
  return valid_thread(thread) && valid_process(c, process) ? NCS_OK : NCS_EBADID;
}

// A source to receive from: each id in range or NCS_ANY.
inline int check_source(const Caller &c, int thread, int process) {
  const bool thread_ok = thread == NCS_ANY || valid_thread(thread);
  const bool process_ok = process == NCS_ANY || valid_process(c, process);
  return thread_ok && process_ok ? NCS_OK : NCS_EBADID;
}

// Payload handed over (*data NULL) or copied into the caller's buffer,
// as NCS_recv says; takes the message unless it does not fit.
int hand_out(Runtime &runtime, Message *m, void **data, std::size_t *size);

}  // namespace ncs
