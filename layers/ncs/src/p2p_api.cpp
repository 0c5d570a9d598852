// p2p_api.cpp - point-to-point messages, 1-to-many, and wait/signal: the C
// entry points check their arguments and translate to the runtime.
#include <cstring>

#include "caller.hpp"
#include "rocl/rocl.h"

namespace ncs {

int hand_out(Runtime &runtime, Message *m, void **data, std::size_t *size) {
  const std::size_t len = m->header.payload_size;
  if (*data != nullptr && len > *size) {
    *size = len;
    return NCS_ETOOBIG;
  }
  Message taken = runtime.take(m);
  if (*data == nullptr) {
    *data = taken.payload();
  } else {
    if (len > 0) std::memcpy(*data, taken.payload(), len);
    rocl_bfret(taken.block);
  }
  *size = len;
  return NCS_OK;
}

}  // namespace ncs

using namespace ncs;

namespace {

int send_from(const Caller &c, Channel channel, int to_thread, int to_process, const void *data,
              std::size_t size) {
  if (const int rc = check_destination(c, to_thread, to_process)) return rc;
  if (data == nullptr && size > 0) return NCS_EINVAL;
  const int rc = c.runtime->send(channel, to_thread, to_process, data, size);
  // A thread of higher priority the message made runnable runs first.
  if (rc == NCS_OK) c.runtime->scheduler().run_higher_first();
  return rc;
}

int check_sender(const Caller &c, int from_thread, int from_process) {
  if (from_thread == NCS_ANY || from_process == NCS_ANY) return NCS_EWILDCARD;
  return c.is(from_thread, from_process) ? NCS_OK : NCS_EBADID;
}

int check_receiver(const Caller &c, int from_thread, int from_process, int to_thread,
                   int to_process) {
  if (to_thread == NCS_ANY || to_process == NCS_ANY) return NCS_EWILDCARD;
  if (!c.is(to_thread, to_process)) return NCS_EBADID;
  return check_source(c, from_thread, from_process);
}

}  // namespace

extern "C" {

int NCS_send(int from_thread, int from_process, int to_thread, int to_process, const void *data,
             size_t size) {
  Caller c;
  if (const int rc = enter(&c)) return rc;
  if (const int rc = check_sender(c, from_thread, from_process)) return rc;
  return send_from(c, Channel::kPointToPoint, to_thread, to_process, data, size);
}

int NCS_recv_from(int from_thread, int from_process, int to_thread, int to_process, void **data,
                  size_t *size, NCS_id *source) {
  Caller c;
  if (const int rc = enter(&c)) return rc;
  if (const int rc = check_receiver(c, from_thread, from_process, to_thread, to_process)) return rc;
  if (data == nullptr || size == nullptr) return NCS_EINVAL;
  int rc = NCS_OK;
  Message *m = c.runtime->await({Channel::kPointToPoint, from_thread, from_process}, &rc);
  if (m == nullptr) return rc;
  if (source != nullptr) *source = NCS_id{m->header.from_thread, m->header.from_process};
  if (m->corrupt) {
    rocl_bfret(c.runtime->take(m).block);
    return NCS_ECORRUPT;
  }
  return hand_out(*c.runtime, m, data, size);
}

int NCS_recv(int from_thread, int from_process, int to_thread, int to_process, void **data,
             size_t *size) {
  return NCS_recv_from(from_thread, from_process, to_thread, to_process, data, size, nullptr);
}

int NCS_probe(int from_thread, int from_process) {
  Caller c;
  if (const int rc = enter(&c)) return rc;
  if (const int rc = check_source(c, from_thread, from_process)) return rc;
  return c.runtime->count({Channel::kPointToPoint, from_thread, from_process});
}

int NCS_free(void *data) {
  if (data == nullptr) return NCS_OK;
  return rocl_bfret(Message::block_of(data)) == ROCL_OK ? NCS_OK : NCS_EINVAL;
}

int NCS_bcast(int from_thread, int from_process, const NCS_id *list, const void *data,
              size_t size) {
  Caller c;
  if (const int rc = enter(&c)) return rc;
  if (const int rc = check_sender(c, from_thread, from_process)) return rc;
  if (list == nullptr) return NCS_EINVAL;
  for (const NCS_id *to = list; to->thread != NCS_ANY; ++to) {
    if (const int rc = send_from(c, Channel::kPointToPoint, to->thread, to->process, data, size)) {
      return rc;
    }
  }
  return NCS_OK;
}

int NCS_signal(int to_thread, int to_process) {
  Caller c;
  if (const int rc = enter(&c)) return rc;
  return send_from(c, Channel::kSignal, to_thread, to_process, nullptr, 0);
}

int NCS_wait(int from_thread, int from_process) {
  Caller c;
  if (const int rc = enter(&c)) return rc;
  if (const int rc = check_source(c, from_thread, from_process)) return rc;
  int rc = NCS_OK;
  Message *m = c.runtime->await({Channel::kSignal, from_thread, from_process}, &rc);
  if (m == nullptr) return rc;
  const bool corrupt = m->corrupt;
  rocl_bfret(c.runtime->take(m).block);
  return corrupt ? NCS_ECORRUPT : NCS_OK;
}

}  // extern "C"
