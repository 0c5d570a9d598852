// neighbor.cpp - neighbourhood collectives (MPI 3.1 section 7.6) on
// Cartesian, graph and distributed graph communicators, and their
// non-blocking forms (section 7.7) through the offload thread (icoll.cpp).
//
// Each is one exchange: block k of the send buffer to destination k, block
// k of the receive buffer from source k, in the order graph_topo.cpp's
// neighbors_of gives. Sends never wait for their receive, so every rank
// posts its sends, then its receives. Between two ranks that are
// neighbours more than once, messages are told apart by tag: in a
// Cartesian topology block s goes with tag kNeighborTag + s and the
// receiver takes it into block s^1 (one tag per direction of each
// dimension); in a graph every message has kNeighborTag, so the k-th edge
// from a rank to another meets the k-th receive the other posts from it
// (rocl keeps the messages between two resources in order).
#include <vector>

#include "mpi_impl.hpp"

namespace rmpi {
namespace {

// One neighbour's block of a buffer: count elements of t at p.
struct Slot {
  char *p;
  int count;
  MPI_Datatype t;
};

char *offset(const void *buf, MPI_Aint bytes) {
  return static_cast<char *>(const_cast<void *>(buf)) + bytes;
}

int check_block(MPI_Comm comm, const Slot &b, const char *who) {
  if (int rc = check_count(comm, b.count, who)) return rc;
  return check_type(comm, b.t, who);
}

int exchange(MPI_Comm comm, const Neighbors &nb, const std::vector<Slot> &sends,
             const std::vector<Slot> &recvs, const char *who) {
  for (const Slot &b : sends) {
    if (int rc = check_block(comm, b, who)) return rc;
  }
  for (const Slot &b : recvs) {
    if (int rc = check_block(comm, b, who)) return rc;
  }
  for (std::size_t k = 0; k < sends.size(); ++k) {
    const int to = nb.destinations[k];
    if (to == MPI_PROC_NULL) continue;
    const int tag = kNeighborTag + (nb.cartesian ? int(k) : 0);
    if (int rc = send_from(comm, to, tag, sends[k].p, sends[k].count, sends[k].t)) return rc;
  }
  for (std::size_t k = 0; k < recvs.size(); ++k) {
    const int from = nb.sources[k];
    if (from == MPI_PROC_NULL) continue;
    const int tag = kNeighborTag + (nb.cartesian ? int(k ^ 1) : 0);
    if (int rc = recv_into(comm, from, tag, recvs[k].p, recvs[k].count, recvs[k].t)) return rc;
  }
  return MPI_SUCCESS;
}

// The blocks of a buffer: block k as part(k), for n neighbours.
template <class Make>
std::vector<Slot> blocks(std::size_t n, Make part) {
  std::vector<Slot> v;
  v.reserve(n);
  for (std::size_t k = 0; k < n; ++k) v.push_back(part(int(k)));
  return v;
}

// Checks the counts and types of the forms with one of each for every
// neighbour, before the extents place the blocks, and also when there is
// no neighbour to check them with.
int check_args(MPI_Comm comm, int scount, MPI_Datatype stype, int rcount, MPI_Datatype rtype,
               const char *who) {
  if (int rc = check_block(comm, Slot{nullptr, scount, stype}, who)) return rc;
  return check_block(comm, Slot{nullptr, rcount, rtype}, who);
}

// The numbers of neighbours (for the non-blocking forms' copies of the
// arrays), or the error of a communicator without a topology.
int degrees(MPI_Comm comm, const char *who, int *in, int *out) {
  Neighbors nb;
  if (int rc = neighbors_of(comm, who, &nb)) return rc;
  *in = int(nb.sources.size());
  *out = int(nb.destinations.size());
  return MPI_SUCCESS;
}

template <class T>
std::vector<T> copy_of(const T *a, int n) {
  return a == nullptr ? std::vector<T>() : std::vector<T>(a, a + n);
}

}  // namespace
}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const char *who = "MPI_Neighbor_allgather";
  Neighbors nb;
  if (int rc = neighbors_of(comm, who, &nb)) return rc;
  if (int rc = check_args(comm, sendcount, sendtype, recvcount, recvtype, who)) return rc;
  const MPI_Aint stride = recvcount * recvtype->extent;
  return exchange(comm, nb,
                  blocks(nb.destinations.size(),
                         [&](int) {
                           return Slot{offset(sendbuf, 0), sendcount, sendtype};
                         }),
                  blocks(nb.sources.size(),
                         [&](int k) {
                           return Slot{offset(recvbuf, k * stride), recvcount, recvtype};
                         }),
                  who);
}

