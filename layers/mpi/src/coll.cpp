// coll.cpp - collectives over the communicator's kCollective domain, one
// tag per operation (messages between two ranks keep their order, and every
// rank calls collectives in the same order, so operations never mix).
//
// Algorithms for the small rank counts of one node: dissemination barrier;
// binomial broadcast; for predefined operations on dense types a binary
// (small) or binomial reduce, else a binomial reduce towards rank 0 that
// keeps rank order (so non-commutative operations are right);
// recursive doubling allreduce for power-of-two sizes (one exchange for 2
// ranks), else reduce+bcast; direct exchanges for gather/scatter/allgather/
// alltoall (a send never waits for its receive, so everyone sends first,
// then receives); a chain for scan. On an intercommunicator each entry
// point hands over to intercomm.cpp or inter_coll.cpp once the
// communicator is checked.
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "mpi_impl.hpp"

namespace rmpi {

int send_from(MPI_Comm c, int to, int tag, const void *buf, int count, MPI_Datatype t) {
  Contiguous x(buf, count, t, true);
  return send_bytes(c, to, tag, kCollective, x.data(), x.bytes());
}

int send_to_receiver(MPI_Comm c, int to, int tag, const void *buf, int count, MPI_Datatype t) {
  Contiguous x(buf, count, t, true);
  return send_to_receiver(c, to, tag, kCollective, x.data(), x.bytes());
}

int post_lendable(MPI_Comm c, int to, int tag, const void *buf, int count, MPI_Datatype t,
                  std::vector<rocl_request_t> *lent) {
  if (!t->dense) return send_from(c, to, tag, buf, count, t);  // packed: copied
  const char *p = static_cast<const char *>(buf) + t->first();
  rocl_request_t req = ROCL_REQUEST_NULL;
  const int rc =
      send_contiguous(c, to, tag, kCollective, 0, p, t->packed * std::size_t(count), &req);
  if (rc != ROCL_OK) return fail_rocl(c, rc, "collective send");
  if (req != ROCL_REQUEST_NULL) lent->push_back(req);
  return MPI_SUCCESS;
}

int wait_all_lent(MPI_Comm c, std::vector<rocl_request_t> *lent) {
  int result = MPI_SUCCESS;
  for (rocl_request_t &req : *lent) {
    const int rc = rocl_wait(&req, nullptr, -1);
    if (rc != ROCL_OK && result == MPI_SUCCESS) result = fail_rocl(c, rc, "collective send");
  }
  lent->clear();
  return result;
}

int recv_into(MPI_Comm c, int from, int tag, void *buf, int count, MPI_Datatype t) {
  Contiguous x(buf, count, t, false);
  if (int rc = recv_bytes(c, from, tag, kCollective, x.data(), x.bytes())) return rc;
  x.store(x.bytes());
  return MPI_SUCCESS;
}

namespace {

enum Tag {
  kBarrier = 1,
  kBcast,
  kReduce,
  kAllreduce,
  kGather,
  kScatter,
  kAllgather,
  kAlltoall,
  kScan,
  kReduceScatter,
  kCommCreate,
  kExscan,
  kAlltoallw  // below kNeighborTag (mpi_impl.hpp)
};

char *at(const void *buf, MPI_Aint displacement_elements, MPI_Datatype t) {
  return static_cast<char *>(const_cast<void *>(buf)) + displacement_elements * t->extent;
}

int copy_local(MPI_Comm c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
               MPI_Datatype rt) {
  Contiguous s(sbuf, scount, st, true), r(rbuf, rcount, rt, false);
  if (s.bytes() > r.bytes()) {
    return fail(c, MPI_ERR_TRUNCATE, "collective", "%zu bytes sent where %zu fit", s.bytes(),
                r.bytes());
  }
  if (s.bytes() != 0) std::memmove(r.data(), s.data(), s.bytes());  // zero counts: NULL is fine
  r.store(s.bytes());
  return MPI_SUCCESS;
}

int bcast_bytes(MPI_Comm c, void *p, std::size_t n, int root) {
  const int size = c->size, rel = (c->rank - root + size) % size;
  int mask = 1;
  for (; mask < size; mask <<= 1) {
    if (rel & mask) {
      if (int rc = recv_bytes(c, (rel - mask + root) % size, kBcast, kCollective, p, n)) return rc;
      break;
    }
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (rel + mask < size) {
      if (int rc = send_bytes(c, (rel + mask + root) % size, kBcast, kCollective, p, n)) return rc;
    }
  }
  return MPI_SUCCESS;
}

// acc (n bytes of `count` elements) becomes, at rank 0, the reduction of
// every rank's acc in rank order; other ranks' acc is scratch afterwards.
int reduce_to_zero(MPI_Comm c, std::vector<char> &acc, int count, MPI_Datatype t, MPI_Op op,
                   const char *who) {
  std::vector<char> other(acc.size());
  for (int mask = 1; mask < c->size; mask <<= 1) {
    if (c->rank & mask)
      return send_bytes(c, c->rank - mask, kReduce, kCollective, acc.data(), acc.size());
    if (c->rank + mask >= c->size) continue;
    if (int rc = recv_bytes(c, c->rank + mask, kReduce, kCollective, other.data(), other.size()))
      return rc;
    // acc holds lower ranks than other: acc op other, computed into other.
    if (int rc = reduce_local(c, op, t, acc.data(), other.data(), count, who)) return rc;
    acc.swap(other);
  }
  return MPI_SUCCESS;
}

int check_coll(MPI_Comm c, int count, MPI_Datatype t, const char *who) {
  if (int rc = check_comm(c, who)) return rc;
  if (int rc = check_count(c, count, who)) return rc;
  return check_type(c, t, who);
}

int check_root(MPI_Comm c, int root, const char *who) {
  return root >= 0 && root < c->size
             ? MPI_SUCCESS
             : fail(c, MPI_ERR_ROOT, who, "root %d is not a rank (size %d)", root, c->size);
}

// My contribution to a reduction as packed bytes.
std::vector<char> contribution(const void *sendbuf, const void *recvbuf, int count,
                               MPI_Datatype t) {
  const void *mine = in_place(sendbuf) ? recvbuf : sendbuf;
  const char *p = static_cast<const char *>(mine) + t->first();
  return std::vector<char>(p, p + t->packed * std::size_t(count));
}

void deliver(const std::vector<char> &acc, void *recvbuf, MPI_Datatype t) {
  if (!acc.empty()) std::memcpy(static_cast<char *>(recvbuf) + t->first(), acc.data(), acc.size());
}

// Recursive doubling straight in recvbuf, for a dense type and a predefined
// operation on a power-of-two size: a predefined operation commutes bit for
// bit (IEEE + and * included; MINLOC/MAXLOC keep the lower index of equal
// values either way), so each rank may combine its partner's data into its
// own, whichever is lower, and every rank still ends with the same bits. No
// packed copies and no allocation per call: the partner's data lands in a
// buffer this thread keeps (up to kKeep bytes).
//
// The first step sends from sendbuf (unless in place) and receives into
// recvbuf, then combines sendbuf into it: no copy of sendbuf into recvbuf
// first, and recvbuf is written only by this rank. (Combining into the
// buffer the partner has just read, lent, makes each written line a round
// trip to the partner's cache: rocl-bench mpi's allreduce shows it.)
int allreduce_dense(MPI_Comm comm, const void *sendbuf, void *recvbuf, int count, MPI_Datatype t,
                    MPI_Op op) {
  constexpr std::size_t kKeep = std::size_t{1} << 20;
  thread_local std::vector<char> kept;
  const std::size_t n = t->packed * std::size_t(count);
  char *acc = static_cast<char *>(recvbuf) + t->first();
  const char *mine = in_place(sendbuf) ? acc : static_cast<const char *>(sendbuf) + t->first();
  if (comm->size == 1) {
    if (mine != acc && n != 0) std::memcpy(acc, mine, n);
    return MPI_SUCCESS;
  }
  if (mine != acc) {
    if (int rc = exchange_bytes(comm, comm->rank ^ 1, kAllreduce, kCollective, mine, acc, n))
      return rc;
    if (int rc = reduce_local(comm, op, t, mine, acc, count, "MPI_Allreduce")) return rc;
  }
  std::vector<char> once;
  std::vector<char> &other = n <= kKeep ? kept : once;
  if (other.size() < n) other.resize(n);
  for (int mask = mine != acc ? 2 : 1; mask < comm->size; mask <<= 1) {
    const int partner = comm->rank ^ mask;
    if (int rc = exchange_bytes(comm, partner, kAllreduce, kCollective, acc, other.data(), n))
      return rc;
    if (int rc = reduce_local(comm, op, t, other.data(), acc, count, "MPI_Allreduce")) return rc;
  }
  return MPI_SUCCESS;
}

// A reduction of a predefined operation up to this size goes up a binary
// tree, a larger one up a binomial tree. The binomial tree's inner ranks
// are the even ones: with ranks placed on the cpus in turn (roclrun
// --bind-to core, Open MPI oversubscribed) they all share one cpu, which
// then receives and combines nearly everything while the other cpu's
// ranks only send. The binary tree's inner ranks are the low half, which
// that placement spreads over every cpu (Open MPI's choice for small
// reductions too; rocl-bench compare oversub shows it). A large reduction
// keeps the binomial tree, whose root combines each child's data while the
// others are still moving. Broadcasts stay binomial: a stream of small
// ones went no faster down the binary tree.
constexpr std::size_t kBinaryTreeBytes = 8192;

struct BinaryTree {
  int rel, size;
  int parent() const { return (rel - 1) / 2; }        // rel > 0
  int child(int k) const { return 2 * rel + 1 + k; }  // k 0 or 1; < size to exist
};

// A tree towards the root straight into recvbuf (binary up to
// kBinaryTreeBytes, else binomial), for a dense type and a predefined
// operation (which commutes bit for bit: see allreduce_dense, so the
// children's data may be combined in any order): a leaf sends from
// sendbuf, an inner rank combines its children's data into a buffer this
// thread keeps (up to kKeep bytes), the root into recvbuf. No packed
// copies and no allocation per call.
int reduce_dense(MPI_Comm comm, const void *sendbuf, void *recvbuf, int count, MPI_Datatype t,
                 MPI_Op op, int root) {
  constexpr std::size_t kKeep = std::size_t{1} << 20;
  thread_local std::vector<char> kept_acc, kept_other;
  const std::size_t n = t->packed * std::size_t(count);
  const int size = comm->size, rel = (comm->rank - root + size) % size;
  const bool is_root = rel == 0;
  char *const out = static_cast<char *>(recvbuf) + t->first();
  const char *mine =
      is_root && in_place(sendbuf) ? out : static_cast<const char *>(sendbuf) + t->first();
  std::array<int, 8 * sizeof(int)> children{};  // relative ranks
  int child_count = 0, parent = -1;
  if (n <= kBinaryTreeBytes) {
    const BinaryTree tree{rel, size};
    for (int k = 0; k < 2 && tree.child(k) < size; ++k) children[child_count++] = tree.child(k);
    if (!is_root) parent = tree.parent();
  } else {
    for (int mask = 1; mask < size; mask <<= 1) {
      if (rel & mask) {
        parent = rel - mask;
        break;
      }
      if (rel + mask < size) children[child_count++] = rel + mask;
    }
  }
  std::vector<char> once_acc, once_other;
  std::vector<char> &acc_store = n <= kKeep ? kept_acc : once_acc;
  std::vector<char> &other = n <= kKeep ? kept_other : once_other;
  char *acc = nullptr;  // what this rank has combined so far (mine until a child's came)
  for (int i = 0; i < child_count; ++i) {
    if (acc == nullptr) {
      if (is_root) {
        acc = out;
      } else {
        if (acc_store.size() < n) acc_store.resize(n);
        acc = acc_store.data();
      }
      if (acc != mine && n != 0) std::memcpy(acc, mine, n);
    }
    if (other.size() < n) other.resize(n);
    if (int rc =
            recv_bytes(comm, (children[i] + root) % size, kReduce, kCollective, other.data(), n))
      return rc;
    if (int rc = reduce_local(comm, op, t, other.data(), acc, count, "MPI_Reduce")) return rc;
  }
  if (parent >= 0) {
    // The parent receives from its children in turn: lending cannot
    // deadlock, and spares the copies through the pool.
    return send_to_receiver(comm, (parent + root) % size, kReduce, kCollective,
                            acc != nullptr ? acc : mine, n);
  }
  // The root; with no child (a communicator of one) its data is its own.
  if (acc == nullptr && mine != out && n != 0) std::memcpy(out, mine, n);
  return MPI_SUCCESS;
}

std::vector<int> uniform(int n, int value, bool displacements) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = displacements ? i * value : value;
  return v;
}

}  // namespace

