// mprobe.cpp - matched probes (MPI 3.1 section 3.8.2): the probe takes the
// message off its communicator's queue at once (rocl_recvx handing over
// its buffer), so that no other thread's receive or probe can match it;
// MPI_Mrecv/MPI_Imrecv then copy it into the user's memory. This is the
// probe multithreaded programs need: probe-then-receive with wildcards
// races between threads, a matched probe does not.
#include <algorithm>
#include <cstring>

#include "mpi_impl.hpp"

struct rocl_mpi_message {
  static constexpr std::uint32_t kMagic = 0x6d736773;
  std::uint32_t magic = kMagic;
  MPI_Comm comm = MPI_COMM_NULL;  // holds a reference until received
  int source = MPI_PROC_NULL;     // the sender's rank
  rocl_status_t st{};             // st.ptr: the message's buffer
};

// The message of a matched probe from MPI_PROC_NULL.
struct rocl_mpi_message rocl_mpi_message_no_proc {
  rocl_mpi_message::kMagic, MPI_COMM_NULL, MPI_PROC_NULL, {}
};

namespace {

using namespace rmpi;

int mprobe(int source, int tag, MPI_Comm comm, int timeout, int *flag, MPI_Message *message,
           MPI_Status *status, const char *who) {
  if (int rc = check_recv(0, MPI_BYTE, source, tag, comm, who)) return rc;
  *flag = 1;
  if (source == MPI_PROC_NULL) {
    set_status(status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
    *message = MPI_MESSAGE_NO_PROC;
    return MPI_SUCCESS;
  }
  rocl_status_t st;
  const int rc = rocl_recvx(comm->self, source_gid(comm, source), rocl_tag(tag), kPointToPoint,
                            nullptr, 0, &st, timeout);
  if (rc == ROCL_ETIMEDOUT && timeout == 0) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  if (rc != ROCL_OK) return fail_rocl(comm, rc, who);
  auto *m = new rocl_mpi_message;
  m->comm = comm;
  retain_comm(comm);
  m->source = comm->source_rank(st.origin, source);
  m->st = st;
  set_status(status, m->source, st.tag, st.len);
  *message = m;
  return MPI_SUCCESS;
}

// Copies the probed message into (buf, count, t) and ends it.
int receive(void *buf, int count, MPI_Datatype t, MPI_Message *message, MPI_Status *status,
            const char *who) {
  if (message == nullptr || *message == MPI_MESSAGE_NULL ||
      (*message)->magic != rocl_mpi_message::kMagic) {
    return fail(nullptr, MPI_ERR_REQUEST, who, "not a message of a matched probe (received?)");
  }
  MPI_Message m = *message;
  if (m == MPI_MESSAGE_NO_PROC) {
    set_status(status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
    *message = MPI_MESSAGE_NULL;
    return MPI_SUCCESS;
  }
  MPI_Comm comm = m->comm;
  if (int rc = check_type(comm, t, who)) return rc;
  if (int rc = check_count(comm, count, who)) return rc;
  if (t->dense) {
    const std::size_t n = std::min(t->packed * std::size_t(count), m->st.len);
    if (n != 0) std::memcpy(static_cast<char *>(buf) + t->first(), m->st.ptr, n);
    rocl_bfret(m->st.ptr);
  }
  // Non-dense types: finish_recv unpacks from the buffer and returns it.
  const int rc = finish_recv(comm, m->source, m->st, buf, count, t, status, who);
  *message = MPI_MESSAGE_NULL;
  m->magic = 0;
  delete m;
  release_comm(comm);
  return rc;
}

}  // namespace

extern "C" {

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) {
  int flag = 0;
  return mprobe(source, tag, comm, -1, &flag, message, status, "MPI_Mprobe");
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *status) {
  return mprobe(source, tag, comm, 0, flag, message, status, "MPI_Improbe");
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
              MPI_Status *status) {
  return receive(buf, count, datatype, message, status, "MPI_Mrecv");
}

// The message is here already: the request is complete when it is made.
int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
               MPI_Request *request) {
  if (message == nullptr || *message == MPI_MESSAGE_NULL ||
      (*message)->magic != rocl_mpi_message::kMagic) {
    return fail(nullptr, MPI_ERR_REQUEST, "MPI_Imrecv",
                "not a message of a matched probe (received?)");
  }
  MPI_Comm comm = *message == MPI_MESSAGE_NO_PROC ? MPI_COMM_SELF : (*message)->comm;
  retain_comm(comm);  // receive() releases the message's reference
  MPI_Status status;
  const int rc = receive(buf, count, datatype, message, &status, "MPI_Imrecv");
  if (rc != MPI_SUCCESS && *message != MPI_MESSAGE_NULL) {  // refused before receiving
    release_comm(comm);
    return rc;
  }
  *request = completed_request(comm, status, rc);  // the request keeps its own reference
  release_comm(comm);
  return MPI_SUCCESS;
}

}  // extern "C"
