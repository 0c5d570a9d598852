// p2p.cpp - blocking point-to-point: one rocl call each. A dense datatype
// goes straight from the user's memory (rocl copies it into a pool block
// as it sends) and straight into it (rocl_recvx); other datatypes are
// packed into a pool block that is handed over without a further copy.
//
// Send modes (docs/mpi.md): standard and ready sends of dense data lend
// the user's memory from kMayLendBytes (rocl_isendx_lend; rocl lends from
// ROCL_LEND_THRESHOLD where the receiver can read it, and copies
// otherwise): they complete once the receive has copied it, as MPI allows.
// Smaller ones, buffered sends and those rocl copies complete once rocl
// has accepted the message (rocl itself goes rendezvous above
// ROCL_RNDV_THRESHOLD); a synchronous send carries kSyncFlag
// (ROCL_FLAG_ACK) and waits for the acknowledgement rocl sends when a
// receive matches it, in the kSyncAck domain.
#include <algorithm>
#include <mutex>

#include "mpi_impl.hpp"

namespace rmpi {
namespace {

struct AttachedBuffer {
  std::mutex lock;
  void *buffer = nullptr;
  int size = 0;
} g_attached;

}  // namespace

// MPI_ERROR is left alone: only calls completing several requests set it
// (MPI 3.1 section 3.2.5); they do so themselves.
void set_status(MPI_Status *s, int source, int tag, std::size_t bytes) {
  if (s == MPI_STATUS_IGNORE) return;
  s->MPI_SOURCE = source;
  s->MPI_TAG = tag;
  s->rocl_cancelled = 0;
  s->rocl_bytes = static_cast<long long>(bytes);
}

void set_empty_status(MPI_Status *s) {
  set_status(s, MPI_ANY_SOURCE, MPI_ANY_TAG, 0);
}

int send_bytes(MPI_Comm comm, int to, int tag, Domain d, const void *p, std::size_t n) {
  const int rc = rocl_sendx(comm->self, comm->gids[to], tag, d, 0, const_cast<void *>(p), n);
  return rc == ROCL_OK ? MPI_SUCCESS : fail_rocl(comm, rc, "collective send");
}

int recv_bytes(MPI_Comm comm, int from, int tag, Domain d, void *p, std::size_t n) {
  rocl_status_t st;
  char none;
  const int rc = rocl_recvx(comm->self, comm->gids[from], tag, d, n != 0 ? p : &none, n, &st, -1);
  if (rc != ROCL_OK) return fail_rocl(comm, rc, "collective receive");
  if (st.len != n) {
    return fail(comm, MPI_ERR_TRUNCATE, "collective",
                "rank %d sent %zu bytes where %zu were expected", from, st.len, n);
  }
  return MPI_SUCCESS;
}

// Below this a send does not even ask rocl to lend (ROCL_LEND_THRESHOLD
// is 32 KiB by default): asking costs a second look at the origin and the
// route (rocl copies what it does not lend, and then makes no request).
constexpr std::size_t kMayLendBytes = 4096;

// Sends n bytes at p to rank `to` in domain d: lent (rocl_isendx_lend) where
// lent may be set, which rocl then sets to the request to wait for (left
// NULL if it copied), else copied (rocl_sendx). Returns rocl's code.
int send_contiguous(MPI_Comm comm, int to, int tag, Domain d, unsigned flags, const void *p,
                    std::size_t n, rocl_request_t *lent) {
  void *data = const_cast<void *>(p);
  return lent != nullptr && n >= kMayLendBytes
             ? rocl_isendx_lend(comm->self, comm->gids[to], tag, d, flags, data, n, lent)
             : rocl_sendx(comm->self, comm->gids[to], tag, d, flags, data, n);
}

// Waits until the receiver has copied what a send lent (rocl_isendx_lend).
int wait_lent(MPI_Comm comm, rocl_request_t *lent, const char *who) {
  const int rc = rocl_wait(lent, nullptr, -1);
  return rc == ROCL_OK ? MPI_SUCCESS : fail_rocl(comm, rc, who);
}

int send_to_receiver(MPI_Comm comm, int to, int tag, Domain d, const void *p, std::size_t n) {
  rocl_request_t lent = ROCL_REQUEST_NULL;
  if (int rc = send_contiguous(comm, to, tag, d, 0, p, n, &lent); rc != ROCL_OK) {
    return fail_rocl(comm, rc, "collective send");
  }
  return lent != ROCL_REQUEST_NULL ? wait_lent(comm, &lent, "collective send") : MPI_SUCCESS;
}

// A pairwise exchange (recursive doubling): the send may lend `mine`, so it
// is waited for after the receive, by which time the partner, doing the
// same, has taken it. mine must not change until this returns.
int exchange_bytes(MPI_Comm comm, int partner, int tag, Domain d, const void *mine, void *theirs,
                   std::size_t n) {
  rocl_request_t lent = ROCL_REQUEST_NULL;
  if (int rc = send_contiguous(comm, partner, tag, d, 0, mine, n, &lent); rc != ROCL_OK) {
    return fail_rocl(comm, rc, "collective send");
  }
  const int received = recv_bytes(comm, partner, tag, d, theirs, n);
  const int sent =
      lent != ROCL_REQUEST_NULL ? wait_lent(comm, &lent, "collective send") : MPI_SUCCESS;
  return received != MPI_SUCCESS ? received : sent;
}

// The one send path of every mode; dest is a rank (not PROC_NULL).
int post_send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
              unsigned flags, const char *who, rocl_request_t *lent) {
  const std::size_t bytes = t->packed * std::size_t(count);
  int rc;
  if (t->dense) {
    char *from = static_cast<char *>(const_cast<void *>(buf)) + t->first();
    rc = send_contiguous(comm, dest, tag, kPointToPoint, flags, from, bytes, lent);
  } else {
    void *block = rocl_bfget(bytes);
    if (block == nullptr) return fail_rocl(comm, ROCL_ENOMEM, who);
    pack(buf, count, t, block);
    rocl_bftoret(block);
    rc = rocl_sendx(comm->self, comm->gids[dest], tag, kPointToPoint, flags, block, bytes);
    if (rc != ROCL_OK) rocl_bfret(block);
  }
  return rc == ROCL_OK ? MPI_SUCCESS : fail_rocl(comm, rc, who);
}

