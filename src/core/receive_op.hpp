// receive_op.hpp - a receive that waits, as the core passes it down the
// transports' progress() to its own MessageSink calls (Waiter, transport.hpp):
// who decides what on the receive path is written in its arguments, not in
// per-thread state.
#pragma once

#include "rocl/rocl.h"
#include "transport/transport.hpp"

namespace rocl::impl {

class Resource;

// A blocking receive (rocl_recv) or the wait for an immediate one
// (rocl_wait) while it drives the transports. The waiting call holds a
// reference to `resource` the whole time (the receive's, or the request's),
// so a message its own progress() delivers there needs no second one
// (Context::arrival_resource).
struct ReceiveOp : Waiter {
  // `context`: the Context (MessageSink) whose receive this is.
  ReceiveOp(const MessageSink *context, rocl_gid_t gid, Resource *resource, bool takes_block,
            bool takes_arrived, const void *own_receive) noexcept
      : Waiter{context, gid, takes_block, takes_arrived},
        resource(resource),
        own_receive(own_receive) {}

  Resource *resource;
  // rocl_recv's envelope, which only this thread waits on (nullptr in
  // rocl_wait: a request's): completed by this thread's own progress(), it
  // is signalled without a locked instruction (Completion::signal_own).
  const void *own_receive;
  // Set by the wait's spin: what it waited for was there at its first look
  // (a receive behind a streaming sender finds its message so; a
  // ping-pong's does not).
  bool done_at_first_look = false;

  // The op a sink made, from the waiter a transport hands it: this one if
  // `sink` made it, else nullptr (no receive of this context waits here).
  static const ReceiveOp *of(const Waiter *waiter, const MessageSink *sink) noexcept {
    return waiter != nullptr && waiter->sink == sink ? static_cast<const ReceiveOp *>(waiter)
                                                     : nullptr;
  }
};

}  // namespace rocl::impl
