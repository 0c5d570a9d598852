// inter_coll.cpp - the rooted, all-to-all and reduce-scatter collectives
// on intercommunicators (MPI 3.1 section 5.2.2 and each collective's
// intercommunicator paragraph); Barrier, Bcast and Allreduce are in
// intercomm.cpp. Point to point on an intercommunicator names remote
// ranks, so the data goes straight between the groups in its collective
// domain: a root receives from (or sends to) every remote rank, an
// all-to-all sends to every remote rank first, then receives (a send never
// waits for its receive). Reductions first reduce within the group over
// its private dup (inter_local), keeping rank order, and only the leaders
// (rank 0 of each group) talk across.
#include <vector>

#include "mpi_impl.hpp"

namespace {

using namespace rmpi;

// Collective-domain tags of the intercommunicator, above every user tag
// and apart from intercomm.cpp's, one per operation: a mismatch of calls
// then waits rather than mixing data.
enum Tag {
  kReduceTag = kTagUb + 16,
  kGatherTag,
  kScatterTag,
  kAlltoallTag,
  kAlltoallwTag,
  kReduceScatterTag,
};

// What a rooted collective's root argument makes of this process.
enum class Role {
  kRoot,    // MPI_ROOT: the root itself
  kIdle,    // MPI_PROC_NULL: the root's group mates, who take no part
  kRemote,  // a rank of the remote (root's) group: this group gives or takes
};

int role_of(MPI_Comm comm, int root, const char *who, Role *role) {
  if (root == MPI_ROOT) {
    *role = Role::kRoot;
  } else if (root == MPI_PROC_NULL) {
    *role = Role::kIdle;
  } else if (root >= 0 && root < comm->size) {
    *role = Role::kRemote;
  } else {
    return fail(comm, MPI_ERR_ROOT, who,
                "root %d is neither MPI_ROOT, MPI_PROC_NULL nor a rank of the remote group (of %d)",
                root, comm->size);
  }
  return MPI_SUCCESS;
}

char *at(const void *buf, MPI_Aint displacement_elements, MPI_Datatype t) {
  return static_cast<char *>(const_cast<void *>(buf)) + displacement_elements * t->extent;
}

char *byte_at(const void *buf, int displacement) {
  return static_cast<char *>(const_cast<void *>(buf)) + displacement;
}

// (buf, count, t) packed into bytes of our own, which a reduction may
// overwrite.
std::vector<char> packed_copy(const void *buf, int count, MPI_Datatype t) {
  Contiguous x(buf, count, t, true);
  return std::vector<char>(x.data(), x.data() + x.bytes());
}

}  // namespace

namespace rmpi {

int refuse_in_place(MPI_Comm comm, const void *buf, const char *who) {
  if (!in_place(buf)) return MPI_SUCCESS;
  return fail(comm, MPI_ERR_BUFFER, who, "MPI_IN_PLACE is not allowed on an intercommunicator");
}

// The remote group's data reduced at the root: that group reduces to its
// leader, which sends the result to the root.
int inter_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op, int root,
                 MPI_Comm comm) {
  const char *who = "MPI_Reduce";
  Role role{};
  if (int rc = role_of(comm, root, who, &role)) return rc;
  if (role == Role::kIdle) return MPI_SUCCESS;
  if (role == Role::kRoot) {
    Contiguous r(recvbuf, count, t, false);
    if (int rc = recv_bytes(comm, 0, kReduceTag, kCollective, r.data(), r.bytes())) return rc;
    r.store(r.bytes());
    return MPI_SUCCESS;
  }
  if (int rc = refuse_in_place(comm, sendbuf, who)) return rc;
  MPI_Comm local = comm->inter_local;
  std::vector<char> acc = packed_copy(sendbuf, count, t);
  if (int rc = reduce_packed(local, acc, count, t, op, who)) return rc;
  if (local->rank != 0) return MPI_SUCCESS;
  return send_bytes(comm, root, kReduceTag, kCollective, acc.data(), acc.size());
}

// The root receives remote rank i's data at displs[i]; every remote rank
// sends it its own.
int inter_gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                  MPI_Comm comm) {
  const char *who = "MPI_Gatherv";
  Role role{};
  if (int rc = role_of(comm, root, who, &role)) return rc;
  if (role == Role::kIdle) return MPI_SUCCESS;
  if (role == Role::kRemote) {
    if (int rc = refuse_in_place(comm, sendbuf, who)) return rc;
    if (int rc = check_count(comm, sendcount, who)) return rc;
    if (int rc = check_type(comm, sendtype, who)) return rc;
    return send_from(comm, root, kGatherTag, sendbuf, sendcount, sendtype);
  }
  if (int rc = check_type(comm, recvtype, who)) return rc;
  for (int i = 0; i < comm->size; ++i) {
    if (int rc = recv_into(comm, i, kGatherTag, at(recvbuf, displs[i], recvtype), recvcounts[i],
                           recvtype))
      return rc;
  }
  return MPI_SUCCESS;
}

