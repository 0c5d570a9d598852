// request.cpp - immediate and persistent operations and their completion.
// A request wraps at most one rocl request: the receive (rocl_irecvx, into
// the user's memory when the datatype is dense), for a synchronous send
// the receive of its acknowledgement, for a standard or ready send that
// rocl lent (rocl_isendx_lend) the send. Other sends complete when posted.
#include <sched.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "mpi_impl.hpp"
#include "rocl/generic/recycled.hpp"

// Recycled: two requests per message at message rate (this and rocl's).
struct rocl_mpi_request : rocl::generic::Recycled<rocl_mpi_request> {
  enum class Kind { kSend, kRecv };
  Kind kind = Kind::kSend;
  int mode = 0;  // for sends: kStandard, kSync, kBuffered, kReady
  bool persistent = false;
  bool active = false;
  bool done = false;
  bool freed = false;  // MPI_Request_free'd while active: complete, then delete
  const void *buf = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int peer = 0, tag = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  rocl_request_t inner = ROCL_REQUEST_NULL;
  char none = 0;  // where 0-byte receives land
  MPI_Status status{};
  int error = MPI_SUCCESS;
  std::shared_ptr<rmpi::Job> job;  // a non-blocking collective's (icoll.cpp)
  ~rocl_mpi_request() {
    if (type != MPI_DATATYPE_NULL) rmpi::release_type(type);
  }
};