int check_send(const void *, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
               const char *who) {
  if (int rc = check_comm(comm, who)) return rc;
  if (int rc = check_count(comm, count, who)) return rc;
  if (int rc = check_type(comm, t, who)) return rc;
  if (int rc = check_rank(comm, dest, false, who)) return rc;
  return check_tag(comm, tag, false, who);
}

int check_recv(int count, MPI_Datatype t, int source, int tag, MPI_Comm comm, const char *who) {
  if (int rc = check_comm(comm, who)) return rc;
  if (int rc = check_count(comm, count, who)) return rc;
  if (int rc = check_type(comm, t, who)) return rc;
  if (int rc = check_rank(comm, source, true, who)) return rc;
  return check_tag(comm, tag, true, who);
}

int wait_sync_ack(MPI_Comm comm, int dest, int tag, const char *who) {
  rocl_status_t st;
  char none;
  const int rc = rocl_recvx(comm->self, comm->gids[dest], tag, kSyncAck, &none, 0, &st, -1);
  return rc == ROCL_OK ? MPI_SUCCESS : fail_rocl(comm, rc, who);
}

// A receive's rocl arguments: where the payload goes (nullptr: hand the
// block over, to unpack) and how much fits.
void receive_target(void *buf, int count, MPI_Datatype t, void *none, void **into,
                    std::size_t *cap) {
  *cap = t->packed * std::size_t(count);
  *into = !t->dense ? nullptr : *cap != 0 ? static_cast<char *>(buf) + t->first() : none;
}

// The four blocking sends: mode 'S'ynchronous, 'B'uffered, 'R'eady, or
// 0 for standard.
int blocking_send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
                  char mode, const char *who) {
  if (int rc = check_send(buf, count, t, dest, tag, comm, who)) return rc;
  if (dest == MPI_PROC_NULL) return MPI_SUCCESS;
  if (mode == 'B') {
    if (int rc = check_bsend_room(comm, count, t, who)) return rc;
  }
  const unsigned flags = mode == 'S' ? kSyncFlag : 0;
  rocl_request_t lent = ROCL_REQUEST_NULL;
  const bool may_lend = mode == 0 || mode == 'R';
  if (int rc = post_send(buf, count, t, dest, tag, comm, flags, who, may_lend ? &lent : nullptr))
    return rc;
  if (lent != ROCL_REQUEST_NULL) return wait_lent(comm, &lent, who);
  return mode == 'S' ? wait_sync_ack(comm, dest, tag, who) : MPI_SUCCESS;
}

int do_recv(void *buf, int count, MPI_Datatype t, int source, int tag, MPI_Comm comm,
            MPI_Status *status, const char *who) {
  void *into;
  std::size_t cap;
  char none;
  receive_target(buf, count, t, &none, &into, &cap);
  rocl_status_t st;
  const int rc = rocl_recvx(comm->self, source_gid(comm, source), rocl_tag(tag), kPointToPoint,
                            into, cap, &st, -1);
  if (rc != ROCL_OK) return fail_rocl(comm, rc, who);
  return finish_recv(comm, source, st, buf, count, t, status, who);
}