int reduce_packed(MPI_Comm c, std::vector<char> &acc, int count, MPI_Datatype t, MPI_Op op,
                  const char *who) {
  return reduce_to_zero(c, acc, count, t, op, who);
}

int allgather_bytes(MPI_Comm c, const void *mine, std::size_t n, void *all) {
  char *out = static_cast<char *>(all);
  if (n != 0) std::memcpy(out + c->rank * n, mine, n);
  for (int j = 0; j < c->size; ++j) {
    if (j == c->rank) continue;
    if (int rc = send_bytes(c, j, kCommCreate, kCollective, mine, n)) return rc;
  }
  for (int j = 0; j < c->size; ++j) {
    if (j == c->rank) continue;
    if (int rc = recv_bytes(c, j, kCommCreate, kCollective, out + j * n, n)) return rc;
  }
  return MPI_SUCCESS;
}

}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Barrier(MPI_Comm comm) {
  if (int rc = check_comm(comm, "MPI_Barrier")) return rc;
  if (comm->inter_local != nullptr) return inter_barrier(comm);
  const int n = comm->size, r = comm->rank;
  for (int k = 1; k < n; k <<= 1) {
    if (int rc = send_bytes(comm, (r + k) % n, kBarrier, kCollective, nullptr, 0)) return rc;
    if (int rc = recv_bytes(comm, (r - k + n) % n, kBarrier, kCollective, nullptr, 0)) return rc;
  }
  return MPI_SUCCESS;
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (int rc = check_coll(comm, count, datatype, "MPI_Bcast")) return rc;
  if (comm->inter_local != nullptr) return inter_bcast(buffer, count, datatype, root, comm);
  if (int rc = check_root(comm, root, "MPI_Bcast")) return rc;
  Contiguous x(buffer, count, datatype, comm->rank == root);
  if (int rc = bcast_bytes(comm, x.data(), x.bytes(), root)) return rc;
  if (comm->rank != root) x.store(x.bytes());
  return MPI_SUCCESS;
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm) {
  if (int rc = check_coll(comm, count, datatype, "MPI_Reduce")) return rc;
  if (int rc = check_op(comm, op, datatype, "MPI_Reduce")) return rc;
  if (comm->inter_local != nullptr) {
    return inter_reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  }
  if (int rc = check_root(comm, root, "MPI_Reduce")) return rc;
  if (datatype->dense && op->builtin >= 0) {
    return reduce_dense(comm, sendbuf, recvbuf, count, datatype, op, root);
  }
  const bool mine_in_recvbuf = in_place(sendbuf) && comm->rank == root;
  std::vector<char> acc =
      contribution(mine_in_recvbuf ? MPI_IN_PLACE : sendbuf, recvbuf, count, datatype);
  if (int rc = reduce_to_zero(comm, acc, count, datatype, op, "MPI_Reduce")) return rc;
  if (root != 0 && comm->rank == 0)
    return send_bytes(comm, root, kReduce, kCollective, acc.data(), acc.size());
  if (root != 0 && comm->rank == root) {
    return recv_bytes(comm, 0, kReduce, kCollective,
                      static_cast<char *>(recvbuf) + datatype->first(), acc.size());
  }
  if (comm->rank == root) deliver(acc, recvbuf, datatype);
  return MPI_SUCCESS;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  if (int rc = check_coll(comm, count, datatype, "MPI_Allreduce")) return rc;
  if (comm->inter_local != nullptr) {
    if (int rc = check_op(comm, op, datatype, "MPI_Allreduce")) return rc;
    if (int rc = refuse_in_place(comm, sendbuf, "MPI_Allreduce")) return rc;
    return inter_allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  }
  if (int rc = check_op(comm, op, datatype, "MPI_Allreduce")) return rc;
  const int n = comm->size, r = comm->rank;
  if ((n & (n - 1)) == 0 && datatype->dense && op->builtin >= 0) {
    return allreduce_dense(comm, sendbuf, recvbuf, count, datatype, op);
  }
  std::vector<char> acc = contribution(sendbuf, recvbuf, count, datatype);
  if ((n & (n - 1)) == 0) {  // recursive doubling
    std::vector<char> other(acc.size());
    for (int mask = 1; mask < n; mask <<= 1) {
      const int partner = r ^ mask;
      if (int rc = exchange_bytes(comm, partner, kAllreduce, kCollective, acc.data(), other.data(),
                                  acc.size()))
        return rc;
      // Keep rank order: the lower half's data on the left of op (into acc).
      if (partner > r) acc.swap(other);
      if (int rc =
              reduce_local(comm, op, datatype, other.data(), acc.data(), count, "MPI_Allreduce"))
        return rc;
    }
  } else {
    if (int rc = reduce_to_zero(comm, acc, count, datatype, op, "MPI_Allreduce")) return rc;
    if (int rc = bcast_bytes(comm, acc.data(), acc.size(), 0)) return rc;
  }
  deliver(acc, recvbuf, datatype);
  return MPI_SUCCESS;
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  const char *who = "MPI_Gatherv";
  if (int rc = check_comm(comm, who)) return rc;
  if (comm->inter_local != nullptr) {
    return inter_gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                         comm);
  }
  if (int rc = check_root(comm, root, who)) return rc;
  if (comm->rank != root) {
    if (int rc = check_coll(comm, sendcount, sendtype, who)) return rc;
    return send_to_receiver(comm, root, kGather, sendbuf, sendcount, sendtype);
  }
  if (int rc = check_type(comm, recvtype, who)) return rc;
  for (int i = 0; i < comm->size; ++i) {
    char *slot = at(recvbuf, displs[i], recvtype);
    int rc = MPI_SUCCESS;
    if (i != root) {
      rc = recv_into(comm, i, kGather, slot, recvcounts[i], recvtype);
    } else if (!in_place(sendbuf)) {
      rc = copy_local(comm, sendbuf, sendcount, sendtype, slot, recvcounts[i], recvtype);
    }
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  if (int rc = check_comm(comm, "MPI_Gather")) return rc;
  const std::vector<int> counts = uniform(comm->size, recvcount, false),
                         displs = uniform(comm->size, recvcount, true);
  return MPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, counts.data(), displs.data(), recvtype,
                     root, comm);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm) {
  const char *who = "MPI_Scatterv";
  if (int rc = check_comm(comm, who)) return rc;
  if (comm->inter_local != nullptr) {
    return inter_scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                          comm);
  }
  if (int rc = check_root(comm, root, who)) return rc;
  if (comm->rank != root) {
    if (int rc = check_coll(comm, recvcount, recvtype, who)) return rc;
    return recv_into(comm, root, kScatter, recvbuf, recvcount, recvtype);
  }
  if (int rc = check_type(comm, sendtype, who)) return rc;
  for (int i = 0; i < comm->size; ++i) {
    const char *slot = at(sendbuf, displs[i], sendtype);
    int rc = MPI_SUCCESS;
    if (i != root) {
      rc = send_to_receiver(comm, i, kScatter, slot, sendcounts[i], sendtype);
    } else if (!in_place(recvbuf)) {
      rc = copy_local(comm, slot, sendcounts[i], sendtype, recvbuf, recvcount, recvtype);
    }
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  if (int rc = check_comm(comm, "MPI_Scatter")) return rc;
  const std::vector<int> counts = uniform(comm->size, sendcount, false),
                         displs = uniform(comm->size, sendcount, true);
  return MPI_Scatterv(sendbuf, counts.data(), displs.data(), sendtype, recvbuf, recvcount, recvtype,
                      root, comm);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  const char *who = "MPI_Alltoallv";
  if (int rc = check_comm(comm, who)) return rc;
  if (comm->inter_local != nullptr) {
    return inter_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                           recvtype, comm, who);
  }
  // In place, a block sent to j is where j's block arrives: those sends
  // copy their data before returning. Otherwise they are lent where rocl
  // can (each receiver copies straight from sendbuf), and waited for once
  // this rank has received its own blocks.
  const bool may_lend = !in_place(sendbuf);
  if (!may_lend) sendbuf = recvbuf, sendcounts = recvcounts, sdispls = rdispls, sendtype = recvtype;
  if (int rc = check_type(comm, sendtype, who)) return rc;
  if (int rc = check_type(comm, recvtype, who)) return rc;
  const int me = comm->rank;
  std::vector<rocl_request_t> lent;
  for (int j = 0; j < comm->size; ++j) {
    if (j == me) continue;
    const void *block = at(sendbuf, sdispls[j], sendtype);
    if (int rc = may_lend ? post_lendable(comm, j, kAlltoall, block, sendcounts[j], sendtype, &lent)
                          : send_from(comm, j, kAlltoall, block, sendcounts[j], sendtype)) {
      wait_all_lent(comm, &lent);
      return rc;
    }
  }
  if (sendbuf != recvbuf) {
    if (int rc = copy_local(comm, at(sendbuf, sdispls[me], sendtype), sendcounts[me], sendtype,
                            at(recvbuf, rdispls[me], recvtype), recvcounts[me], recvtype))
      return rc;
  }
  for (int j = 0; j < comm->size; ++j) {
    if (j == me) continue;
    if (int rc = recv_into(comm, j, kAlltoall, at(recvbuf, rdispls[j], recvtype), recvcounts[j],
                           recvtype)) {
      wait_all_lent(comm, &lent);
      return rc;
    }
  }
  return wait_all_lent(comm, &lent);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (int rc = check_comm(comm, "MPI_Alltoall")) return rc;
  if (comm->inter_local != nullptr) {
    if (int rc = refuse_in_place(comm, sendbuf, "MPI_Alltoall")) return rc;
  }
  const int n = comm->size;
  const std::vector<int> sc = uniform(n, sendcount, false), sd = uniform(n, sendcount, true),
                         rc = uniform(n, recvcount, false), rd = uniform(n, recvcount, true);
  return MPI_Alltoallv(sendbuf, sc.data(), sd.data(), sendtype, recvbuf, rc.data(), rd.data(),
                       recvtype, comm);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  if (int rc = check_comm(comm, "MPI_Allgatherv")) return rc;
  // On an intercommunicator size is the remote group's: one block from each.
  const int n = comm->size, me = comm->rank;
  if (comm->inter_local != nullptr) {
    if (int rc = refuse_in_place(comm, sendbuf, "MPI_Allgatherv")) return rc;
  } else if (in_place(sendbuf)) {
    sendbuf = at(recvbuf, displs[me], recvtype), sendcount = recvcounts[me], sendtype = recvtype;
  }
  // My block to everyone (as alltoallv with one send block for all).
  std::vector<int> sc(n, sendcount), sd(n, 0);
  return MPI_Alltoallv(sendbuf, sc.data(), sd.data(), sendtype, recvbuf, recvcounts, displs,
                       recvtype, comm);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (int rc = check_comm(comm, "MPI_Allgather")) return rc;
  if (comm->inter_local != nullptr) {
    if (int rc = refuse_in_place(comm, sendbuf, "MPI_Allgather")) return rc;
  }
  const std::vector<int> counts = uniform(comm->size, recvcount, false),
                         displs = uniform(comm->size, recvcount, true);
  return MPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, counts.data(), displs.data(),
                        recvtype, comm);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  const char *who = "MPI_Reduce_scatter_block";
  if (int rc = check_coll(comm, recvcount, datatype, who)) return rc;
  if (comm->inter_local != nullptr) {
    const std::vector<int> counts = uniform(comm->inter_local->size, recvcount, false);
    return inter_reduce_scatter(sendbuf, recvbuf, counts.data(), datatype, op, comm, who);
  }
  if (int rc = check_op(comm, op, datatype, who)) return rc;
  const int total = recvcount * comm->size;
  std::vector<char> acc = contribution(sendbuf, recvbuf, total, datatype);
  if (int rc = reduce_to_zero(comm, acc, total, datatype, op, who)) return rc;
  const std::size_t block = datatype->packed * std::size_t(recvcount);
  char *mine = static_cast<char *>(recvbuf) + datatype->first();
  if (comm->rank != 0) return recv_bytes(comm, 0, kReduceScatter, kCollective, mine, block);
  for (int j = 1; j < comm->size; ++j) {
    if (int rc = send_bytes(comm, j, kReduceScatter, kCollective, acc.data() + j * block, block))
      return rc;
  }
  if (block != 0) std::memcpy(mine, acc.data(), block);
  return MPI_SUCCESS;
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm) {
  if (int rc = check_coll(comm, count, datatype, "MPI_Scan")) return rc;
  if (comm->inter_local != nullptr) {
    return fail(comm, MPI_ERR_COMM, "MPI_Scan", "MPI defines no scan on intercommunicators");
  }
  if (int rc = check_op(comm, op, datatype, "MPI_Scan")) return rc;
  std::vector<char> acc = contribution(sendbuf, recvbuf, count, datatype);
  if (comm->rank > 0) {
    std::vector<char> before(acc.size());
    if (int rc = recv_bytes(comm, comm->rank - 1, kScan, kCollective, before.data(), before.size()))
      return rc;
    if (int rc = reduce_local(comm, op, datatype, before.data(), acc.data(), count, "MPI_Scan"))
      return rc;
  }
  if (comm->rank + 1 < comm->size) {
    if (int rc = send_bytes(comm, comm->rank + 1, kScan, kCollective, acc.data(), acc.size()))
      return rc;
  }
  deliver(acc, recvbuf, datatype);
  return MPI_SUCCESS;
}

