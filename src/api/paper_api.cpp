// paper_api.cpp - the RoCL paper's API with `int` gids (rocl/rocl_paper.h),
// over the C API: gids and lengths converted both ways, and a gid that
// does not fit an int refused with a sentence instead of truncated.
#include <climits>
#include <cstddef>

#include "rocl/rocl.h"
#include "rocl/rocl_paper.h"
#include "status/status.hpp"

// rocl_paper.h renames the paper's calls; here the real ones are meant.
#undef rocl_register
#undef rocl_delete
#undef rocl_query
#undef rocl_query_next
#undef rocl_send
#undef rocl_recv
#undef rocl_context_gid

namespace {

using rocl::impl::fail;

rocl_gid_t wide(int gid) {
  return gid == ROCL_ANY ? ROCL_ANY_GID : static_cast<rocl_gid_t>(static_cast<unsigned>(gid));
}

// A gid as the paper's int, or ROCL_EINVAL with a sentence.
int narrow(const char *who, rocl_gid_t gid, int *out) {
  if (gid > static_cast<rocl_gid_t>(INT_MAX)) {
    return fail(ROCL_EINVAL,
                "%s: gid %#llx does not fit the RoCL paper's int (rocl_paper.h): run the job "
                "with ROCL_GID_BITS=31, whose directory servers issue gids that do",
                who, static_cast<unsigned long long>(gid));
  }
  *out = static_cast<int>(gid);
  return ROCL_OK;
}

}  // namespace

extern "C" {

int rocl_paper_register(rocl_attrl_t *attrs) {
  const int64_t g = rocl_register(attrs);
  if (g < 0) return static_cast<int>(g);
  if (static_cast<rocl_gid_t>(g) > static_cast<rocl_gid_t>(INT_MAX)) {
    rocl_delete(static_cast<rocl_gid_t>(g));  // nobody could name it
  }
  int out = 0;
  const int rc = narrow("rocl_register", static_cast<rocl_gid_t>(g), &out);
  return rc == ROCL_OK ? out : rc;
}

int rocl_paper_delete(int gid) {
  return rocl_delete(wide(gid));
}

int rocl_paper_query(int *gid, rocl_attrl_t *attrs) {
  if (gid == nullptr) return fail(ROCL_EINVAL, "rocl_query: gid is NULL");
  rocl_gid_t g = *gid == 0 ? ROCL_NULL_GID : wide(*gid);
  const int rc = rocl_query(&g, attrs);
  if (rc != ROCL_OK) return rc;
  return narrow("rocl_query", g, gid);
}

int rocl_paper_query_next(rocl_handler_t *handler, rocl_attrl_t *attrs) {
  const int64_t g = rocl_query_next(handler, attrs);
  if (g < 0) return static_cast<int>(g);
  int out = 0;
  const int rc = narrow("rocl_query_next", static_cast<rocl_gid_t>(g), &out);
  return rc == ROCL_OK ? out : rc;
}

int rocl_paper_send(int ogid, int dgid, int tag, void *ptr, int len) {
  if (len < 0) return fail(ROCL_EINVAL, "rocl_send: length %d is negative", len);
  return rocl_send(wide(ogid), wide(dgid), tag, ptr, static_cast<size_t>(len));
}

int rocl_paper_recv(int dgid, int ogid, int tag, void **ptr, int *aogid, int *atag, int *alen,
                    int timeout) {
  rocl_gid_t origin = ROCL_NULL_GID;
  size_t len = 0;
  const int rc = rocl_recv(wide(dgid), wide(ogid), tag, ptr, &origin, atag, &len, timeout);
  if (rc != ROCL_OK) return rc;
  if (len > static_cast<size_t>(INT_MAX)) {
    return fail(ROCL_ETOOBIG,
                "rocl_recv: a message of %zu bytes does not fit the paper's int "
                "length (the buffer at *ptr is the caller's)",
                len);
  }
  if (alen != nullptr) *alen = static_cast<int>(len);
  if (aogid != nullptr) return narrow("rocl_recv", origin, aogid);
  return ROCL_OK;
}

int rocl_paper_context_gid(void) {
  int out = 0;
  const int rc = narrow("rocl_context_gid", rocl_context_gid(), &out);
  return rc == ROCL_OK ? out : rc;
}

}  // extern "C"