namespace rmpi {
namespace {

enum Mode { kStandard, kSync, kBuffered, kReady };
const char *const kSendName[] = {"MPI_Isend", "MPI_Issend", "MPI_Ibsend", "MPI_Irsend"};

// Requests freed while active: completed by later completion calls.
std::mutex g_orphans_lock;
std::vector<MPI_Request> g_orphans;

void finish(MPI_Request r, int error) {
  r->done = true;
  r->error = error;
  release_comm(r->comm);  // the reference the active request held
}

// Completes r from its rocl request's outcome. Inline in poll and block:
// it runs on every message, where a call's cost shows.
[[gnu::always_inline]] inline void complete(MPI_Request r, int rc, const rocl_status_t &st) {
  if (rc == ROCL_ECANCELED) {
    set_status(&r->status, r->peer, r->tag, 0);
    r->status.rocl_cancelled = 1;
    finish(r, MPI_SUCCESS);
  } else if (rc != ROCL_OK) {
    finish(r,
           fail_rocl(r->comm, rc,
                     r->kind == rocl_mpi_request::Kind::kRecv ? "MPI_Irecv" : kSendName[r->mode]));
  } else if (r->kind == rocl_mpi_request::Kind::kRecv) {
    finish(r, finish_recv(r->comm, r->peer, st, const_cast<void *>(r->buf), r->count, r->type,
                          &r->status, "MPI_Irecv"));
  } else {
    set_status(&r->status, r->peer, r->tag, r->type->packed * std::size_t(r->count));
    finish(r, MPI_SUCCESS);
  }
}

// A non-blocking collective's request, once its job is done.
void finish_job(MPI_Request r) {
  set_empty_status(&r->status);
  const int error = r->job->error;
  r->job.reset();
  finish(r, error);
}

// Non-blocking look at r; true once it is done (or was never active).
bool poll(MPI_Request r) {
  if (!r->active || r->done) return true;
  if (r->inner == ROCL_REQUEST_NULL) {
    if (r->job && r->job->done.load(std::memory_order_acquire)) finish_job(r);
    return r->done;
  }
  int done = 0;
  rocl_status_t st{};
  const int rc = rocl_test(&r->inner, &done, &st);
  if (done) complete(r, rc, st);
  return done != 0;
}

void block(MPI_Request r) {
  if (!r->active || r->done) return;
  if (r->job) {
    r->job->wait();
    finish_job(r);
    return;
  }
  rocl_status_t st{};
  const int rc = rocl_wait(&r->inner, &st, -1);
  complete(r, rc, st);
}

void drain_orphans() {
  std::unique_lock<std::mutex> guard(g_orphans_lock, std::try_to_lock);
  if (!guard.owns_lock() || g_orphans.empty()) return;
  auto done = [](MPI_Request r) {
    if (!poll(r)) return false;
    delete r;
    return true;
  };
  g_orphans.erase(std::remove_if(g_orphans.begin(), g_orphans.end(), done), g_orphans.end());
}

// What a completion call reports for r (done or inactive), then r is
// released: a persistent request becomes inactive, another is freed. A
// single-completion call leaves status.MPI_ERROR alone (MPI 3.1 3.2.5).
int retire(MPI_Request *handle, MPI_Status *status, bool single) {
  MPI_Request r = *handle;
  const bool live = r != MPI_REQUEST_NULL && r->active;
  const int error = live ? r->error : MPI_SUCCESS;
  if (status != MPI_STATUS_IGNORE) {
    const int keep = status->MPI_ERROR;
    if (live) {
      *status = r->status;
    } else {
      set_empty_status(status);
    }
    status->MPI_ERROR = single ? keep : error;
  }
  if (!live) return MPI_SUCCESS;
  if (r->persistent) {
    r->active = r->done = false;
  } else {
    delete r;
    *handle = MPI_REQUEST_NULL;
  }
  return error;
}

// Waits between polls of several requests: spin first, then yield the
// cpu (other threads of ours may be the ones that must run).
void pause_after(int round) {
  if (round > 2000) {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  } else if (round > 200) {
    sched_yield();
  }
}

// start()'s beginning for both kinds: r becomes active (and holds a
// reference to its communicator). False if start() is done already: r was
// active (*rc the error) or its peer is MPI_PROC_NULL (r completed).
bool begin(MPI_Request r, const char *who, int *rc) {
  if (r->active) {
    *rc = fail(r->comm, MPI_ERR_REQUEST, who, "the request is already active");
    return false;
  }
  r->active = true;
  r->done = false;
  r->inner = ROCL_REQUEST_NULL;
  retain_comm(r->comm);
  if (r->peer == MPI_PROC_NULL) {
    set_status(&r->status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
    finish(r, MPI_SUCCESS);
    *rc = MPI_SUCCESS;
    return false;
  }
  return true;
}

// start() of a receive; `who` names the call in errors. Inline in irecv:
// on the path of every MPI_Irecv.
[[gnu::always_inline]] inline int start_recv(MPI_Request r, const char *who) {
  if (int rc; !begin(r, who, &rc)) return rc;
  MPI_Comm c = r->comm;
  void *into;
  std::size_t cap;
  receive_target(const_cast<void *>(r->buf), r->count, r->type, &r->none, &into, &cap);
  const int rc = rocl_irecvx(c->self, source_gid(c, r->peer), rocl_tag(r->tag), kPointToPoint, into,
                             cap, &r->inner);
  if (rc != ROCL_OK) [[unlikely]] {
    const int e = fail_rocl(c, rc, who);
    finish(r, e);
    return e;
  }
  return MPI_SUCCESS;
}

int start_send(MPI_Request r) {
  const char *who = kSendName[r->mode];
  if (int rc; !begin(r, who, &rc)) return rc;
  MPI_Comm c = r->comm;
  int rc = ROCL_OK;
  if (r->mode == kBuffered) {
    if (int e = check_bsend_room(c, r->count, r->type, who)) {
      finish(r, e);
      return e;
    }
  }
  if (r->mode == kSync) {  // listen for the acknowledgement before it can come
    rc = rocl_irecvx(c->self, c->gids[r->peer], r->tag, kSyncAck, &r->none, 0, &r->inner);
  }
  if (rc != ROCL_OK) {
    const int e = fail_rocl(c, rc, who);
    finish(r, e);
    return e;
  }
  const bool may_lend = r->mode == kStandard || r->mode == kReady;
  if (int e = post_send(r->buf, r->count, r->type, r->peer, r->tag, c,
                        r->mode == kSync ? kSyncFlag : 0, who, may_lend ? &r->inner : nullptr)) {
    if (r->inner != ROCL_REQUEST_NULL) rocl_cancel(&r->inner);
    finish(r, e);
    return e;
  }
  if (r->mode != kSync && r->inner == ROCL_REQUEST_NULL) {  // not lent: done
    set_status(&r->status, r->peer, r->tag, r->type->packed * std::size_t(r->count));
    finish(r, MPI_SUCCESS);
  }
  return MPI_SUCCESS;
}

int start(MPI_Request r) {
  return r->kind == rocl_mpi_request::Kind::kRecv ? start_recv(r, "MPI_Start (receive)")
                                                  : start_send(r);
}

MPI_Request make(rocl_mpi_request::Kind kind, int mode, const void *buf, int count, MPI_Datatype t,
                 int peer, int tag, MPI_Comm comm, bool persistent) {
  auto *r = new rocl_mpi_request;
  r->kind = kind;
  r->mode = mode;
  r->buf = buf;
  r->count = count;
  r->type = t;
  retain_type(t);
  r->peer = peer;
  r->tag = tag;
  r->comm = comm;
  r->persistent = persistent;
  return r;
}

int isend(int mode, const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
          MPI_Request *request, bool persistent) {
  if (int rc = check_send(buf, count, t, dest, tag, comm, kSendName[mode])) return rc;
  MPI_Request r =
      make(rocl_mpi_request::Kind::kSend, mode, buf, count, t, dest, tag, comm, persistent);
  *request = r;
  if (persistent) return MPI_SUCCESS;
  return start_send(r);  // an error is also in r: its completion reports it again
}

int irecv(void *buf, int count, MPI_Datatype t, int source, int tag, MPI_Comm comm,
          MPI_Request *request, bool persistent) {
  if (int rc = check_recv(count, t, source, tag, comm, persistent ? "MPI_Recv_init" : "MPI_Irecv"))
    return rc;
  MPI_Request r =
      make(rocl_mpi_request::Kind::kRecv, 0, buf, count, t, source, tag, comm, persistent);
  *request = r;
  if (persistent) return MPI_SUCCESS;
  return start_recv(r, "MPI_Irecv");
}

}  // namespace

MPI_Request job_request(MPI_Comm comm, std::shared_ptr<Job> job) {
  MPI_Request r =
      make(rocl_mpi_request::Kind::kRecv, 0, nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, comm, false);
  r->active = true;
  retain_comm(comm);
  r->job = std::move(job);
  return r;
}

MPI_Request completed_request(MPI_Comm comm, const MPI_Status &status, int error) {
  MPI_Request r =
      make(rocl_mpi_request::Kind::kRecv, 0, nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, comm, false);
  r->active = true;
  retain_comm(comm);
  r->status = status;
  finish(r, error);
  return r;
}

namespace {

bool is_live(MPI_Request r) {
  return r != MPI_REQUEST_NULL && r->active;
}

// Waitall's and Testall's end, once every request is done.
int retire_all(int count, MPI_Request requests[], MPI_Status statuses[]) {
  bool failed = false;
  for (int i = 0; i < count; ++i) {
    MPI_Status *s = statuses != MPI_STATUSES_IGNORE ? &statuses[i] : MPI_STATUS_IGNORE;
    failed |= retire(&requests[i], s, false) != MPI_SUCCESS;
  }
  return failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

}  // namespace
}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request) {
  return isend(kStandard, buf, count, datatype, dest, tag, comm, request, false);
}
int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request) {
  return isend(kSync, buf, count, datatype, dest, tag, comm, request, false);
}
int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request) {
  return isend(kBuffered, buf, count, datatype, dest, tag, comm, request, false);
}
int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request) {
  return isend(kReady, buf, count, datatype, dest, tag, comm, request, false);
}
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request) {
  return irecv(buf, count, datatype, source, tag, comm, request, false);
}
int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                  MPI_Comm comm, MPI_Request *request) {
  return isend(kStandard, buf, count, datatype, dest, tag, comm, request, true);
}
int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request) {
  return isend(kSync, buf, count, datatype, dest, tag, comm, request, true);
}
int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request) {
  return isend(kBuffered, buf, count, datatype, dest, tag, comm, request, true);
}
int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request) {
  return isend(kReady, buf, count, datatype, dest, tag, comm, request, true);
}
int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                  MPI_Request *request) {
  return irecv(buf, count, datatype, source, tag, comm, request, true);
}