int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int displs[],
                            MPI_Datatype recvtype, MPI_Comm comm) {
  const char *who = "MPI_Neighbor_allgatherv";
  Neighbors nb;
  if (int rc = neighbors_of(comm, who, &nb)) return rc;
  if (int rc = check_args(comm, sendcount, sendtype, 0, recvtype, who)) return rc;
  return exchange(
      comm, nb,
      blocks(nb.destinations.size(),
             [&](int) {
               return Slot{offset(sendbuf, 0), sendcount, sendtype};
             }),
      blocks(nb.sources.size(),
             [&](int k) {
               return Slot{offset(recvbuf, displs[k] * recvtype->extent), recvcounts[k], recvtype};
             }),
      who);
}

int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const char *who = "MPI_Neighbor_alltoall";
  Neighbors nb;
  if (int rc = neighbors_of(comm, who, &nb)) return rc;
  if (int rc = check_args(comm, sendcount, sendtype, recvcount, recvtype, who)) return rc;
  const MPI_Aint sstride = sendcount * sendtype->extent, rstride = recvcount * recvtype->extent;
  return exchange(comm, nb,
                  blocks(nb.destinations.size(),
                         [&](int k) {
                           return Slot{offset(sendbuf, k * sstride), sendcount, sendtype};
                         }),
                  blocks(nb.sources.size(),
                         [&](int k) {
                           return Slot{offset(recvbuf, k * rstride), recvcount, recvtype};
                         }),
                  who);
}

int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                           MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                           const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  const char *who = "MPI_Neighbor_alltoallv";
  Neighbors nb;
  if (int rc = neighbors_of(comm, who, &nb)) return rc;
  if (int rc = check_args(comm, 0, sendtype, 0, recvtype, who)) return rc;
  return exchange(
      comm, nb,
      blocks(nb.destinations.size(),
             [&](int k) {
               return Slot{offset(sendbuf, sdispls[k] * sendtype->extent), sendcounts[k], sendtype};
             }),
      blocks(nb.sources.size(),
             [&](int k) {
               return Slot{offset(recvbuf, rdispls[k] * recvtype->extent), recvcounts[k], recvtype};
             }),
      who);
}

// Alltoallv with a type per neighbour and displacements in bytes.
int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                           const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                           const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                           MPI_Comm comm) {
  const char *who = "MPI_Neighbor_alltoallw";
  Neighbors nb;
  if (int rc = neighbors_of(comm, who, &nb)) return rc;
  return exchange(comm, nb,
                  blocks(nb.destinations.size(),
                         [&](int k) {
                           return Slot{offset(sendbuf, sdispls[k]), sendcounts[k], sendtypes[k]};
                         }),
                  blocks(nb.sources.size(),
                         [&](int k) {
                           return Slot{offset(recvbuf, rdispls[k]), recvcounts[k], recvtypes[k]};
                         }),
                  who);
}

int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request) {
  const char *who = "MPI_Ineighbor_allgather";
  int in = 0, out = 0;
  if (int rc = degrees(comm, who, &in, &out)) return rc;
  return post_collective(comm, who, request, [=](MPI_Comm c) {
    return MPI_Neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, c);
  });
}

int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  const char *who = "MPI_Ineighbor_allgatherv";
  int in = 0, out = 0;
  if (int rc = degrees(comm, who, &in, &out)) return rc;
  return post_collective(
      comm, who, request,
      [=, counts = copy_of(recvcounts, in), at = copy_of(displs, in)](MPI_Comm c) {
        return MPI_Neighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, counts.data(),
                                       at.data(), recvtype, c);
      });
}

int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                           MPI_Request *request) {
  const char *who = "MPI_Ineighbor_alltoall";
  int in = 0, out = 0;
  if (int rc = degrees(comm, who, &in, &out)) return rc;
  return post_collective(comm, who, request, [=](MPI_Comm c) {
    return MPI_Neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, c);
  });
}

int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request) {
  const char *who = "MPI_Ineighbor_alltoallv";
  int in = 0, out = 0;
  if (int rc = degrees(comm, who, &in, &out)) return rc;
  return post_collective(comm, who, request,
                         [=, sc = copy_of(sendcounts, out), sd = copy_of(sdispls, out),
                          rc = copy_of(recvcounts, in), rd = copy_of(rdispls, in)](MPI_Comm c) {
                           return MPI_Neighbor_alltoallv(sendbuf, sc.data(), sd.data(), sendtype,
                                                         recvbuf, rc.data(), rd.data(), recvtype,
                                                         c);
                         });
}

int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                            MPI_Request *request) {
  const char *who = "MPI_Ineighbor_alltoallw";
  int in = 0, out = 0;
  if (int rc = degrees(comm, who, &in, &out)) return rc;
  return post_collective(comm, who, request,
                         [=, sc = copy_of(sendcounts, out), sd = copy_of(sdispls, out),
                          st = copy_of(sendtypes, out), rc = copy_of(recvcounts, in),
                          rd = copy_of(rdispls, in), rt = copy_of(recvtypes, in)](MPI_Comm c) {
                           return MPI_Neighbor_alltoallw(sendbuf, sc.data(), sd.data(), st.data(),
                                                         recvbuf, rc.data(), rd.data(), rt.data(),
                                                         c);
                         });
}

}  // extern "C"
