// rocl_api.cpp - the C API (rocl.h): argument checks and error text, then
// the context does the work.
#include <chrono>
#include <cstdio>
#include <memory>

#include "api/spawn.hpp"
#include "core/context.hpp"
#include "directory/attr_list.hpp"
#include "directory/query_wait.hpp"
#include "status/status.hpp"

using rocl::impl::Context;
using rocl::impl::fail;

namespace {

// The live context, or nullptr with ROCL_ENOINIT explained for `who`.
Context *context_for(const char *who) {
  rocl::impl::clear_error();
  Context *ctx = Context::current();
  if (ctx == nullptr) fail(ROCL_ENOINIT, "%s: rocl_init has not been called", who);
  return ctx;
}

}  // namespace

// The handler behind rocl_handler_t.
struct rocl_handler {
  std::unique_ptr<rocl::impl::QueryCursor> cursor;
};

extern "C" {

const char *rocl_strerror(int code) {
  return rocl::impl::error_name(code);
}
const char *rocl_last_error(void) {
  return rocl::impl::last_error();
}

int64_t rocl_init(void) {
  rocl::impl::clear_error();
  return Context::acquire_global();
}

int rocl_exit(void) {
  rocl::impl::clear_error();
  // The last exit ends the launcher first: its threads use the context.
  if (Context::global_references() == 1) rocl::impl::stop_launcher();
  return Context::release_global();
}

rocl_gid_t rocl_context_gid(void) {
  Context *ctx = Context::current();
  return ctx != nullptr ? ctx->gid() : ROCL_NULL_GID;
}

// ---- resources and directory ------------------------------------------------

int64_t rocl_register(rocl_attrl_t *attrs) {
  Context *ctx = context_for("rocl_register");
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (attrs == nullptr) return fail(ROCL_EINVAL, "rocl_register: attrs is NULL");
  return ctx->register_resource(*attrs);
}

int rocl_delete(rocl_gid_t gid) {
  Context *ctx = context_for("rocl_delete");
  return ctx != nullptr ? ctx->delete_resource(gid) : ROCL_ENOINIT;
}

int rocl_bfnet(void *ptr, const char *network) {
  Context *ctx = context_for("rocl_bfnet");
  return ctx != nullptr ? ctx->bind_route(ptr, network) : ROCL_ENOINIT;
}

int rocl_route(rocl_gid_t gid, const char *network) {
  Context *ctx = context_for("rocl_route");
  return ctx != nullptr ? ctx->bind_route(gid, network) : ROCL_ENOINIT;
}

int rocl_query(rocl_gid_t *gid, rocl_attrl_t *attrs) {
  Context *ctx = context_for("rocl_query");
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (gid == nullptr || attrs == nullptr)
    return fail(ROCL_EINVAL, "rocl_query: gid or attrs is NULL");
  return ctx->directory().query(gid, *attrs);
}

rocl_handler_t *rocl_query_start(rocl_attrl_t *attrs) {
  Context *ctx = context_for("rocl_query_start");
  if (ctx == nullptr) return nullptr;
  if (attrs == nullptr) {
    fail(ROCL_EINVAL, "rocl_query_start: attrs is NULL");
    return nullptr;
  }
  auto cursor = ctx->directory().query_start(*attrs);
  if (cursor == nullptr) return nullptr;
  return new rocl_handler{std::move(cursor)};
}

int64_t rocl_query_next(rocl_handler_t *handler, rocl_attrl_t *attrs) {
  if (context_for("rocl_query_next") == nullptr) return ROCL_ENOINIT;
  if (handler == nullptr || attrs == nullptr) {
    return fail(ROCL_EINVAL, "rocl_query_next: handler or attrs is NULL");
  }
  return handler->cursor->next(*attrs);
}

int rocl_query_wait(rocl_attrl_t *pattern, int count, int timeout_ms) {
  Context *ctx = context_for("rocl_query_wait");
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (pattern == nullptr) return fail(ROCL_EINVAL, "rocl_query_wait: pattern is NULL");
  return wait_for_matches(ctx->directory(), *pattern, count, std::chrono::milliseconds(timeout_ms));
}

int rocl_query_stop(rocl_handler_t *handler) {
  if (context_for("rocl_query_stop") == nullptr) return ROCL_ENOINIT;
  if (handler == nullptr) return fail(ROCL_EINVAL, "rocl_query_stop: handler is NULL");
  delete handler;
  return ROCL_OK;
}

// ---- buffers ---------------------------------------------------------------------

void *rocl_bfget(size_t len) {
  Context *ctx = context_for("rocl_bfget");
  return ctx != nullptr ? ctx->buffers().get(len) : nullptr;
}

int rocl_bfret(void *ptr) {
  Context *ctx = context_for("rocl_bfret");
  return ctx != nullptr ? ctx->buffers().give_back(ptr) : ROCL_ENOINIT;
}

int rocl_bftoret(void *ptr) {
  Context *ctx = context_for("rocl_bftoret");
  return ctx != nullptr ? ctx->buffers().return_after_send(ptr) : ROCL_ENOINIT;
}

int rocl_bfstat(void *ptr) {
  Context *ctx = context_for("rocl_bfstat");
  return ctx != nullptr ? ctx->buffers().status(ptr) : ROCL_ENOINIT;
}

size_t rocl_bfsize(void *ptr) {
  Context *ctx = context_for("rocl_bfsize");
  return ctx != nullptr ? ctx->buffers().size(ptr) : 0;
}

// ---- messages --------------------------------------------------------------------

int rocl_send(rocl_gid_t ogid, rocl_gid_t dgid, int tag, void *ptr, size_t len) {
  Context *ctx = context_for("rocl_send");
  return ctx != nullptr ? ctx->send(ogid, dgid, tag, 0, ptr, len) : ROCL_ENOINIT;
}

int rocl_recv(rocl_gid_t dgid, rocl_gid_t ogid, int tag, void **ptr, rocl_gid_t *aogid, int *atag,
              size_t *alen, int timeout) {
  Context *ctx = context_for("rocl_recv");
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (ptr == nullptr) return fail(ROCL_EINVAL, "rocl_recv: ptr (where to put the buffer) is NULL");
  rocl_status_t st;
  const int rc = ctx->recv(dgid, ogid, tag, 0, nullptr, 0, &st, timeout);
  if (rc != ROCL_OK) return rc;
  *ptr = st.ptr;
  if (aogid != nullptr) *aogid = st.origin;
  if (atag != nullptr) *atag = st.tag;
  if (alen != nullptr) *alen = st.len;
  return ROCL_OK;
}

int rocl_isend(rocl_gid_t ogid, rocl_gid_t dgid, int tag, void *ptr, size_t len,
               rocl_request_t *req) {
  Context *ctx = context_for("rocl_isend");
  return ctx != nullptr ? ctx->requests().isend(ogid, dgid, tag, 0, ptr, len, req) : ROCL_ENOINIT;
}

int rocl_irecv(rocl_gid_t dgid, rocl_gid_t ogid, int tag, rocl_request_t *req) {
  Context *ctx = context_for("rocl_irecv");
  return ctx != nullptr ? ctx->requests().irecv(dgid, ogid, tag, 0, nullptr, 0, req) : ROCL_ENOINIT;
}

// The x forms: domain and flags checked here, the rest as above.
namespace {
bool bad_domain(const char *who, uint32_t domain, unsigned flags) {
  if (domain > ROCL_DOMAIN_MAX) {
    fail(ROCL_EINVAL, "%s: domain %#x exceeds ROCL_DOMAIN_MAX", who, unsigned(domain));
    return true;
  }
  if (flags > ROCL_FLAGS_MAX) {
    fail(ROCL_EINVAL, "%s: flags %#x exceed ROCL_FLAGS_MAX", who, flags);
    return true;
  }
  return false;
}
}  // namespace

int rocl_sendx(rocl_gid_t ogid, rocl_gid_t dgid, int tag, uint32_t domain, unsigned flags,
               void *ptr, size_t len) {
  Context *ctx = context_for("rocl_sendx");
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (bad_domain("rocl_sendx", domain, flags)) return ROCL_EINVAL;
  return ctx->send(ogid, dgid, tag, rocl::impl::domain_word(domain, flags), ptr, len);
}

int rocl_isendx(rocl_gid_t ogid, rocl_gid_t dgid, int tag, uint32_t domain, unsigned flags,
                void *ptr, size_t len, rocl_request_t *req) {
  Context *ctx = context_for("rocl_isendx");
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (bad_domain("rocl_isendx", domain, flags)) return ROCL_EINVAL;
  return ctx->requests().isend(ogid, dgid, tag, rocl::impl::domain_word(domain, flags), ptr, len,
                               req);
}

int rocl_isendx_lend(rocl_gid_t ogid, rocl_gid_t dgid, int tag, uint32_t domain, unsigned flags,
                     void *ptr, size_t len, rocl_request_t *req) {
  Context *ctx = context_for("rocl_isendx_lend");
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (bad_domain("rocl_isendx_lend", domain, flags)) return ROCL_EINVAL;
  return ctx->requests().isend(ogid, dgid, tag, rocl::impl::domain_word(domain, flags), ptr, len,
                               req, true);
}

int rocl_recvx(rocl_gid_t dgid, rocl_gid_t ogid, int tag, uint32_t domain, void *into, size_t cap,
               rocl_status_t *status, int timeout) {
  Context *ctx = context_for("rocl_recvx");
  return ctx != nullptr ? ctx->recv(dgid, ogid, tag, domain, into, cap, status, timeout)
                        : ROCL_ENOINIT;
}

int rocl_irecvx(rocl_gid_t dgid, rocl_gid_t ogid, int tag, uint32_t domain, void *into, size_t cap,
                rocl_request_t *req) {
  Context *ctx = context_for("rocl_irecvx");
  return ctx != nullptr ? ctx->requests().irecv(dgid, ogid, tag, domain, into, cap, req)
                        : ROCL_ENOINIT;
}

int rocl_probe(rocl_gid_t dgid, rocl_gid_t ogid, int tag, uint32_t domain, rocl_status_t *status,
               int timeout) {
  Context *ctx = context_for("rocl_probe");
  return ctx != nullptr ? ctx->probe(dgid, ogid, tag, domain, status, timeout) : ROCL_ENOINIT;
}

int rocl_test(rocl_request_t *req, int *done, rocl_status_t *status) {
  Context *ctx = context_for("rocl_test");
  return ctx != nullptr ? ctx->requests().test(req, done, status) : ROCL_ENOINIT;
}

int rocl_wait(rocl_request_t *req, rocl_status_t *status, int timeout) {
  Context *ctx = context_for("rocl_wait");
  return ctx != nullptr ? ctx->requests().wait(req, status, timeout) : ROCL_ENOINIT;
}

int rocl_cancel(rocl_request_t *req) {
  Context *ctx = context_for("rocl_cancel");
  return ctx != nullptr ? ctx->requests().cancel(req) : ROCL_ENOINIT;
}

// ---- introspection ------------------------------------------------------------------

int rocl_pool_stats(rocl_pool_stats_t *out) {
  Context *ctx = context_for("rocl_pool_stats");
  if (ctx == nullptr) return ROCL_ENOINIT;
  if (out == nullptr) return fail(ROCL_EINVAL, "rocl_pool_stats: out is NULL");
  rocl::impl::PoolStats s = ctx->pool().stats();
  *out = rocl_pool_stats_t{s.cap_bytes, s.reserved_bytes, s.in_use_bytes, s.in_use_buffers};
  return ROCL_OK;
}

void rocl_print_options(void *file) {
  rocl::impl::print_options(file != nullptr ? static_cast<std::FILE *>(file) : stdout);
}

}  // extern "C"
