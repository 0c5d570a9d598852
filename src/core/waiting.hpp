// waiting.hpp - the resource the calling thread waits on, so that a message
// its own poll delivers there needs no second reference to the resource.
#pragma once

#include "rocl/rocl.h"
#include "transport/transport.hpp"

namespace rocl::impl {

class Context;
class Resource;

// The resource this thread waits on in recv() or wait(), which holds a
// reference to it the whole time (the receive's, or the request's): a
// message the thread's own poll delivers there takes none (get and put are
// two locked instructions between the message's arrival and the receive's
// return, ~8 ns each here).
struct Waiting {
  const Context *context = nullptr;
  rocl_gid_t gid = ROCL_NULL_GID;
  Resource *resource = nullptr;
  // rocl_recv's envelope, which only this thread waits on (nullptr in
  // rocl_wait: a request's): completed by this thread's own poll, it is
  // signalled without a locked instruction (Completion::signal_own).
  const void *own_receive = nullptr;
};
extern constinit thread_local Waiting t_waiting;

// Whether this thread's last spin_until (caller_progress.cpp) ended at its
// first look: what it waited for was there already (a receive behind a
// streaming sender finds its message so; a ping-pong's receive does not).
extern constinit thread_local bool t_done_at_first_look;

// Sets t_waiting for its lifetime, and t_waits_for_block (transport.hpp)
// to gid unless the receive has memory of its own (into_memory); restores
// what was there.
class WaitingOn {
 public:
  WaitingOn(const Context *context, rocl_gid_t gid, Resource *r, bool into_memory,
            const void *own_receive = nullptr) noexcept
      : saved_(t_waiting), saved_for_block_(t_waits_for_block) {
    t_waiting = Waiting{context, gid, r, own_receive};
    t_waits_for_block = into_memory ? ROCL_NULL_GID : gid;
  }
  ~WaitingOn() {
    t_waiting = saved_;
    t_waits_for_block = saved_for_block_;
  }
  WaitingOn(const WaitingOn &) = delete;
  WaitingOn &operator=(const WaitingOn &) = delete;

 private:
  Waiting saved_;
  rocl_gid_t saved_for_block_;
};

}  // namespace rocl::impl