// Alltoallv with a type per peer and displacements in bytes.
int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  const char *who = "MPI_Alltoallw";
  if (int rc = check_comm(comm, who)) return rc;
  if (comm->inter_local != nullptr) {
    return inter_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                           recvtypes, comm);
  }
  if (in_place(sendbuf)) {  // sends copy their data before returning: send from recvbuf first
    sendbuf = recvbuf, sendcounts = recvcounts, sdispls = rdispls, sendtypes = recvtypes;
  }
  const int me = comm->rank;
  auto byte_at = [](const void *buf, int displacement) {
    return static_cast<char *>(const_cast<void *>(buf)) + displacement;
  };
  for (int j = 0; j < comm->size; ++j) {
    if (int rc = check_type(comm, sendtypes[j], who)) return rc;
    if (int rc = check_type(comm, recvtypes[j], who)) return rc;
  }
  for (int j = 0; j < comm->size; ++j) {
    if (j == me) continue;
    if (int rc = send_from(comm, j, kAlltoallw, byte_at(sendbuf, sdispls[j]), sendcounts[j],
                           sendtypes[j]))
      return rc;
  }
  if (sendbuf != recvbuf) {
    if (int rc = copy_local(comm, byte_at(sendbuf, sdispls[me]), sendcounts[me], sendtypes[me],
                            byte_at(recvbuf, rdispls[me]), recvcounts[me], recvtypes[me]))
      return rc;
  }
  for (int j = 0; j < comm->size; ++j) {
    if (j == me) continue;
    if (int rc = recv_into(comm, j, kAlltoallw, byte_at(recvbuf, rdispls[j]), recvcounts[j],
                           recvtypes[j]))
      return rc;
  }
  return MPI_SUCCESS;
}