int MPI_Start(MPI_Request *request) {
  if (*request == MPI_REQUEST_NULL || !(*request)->persistent) {
    return fail(nullptr, MPI_ERR_REQUEST, "MPI_Start", "not a persistent request");
  }
  return start(*request);
}

int MPI_Startall(int count, MPI_Request array_of_requests[]) {
  for (int i = 0; i < count; ++i) {
    if (int rc = MPI_Start(&array_of_requests[i])) return rc;
  }
  return MPI_SUCCESS;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  drain_orphans();
  if (is_live(*request)) block(*request);
  return retire(request, status, true);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  drain_orphans();
  *flag = !is_live(*request) || poll(*request);
  return *flag ? retire(request, status, true) : MPI_SUCCESS;
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status) {
  *flag = !is_live(request) || poll(request);
  if (!*flag || status == MPI_STATUS_IGNORE) return MPI_SUCCESS;
  const int keep = status->MPI_ERROR;  // a single-completion call leaves it alone
  if (!is_live(request)) {
    set_empty_status(status);
  } else {
    *status = request->status;
  }
  status->MPI_ERROR = keep;
  return MPI_SUCCESS;
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]) {
  drain_orphans();
  for (int i = 0; i < count; ++i) {
    if (is_live(array_of_requests[i])) block(array_of_requests[i]);
  }
  return retire_all(count, array_of_requests, array_of_statuses);
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[]) {
  drain_orphans();
  bool all = true;
  for (int i = 0; i < count; ++i) {
    if (is_live(array_of_requests[i]) && !poll(array_of_requests[i])) all = false;
  }
  *flag = all;
  if (!all) return MPI_SUCCESS;
  return retire_all(count, array_of_requests, array_of_statuses);
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                MPI_Status *status) {
  drain_orphans();
  *index = MPI_UNDEFINED;
  bool any_live = false;
  for (int i = 0; i < count; ++i) {
    if (!is_live(array_of_requests[i])) continue;
    any_live = true;
    if (poll(array_of_requests[i])) {
      *index = i;
      *flag = 1;
      return retire(&array_of_requests[i], status, true);
    }
  }
  *flag = !any_live;
  if (!any_live) {
    MPI_Request none = MPI_REQUEST_NULL;
    retire(&none, status, true);  // an empty status
  }
  return MPI_SUCCESS;
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status) {
  int live = -1, nlive = 0;
  for (int i = 0; i < count; ++i) {
    if (is_live(array_of_requests[i])) live = i, ++nlive;
  }
  if (nlive == 1) {  // one to wait for: wait the way a blocking call does (it may sleep)
    *index = live;
    return MPI_Wait(&array_of_requests[live], status);
  }
  for (int round = 0;; ++round) {
    int flag = 0;
    if (int rc = MPI_Testany(count, array_of_requests, index, &flag, status)) return rc;
    if (flag) return MPI_SUCCESS;
    pause_after(round);
  }
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[]) {
  drain_orphans();
  bool any_live = false, failed = false;
  *outcount = 0;
  for (int i = 0; i < incount; ++i) {
    if (!is_live(array_of_requests[i])) continue;
    any_live = true;
    if (!poll(array_of_requests[i])) continue;
    MPI_Status *s = array_of_statuses != MPI_STATUSES_IGNORE ? &array_of_statuses[*outcount]
                                                             : MPI_STATUS_IGNORE;
    array_of_indices[*outcount] = i;
    ++*outcount;
    failed |= retire(&array_of_requests[i], s, false) != MPI_SUCCESS;
  }
  if (!any_live) *outcount = MPI_UNDEFINED;
  return failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[]) {
  for (int round = 0;; ++round) {
    const int rc =
        MPI_Testsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;
    pause_after(round);
  }
}