// The root sends block i (at displs[i]) to remote rank i.
int inter_scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                   MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                   int root, MPI_Comm comm) {
  const char *who = "MPI_Scatterv";
  Role role{};
  if (int rc = role_of(comm, root, who, &role)) return rc;
  if (role == Role::kIdle) return MPI_SUCCESS;
  if (role == Role::kRemote) {
    if (int rc = refuse_in_place(comm, recvbuf, who)) return rc;
    if (int rc = check_count(comm, recvcount, who)) return rc;
    if (int rc = check_type(comm, recvtype, who)) return rc;
    return recv_into(comm, root, kScatterTag, recvbuf, recvcount, recvtype);
  }
  if (int rc = check_type(comm, sendtype, who)) return rc;
  for (int i = 0; i < comm->size; ++i) {
    if (int rc = send_from(comm, i, kScatterTag, at(sendbuf, displs[i], sendtype), sendcounts[i],
                           sendtype))
      return rc;
  }
  return MPI_SUCCESS;
}

// Block j to remote rank j, block j from remote rank j (Alltoall, and
// Allgather(v) with one send block for all).
int inter_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, const char *who) {
  if (int rc = refuse_in_place(comm, sendbuf, who)) return rc;
  if (int rc = check_type(comm, sendtype, who)) return rc;
  if (int rc = check_type(comm, recvtype, who)) return rc;
  for (int j = 0; j < comm->size; ++j) {
    if (int rc = send_from(comm, j, kAlltoallTag, at(sendbuf, sdispls[j], sendtype), sendcounts[j],
                           sendtype))
      return rc;
  }
  for (int j = 0; j < comm->size; ++j) {
    if (int rc = recv_into(comm, j, kAlltoallTag, at(recvbuf, rdispls[j], recvtype), recvcounts[j],
                           recvtype))
      return rc;
  }
  return MPI_SUCCESS;
}

// The same with a type per remote rank and displacements in bytes.
int inter_alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                    const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                    const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  const char *who = "MPI_Alltoallw";
  if (int rc = refuse_in_place(comm, sendbuf, who)) return rc;
  for (int j = 0; j < comm->size; ++j) {
    if (int rc = check_type(comm, sendtypes[j], who)) return rc;
    if (int rc = check_type(comm, recvtypes[j], who)) return rc;
  }
  for (int j = 0; j < comm->size; ++j) {
    if (int rc = send_from(comm, j, kAlltoallwTag, byte_at(sendbuf, sdispls[j]), sendcounts[j],
                           sendtypes[j]))
      return rc;
  }
  for (int j = 0; j < comm->size; ++j) {
    if (int rc = recv_into(comm, j, kAlltoallwTag, byte_at(recvbuf, rdispls[j]), recvcounts[j],
                           recvtypes[j]))
      return rc;
  }
  return MPI_SUCCESS;
}

// recvcounts has one count per LOCAL rank, and the whole vector (their
// sum) is as long in both groups: each group reduces its vectors to its
// leader, the leaders swap the results, and each scatters the remote
// group's result in its group.
int inter_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype t,
                         MPI_Op op, MPI_Comm comm, const char *who) {
  MPI_Comm local = comm->inter_local;
  if (int rc = refuse_in_place(comm, sendbuf, who)) return rc;
  if (int rc = check_type(comm, t, who)) return rc;
  if (int rc = check_op(comm, op, t, who)) return rc;
  int total = 0;
  std::vector<int> bytes(std::size_t(local->size)), displs(std::size_t(local->size));
  for (int r = 0; r < local->size; ++r) {
    if (int rc = check_count(comm, recvcounts[r], who)) return rc;
    bytes[std::size_t(r)] = recvcounts[r] * int(t->packed);
    displs[std::size_t(r)] = total * int(t->packed);
    total += recvcounts[r];
  }
  std::vector<char> acc = packed_copy(sendbuf, total, t);
  if (int rc = reduce_packed(local, acc, total, t, op, who)) return rc;
  std::vector<char> theirs(local->rank == 0 ? acc.size() : 0);
  if (local->rank == 0) {
    if (int rc = exchange_bytes(comm, 0, kReduceScatterTag, kCollective, acc.data(), theirs.data(),
                                acc.size()))
      return rc;
  }
  Contiguous mine(recvbuf, recvcounts[local->rank], t, false);
  if (int rc = MPI_Scatterv(theirs.data(), bytes.data(), displs.data(), MPI_BYTE, mine.data(),
                            int(mine.bytes()), MPI_BYTE, 0, local))
    return rc;
  mine.store(mine.bytes());
  return MPI_SUCCESS;
}

}  // namespace rmpi
