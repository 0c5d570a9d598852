// threads_api.cpp - NCS's set-up and its user threads: init, finalize,
// create, start, ids, yield, block and unblock; and the error texts.
#include <cstdlib>
#include <cstring>

#include "caller.hpp"

using namespace ncs;

namespace {

bool speed_is_normal(int speed) {
  if (speed != NCS_SPEED_DEFAULT) return speed == NCS_SPEED_NORMAL;
  const char *v = std::getenv("ROCL_NCS_SPEED");
  return v != nullptr && std::strcmp(v, "normal") == 0;
}

std::size_t stack_bytes() {
  const char *v = std::getenv("ROCL_NCS_STACK_KB");
  const long kib = v != nullptr ? std::atol(v) : 0;
  return kib > 0 ? static_cast<std::size_t>(kib) * 1024 : 256 * 1024;
}

}  // namespace

extern "C" {

const char *NCS_strerror(int code) {
  switch (code) {
    case NCS_OK:
      return "success";
    case NCS_EINVAL:
      return "invalid argument";
    case NCS_ENOINIT:
      return "NCS is not initialised (NCS_init)";
    case NCS_EBADID:
      return "thread or process id out of range or not the caller's";
    case NCS_EWILDCARD:
      return "wildcard (NCS_ANY) where none is allowed";
    case NCS_ETOOBIG:
      return "message does not fit the buffer";
    case NCS_ECORRUPT:
      return "message failed its checksum and was dropped";
    case NCS_ENOTHREAD:
      return "not called from an NCS user thread";
    case NCS_ENOMEM:
      return "out of memory for the message";
    case NCS_ENOTMEMBER:
      return "the caller is not in the group";
    case NCS_EBUSY:
      return "NCS is already initialised or running";
    case NCS_ECOMM:
      return "communication failed (rocl)";
    case NCS_EDEADLOCK:
      return "every thread is blocked: none can be woken";
    default:
      return "unknown NCS error";
  }
}

int NCS_init_mode(int flow, int error, int speed) {
  if (flow < 0 || flow > 0xffff) return NCS_EINVAL;
  if (error != NCS_ERROR_TRUST && error != NCS_ERROR_CHECKSUM) return NCS_EINVAL;
  if (speed != NCS_SPEED_DEFAULT && speed != NCS_SPEED_NORMAL && speed != NCS_SPEED_HIGH) {
    return NCS_EINVAL;
  }
  const Settings settings{flow, error == NCS_ERROR_CHECKSUM, stack_bytes()};
  return Runtime::open(settings, speed_is_normal(speed));
}

int NCS_init(int flow, int error) {
  return NCS_init_mode(flow, error, NCS_SPEED_DEFAULT);
}

int NCS_finalize(void) {
  Runtime *rt = Runtime::get();
  if (rt == nullptr) return NCS_ENOINIT;
  if (rt->scheduler().running()) return NCS_EBUSY;
  return Runtime::close();
}

int NCS_t_create(void (*fn)(void *), void *arg, int priority) {
  Runtime *rt = Runtime::get();
  if (rt == nullptr) return NCS_ENOINIT;
  if (fn == nullptr || priority < NCS_PRIORITY_MIN || priority > NCS_PRIORITY_MAX) {
    return NCS_EINVAL;
  }
  if (rt->scheduler().find(NCS_MAX_THREADS - 1) != nullptr) return NCS_ENOMEM;
  const int id = rt->scheduler().create(fn, arg, priority);
  if (id < 0) return NCS_ENOMEM;
  rt->scheduler().run_higher_first();  // from a user thread: a higher new one runs first
  return id;
}

int NCS_start(void) {
  Runtime *rt = Runtime::get();
  if (rt == nullptr) return NCS_ENOINIT;
  if (rt->scheduler().running()) return NCS_EBUSY;
  rt->scheduler().run(*rt);
  return NCS_OK;
}

int NCS_get_my_id(void) {
  Runtime *rt = Runtime::get();
  return rt != nullptr ? rt->job().process() : NCS_ENOINIT;
}

int NCS_get_num_processes(void) {
  Runtime *rt = Runtime::get();
  return rt != nullptr ? rt->job().processes() : NCS_ENOINIT;
}

int NCS_get_my_thread(void) {
  Caller c;
  if (const int rc = enter(&c)) return rc;
  return c.thread->id;
}

int NCS_yield(void) {
  Caller c;
  if (const int rc = enter(&c)) return rc;
  c.runtime->scheduler().yield();  // the scheduler looks at rocl between switches
  return NCS_OK;
}

int NCS_block(void) {
  Caller c;
  if (const int rc = enter(&c)) return rc;
  UserThread *me = c.thread;
  while (!me->wake_permit) {
    if (me->deadlocked) {
      me->deadlocked = false;
      return NCS_EDEADLOCK;
    }
    c.runtime->scheduler().block(BlockReason::kParked);
  }
  me->wake_permit = false;
  return NCS_OK;
}

int NCS_unblock(int tid) {
  Runtime *rt = Runtime::get();
  if (rt == nullptr) return NCS_ENOINIT;
  UserThread *t = rt->scheduler().find(tid);
  if (t == nullptr || t->state == ThreadState::kFinished) return NCS_EBADID;
  t->wake_permit = true;
  if (t->state == ThreadState::kBlocked && t->reason == BlockReason::kParked) {
    rt->scheduler().make_runnable(t);
  }
  rt->scheduler().run_higher_first();
  return NCS_OK;
}

}  // extern "C"