// Rank r gets the operation over ranks 0..r-1 (rank 0's recvbuf is left
// alone), passed along the ranks as MPI_Scan's running result is.
int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm) {
  if (int rc = check_coll(comm, count, datatype, "MPI_Exscan")) return rc;
  if (comm->inter_local != nullptr) {
    return fail(comm, MPI_ERR_COMM, "MPI_Exscan", "MPI defines no scan on intercommunicators");
  }
  if (int rc = check_op(comm, op, datatype, "MPI_Exscan")) return rc;
  std::vector<char> acc = contribution(sendbuf, recvbuf, count, datatype);
  std::vector<char> before;
  if (comm->rank > 0) {
    before.resize(acc.size());
    if (int rc =
            recv_bytes(comm, comm->rank - 1, kExscan, kCollective, before.data(), before.size()))
      return rc;
    if (int rc = reduce_local(comm, op, datatype, before.data(), acc.data(), count, "MPI_Exscan"))
      return rc;
  }
  if (comm->rank + 1 < comm->size) {
    if (int rc = send_bytes(comm, comm->rank + 1, kExscan, kCollective, acc.data(), acc.size()))
      return rc;
  }
  if (comm->rank > 0) deliver(before, recvbuf, datatype);
  return MPI_SUCCESS;
}

