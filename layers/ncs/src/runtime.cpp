// runtime.cpp - setting a process's NCS up and down, and the way in: what
// arrives from rocl is checked, checksummed, queued for its thread, and
// wakes that thread if it waits for it.
#include "runtime.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ncs.h"
#include "rocl/rocl.h"

namespace ncs {
namespace {

// Not destroyed at exit: a user thread may call exit(), and destroying the
// fibers from the stack of one of them would unwind it.
Runtime *g_runtime = nullptr;

}  // namespace

Runtime *Runtime::get() {
  return g_runtime;
}

int Runtime::open(const Settings &settings, bool tcp_only) {
  if (g_runtime) return NCS_EBUSY;
  // Read by rocl_init: this process's transports (docs/options.md).
  if (tcp_only) setenv("ROCL_TRANSPORTS", "tcp", 1);
  if (rocl_init() < 0) return NCS_ECOMM;
  auto runtime = std::make_unique<Runtime>(settings);
  if (const int rc = runtime->job_.join(); rc != NCS_OK) {
    runtime->job_.drop();
    runtime.reset();
    rocl_exit();
    return rc;
  }
  g_runtime = runtime.release();
  return NCS_OK;
}

int Runtime::close() {
  if (!g_runtime) return NCS_ENOINIT;
  g_runtime->mailboxes_.clear();
  g_runtime->job_.leave();
  delete g_runtime;
  g_runtime = nullptr;
  rocl_exit();
  return NCS_OK;
}

void Runtime::progress(int timeout_ms) {
  for (int timeout = timeout_ms;; timeout = 0) {
    void *block = nullptr;
    std::size_t len = 0;
    const int rc =
        rocl_recv(job_.self(), ROCL_ANY_GID, ROCL_ANY_TAG, &block, nullptr, nullptr, &len, timeout);
    if (rc != ROCL_OK) return;
    accept(block, len);
  }
}

// A message from another process: its header must describe it, else it is
// not NCS's (or its header was damaged beyond use) and is dropped.
void Runtime::accept(void *block, std::size_t len) {
  Header h;
  if (const char *why = check_header(block, len, job_.processes(), &h)) {
    std::fprintf(stderr, "NCS, process %d: dropped a message of %zu bytes that is not NCS's (%s)\n",
                 job_.process(), len, why);
    rocl_bfret(block);
    return;
  }
  deliver(Message{h, block});
}

void Runtime::deliver(Message m) {
  if (m.header.channel == Channel::kCredit) {
    on_credits(m.header);
    rocl_bfret(m.block);
    return;
  }
  if ((m.header.flags & kChecksummed) != 0) {
    m.corrupt = message_checksum(m.header, m.payload()) != m.header.checksum;
  }
  mailboxes_.put(m);
  UserThread *t = scheduler_.find(m.header.to_thread);
  if (t != nullptr && t->state == ThreadState::kBlocked && t->reason == BlockReason::kMessage &&
      t->waiting_for.matches(m.header)) {
    scheduler_.make_runnable(t);
  }
}

Message *Runtime::await(const Pattern &p, int *rc) {
  UserThread *me = scheduler_.current();
  for (;;) {
    if (Message *m = mailboxes_.oldest(me->id, p)) return m;
    if (me->deadlocked) {
      me->deadlocked = false;
      *rc = NCS_EDEADLOCK;
      return nullptr;
    }
    me->waiting_for = p;
    scheduler_.block(BlockReason::kMessage);
  }
}

Message Runtime::take(Message *m) {
  Message taken = mailboxes_.take(m->header.to_thread, m);
  if ((taken.header.flags & kCredited) != 0) return_credits(taken.header);
  return taken;
}

int Runtime::count(const Pattern &p) {
  progress(0);
  return mailboxes_.count(scheduler_.current()->id, p);
}

}  // namespace ncs
