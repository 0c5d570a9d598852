// requests.hpp - the immediate operations (rocl_isend, rocl_irecv and the
// x forms; rocl_test, rocl_wait, rocl_cancel): a request handle made over
// the context's send and receive paths, completed or withdrawn later.
#pragma once

#include <cstddef>
#include <cstdint>

#include "message/message.hpp"
#include "rocl/rocl.h"

struct rocl_request;

namespace rocl::impl {

class Context;

// Part of a Context (its friend): it reaches the context's send and
// receive steps, the router and the caller progress, and owns no state of
// its own. Every call is thread-safe as the context's are; one request is
// the caller's, so it is completed by one thread.
class Requests {
 public:
  explicit Requests(Context &context) noexcept : context_(context) {}

  // lend: rocl_isendx_lend (a request only if ptr was lent, completed once
  // the receiver has read it; *req = nullptr if copied).
  int isend(rocl_gid_t ogid, rocl_gid_t dgid, int tag, std::uint32_t domain_word, void *ptr,
            std::size_t len, rocl_request **req, bool lend = false) noexcept;
  int irecv(rocl_gid_t dgid, rocl_gid_t ogid, int tag, std::uint32_t domain, void *into,
            std::size_t cap, rocl_request **req) noexcept;
  int test(rocl_request **req, int *done, rocl_status_t *status) noexcept;
  int wait(rocl_request **req, rocl_status_t *status, int timeout) noexcept;
  int cancel(rocl_request **req) noexcept;

 private:
  int isend_lend(rocl_gid_t ogid, rocl_gid_t dgid, int tag, std::uint32_t domain_word, void *ptr,
                 std::size_t len, rocl_request **req) noexcept;
  // Waits (spin, then sleeps backing off) until a lent send's block is
  // finished; timeout as rocl_wait's. True if it was.
  bool wait_sent(const BlockHeader *block, int timeout_ms) noexcept;
  int pull_rendezvous_of(rocl_request *r, Envelope **msg) noexcept;
  // Both inline in their callers (rocl_wait's and rocl_test's ends): they
  // run on every completed immediate operation.
  [[gnu::always_inline]] int complete_request(rocl_request **req, rocl_status_t *status) noexcept;
  // complete_request for `who` (rocl_wait, rocl_test), saying what failed.
  [[gnu::always_inline]] int finish(rocl_request **req, rocl_status_t *status,
                                    const char *who) noexcept;
  // wait() for a request that is not done yet (or NULL).
  [[gnu::noinline]] int wait_pending(rocl_request **req, rocl_status_t *status,
                                     int timeout) noexcept;

  Context &context_;
};

}  // namespace rocl::impl