// The reduction of every rank's whole vector at rank 0, then each rank's
// recvcounts[r] elements sent to it.
int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  const char *who = "MPI_Reduce_scatter";
  if (int rc = check_comm(comm, who)) return rc;
  if (comm->inter_local != nullptr) {
    return inter_reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, who);
  }
  int total = 0;
  for (int r = 0; r < comm->size; ++r) {
    if (int rc = check_count(comm, recvcounts[r], who)) return rc;
    total += recvcounts[r];
  }
  if (int rc = check_coll(comm, total, datatype, who)) return rc;
  if (int rc = check_op(comm, op, datatype, who)) return rc;
  std::vector<char> acc = contribution(sendbuf, recvbuf, total, datatype);
  if (int rc = reduce_to_zero(comm, acc, total, datatype, op, who)) return rc;
  const std::size_t per = datatype->packed;
  char *mine = static_cast<char *>(recvbuf) + datatype->first();
  const std::size_t my_bytes = per * std::size_t(recvcounts[comm->rank]);
  if (comm->rank != 0) return recv_bytes(comm, 0, kReduceScatter, kCollective, mine, my_bytes);
  std::size_t offset = per * std::size_t(recvcounts[0]);
  for (int j = 1; j < comm->size; ++j) {
    const std::size_t n = per * std::size_t(recvcounts[j]);
    if (int rc = send_bytes(comm, j, kReduceScatter, kCollective, acc.data() + offset, n))
      return rc;
    offset += n;
  }
  if (my_bytes != 0) std::memcpy(mine, acc.data(), my_bytes);
  return MPI_SUCCESS;
}

}  // extern "C"