int probe(int source, int tag, MPI_Comm comm, int timeout, int *flag, MPI_Status *status,
          const char *who) {
  if (int rc = check_recv(0, MPI_BYTE, source, tag, comm, who)) return rc;
  *flag = 1;
  if (source == MPI_PROC_NULL) {
    set_status(status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
    return MPI_SUCCESS;
  }
  rocl_status_t st;
  const int rc =
      rocl_probe(comm->self, source_gid(comm, source), rocl_tag(tag), kPointToPoint, &st, timeout);
  if (rc == ROCL_ETIMEDOUT && timeout == 0) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  if (rc != ROCL_OK) return fail_rocl(comm, rc, who);
  set_status(status, comm->source_rank(st.origin, source), st.tag, st.len);
  return MPI_SUCCESS;
}

int check_bsend_room(MPI_Comm comm, int count, MPI_Datatype t, const char *who) {
  std::lock_guard<std::mutex> guard(g_attached.lock);
  const long long need = static_cast<long long>(t->packed) * count + MPI_BSEND_OVERHEAD;
  if (g_attached.buffer == nullptr || need > g_attached.size) {
    return fail(comm, MPI_ERR_BUFFER, who,
                "%lld bytes (with MPI_BSEND_OVERHEAD) exceed the %d bytes of the attached buffer",
                need, g_attached.size);
  }
  return MPI_SUCCESS;
}

}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return blocking_send(buf, count, datatype, dest, tag, comm, 0, "MPI_Send");
}
int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return blocking_send(buf, count, datatype, dest, tag, comm, 'R', "MPI_Rsend");
}
int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return blocking_send(buf, count, datatype, dest, tag, comm, 'B', "MPI_Bsend");
}
int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return blocking_send(buf, count, datatype, dest, tag, comm, 'S', "MPI_Ssend");
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status) {
  if (int rc = check_recv(count, datatype, source, tag, comm, "MPI_Recv")) return rc;
  if (source == MPI_PROC_NULL) {
    set_status(status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
    return MPI_SUCCESS;
  }
  return do_recv(buf, count, datatype, source, tag, comm, status, "MPI_Recv");
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status) {
  // A lent send is waited for after the receive: two ranks that exchange
  // with Sendrecv each take the other's message before waiting for theirs.
  if (int rc = check_send(sendbuf, sendcount, sendtype, dest, sendtag, comm, "MPI_Sendrecv"))
    return rc;
  rocl_request_t lent = ROCL_REQUEST_NULL;
  if (dest != MPI_PROC_NULL) {
    if (int rc =
            post_send(sendbuf, sendcount, sendtype, dest, sendtag, comm, 0, "MPI_Sendrecv", &lent))
      return rc;
  }
  const int received = MPI_Recv(recvbuf, recvcount, recvtype, source, recvtag, comm, status);
  const int sent = lent != ROCL_REQUEST_NULL ? wait_lent(comm, &lent, "MPI_Sendrecv") : MPI_SUCCESS;
  return received != MPI_SUCCESS ? received : sent;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
  if (int rc = check_send(buf, count, datatype, dest, sendtag, comm, "MPI_Sendrecv_replace"))
    return rc;
  if (dest != MPI_PROC_NULL) {
    // Sending copies the data out of buf before it returns: buf is free to receive into.
    if (int rc = post_send(buf, count, datatype, dest, sendtag, comm, 0, "MPI_Sendrecv_replace"))
      return rc;
  }
  return MPI_Recv(buf, count, datatype, source, recvtag, comm, status);
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
  int flag = 0;
  return probe(source, tag, comm, -1, &flag, status, "MPI_Probe");
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
  return probe(source, tag, comm, 0, flag, status, "MPI_Iprobe");
}

int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count) {
  if (int rc = check_type(nullptr, datatype, "MPI_Get_count")) return rc;
  const long long bytes = status->rocl_bytes;
  const long long per = static_cast<long long>(datatype->packed);
  *count = per == 0 ? 0 : bytes % per != 0 ? MPI_UNDEFINED : static_cast<int>(bytes / per);
  return MPI_SUCCESS;
}

int MPI_Buffer_attach(void *buffer, int size) {
  std::lock_guard<std::mutex> guard(g_attached.lock);
  if (g_attached.buffer != nullptr) {
    return fail(nullptr, MPI_ERR_BUFFER, "MPI_Buffer_attach", "a buffer is already attached");
  }
  if (size < 0) return fail(nullptr, MPI_ERR_ARG, "MPI_Buffer_attach", "size %d is negative", size);
  g_attached.buffer = buffer;
  g_attached.size = size;
  return MPI_SUCCESS;
}

int MPI_Buffer_detach(void *buffer_addr, int *size) {
  // Buffered messages were copied into rocl's pool when sent: nothing to wait for.
  std::lock_guard<std::mutex> guard(g_attached.lock);
  *static_cast<void **>(buffer_addr) = g_attached.buffer;
  *size = g_attached.size;
  g_attached.buffer = nullptr;
  g_attached.size = 0;
  return MPI_SUCCESS;
}

}  // extern "C"