int MPI_Cancel(MPI_Request *request) {
  MPI_Request r = *request;
  if (r == MPI_REQUEST_NULL)
    return fail(nullptr, MPI_ERR_REQUEST, "MPI_Cancel", "MPI_REQUEST_NULL");
  // Only a receive not yet matched can be withdrawn: a send has left once posted.
  if (r->kind == rocl_mpi_request::Kind::kRecv && is_live(r) && !r->done &&
      r->inner != ROCL_REQUEST_NULL && rocl_cancel(&r->inner) == ROCL_OK) {
    complete(r, ROCL_ECANCELED, rocl_status_t{});
  }
  return MPI_SUCCESS;
}

int MPI_Test_cancelled(const MPI_Status *status, int *flag) {
  *flag = status->rocl_cancelled;
  return MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request *request) {
  MPI_Request r = *request;
  if (r == MPI_REQUEST_NULL)
    return fail(nullptr, MPI_ERR_REQUEST, "MPI_Request_free", "MPI_REQUEST_NULL");
  *request = MPI_REQUEST_NULL;
  if (!is_live(r) || poll(r)) {
    delete r;
    return MPI_SUCCESS;
  }
  r->persistent = false;
  std::lock_guard<std::mutex> guard(g_orphans_lock);
  g_orphans.push_back(r);
  return MPI_SUCCESS;
}

}  // extern "C"
