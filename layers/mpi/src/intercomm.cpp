// intercomm.cpp - intercommunicators (MPI 3.1 section 6.6): two groups,
// point to point from one to the other, creation, dup, split, merging,
// and the collectives that go through the leaders alone.
// An intercommunicator is a communicator whose rank table (gids, world,
// size) is the REMOTE group's, so point to point works unchanged (a
// destination rank names a remote process, a source is found among the
// remote gids); the local group is a private dup of the local
// communicator (inter_local), which its collectives use inside the group,
// and MPI_Comm_size/rank/group answer for the local group.
// Barrier, Bcast and Allreduce are here, the other collectives in
// inter_coll.cpp; Scan and Exscan, which MPI does not define on an
// intercommunicator, refuse it with MPI_ERR_COMM.
#include <algorithm>
#include <vector>

#include "mpi_impl.hpp"

namespace {

using namespace rmpi;

constexpr int kInterTag = kTagUb + 2;  // above every user tag

using Member = GroupMember;

// The leaders swap their groups' lists over `via` (point to point, rank
// `to` there); the others get the remote list from their leader.
template <class T>
int swap_groups(MPI_Comm local, int leader, MPI_Comm via, int to, int tag, bool collective_domain,
                const std::vector<T> &mine, std::vector<T> *theirs, const char *who) {
  int n = 0;
  const Domain d = collective_domain ? kCollective : kPointToPoint;
  if (local->rank == leader) {
    const int m = int(mine.size());
    if (int rc = exchange_bytes(via, to, tag, d, &m, &n, sizeof n)) return rc;
  }
  if (int rc = MPI_Bcast(&n, 1, MPI_INT, leader, local)) return rc;
  theirs->resize(std::size_t(n));
  if (local->rank == leader) {
    if (int rc = send_bytes(via, to, tag, d, mine.data(), mine.size() * sizeof(T))) return rc;
    if (int rc = recv_bytes(via, to, tag, d, theirs->data(), theirs->size() * sizeof(T))) return rc;
  }
  (void)who;
  return MPI_Bcast(theirs->data(), int(theirs->size() * sizeof(T)), MPI_BYTE, leader, local);
}

}  // namespace

namespace rmpi {

int gather_group(MPI_Comm local, rocl_gid_t mine, std::vector<GroupMember> *out) {
  const Member me{mine, local->world[std::size_t(local->rank)]};
  out->resize(std::size_t(local->size));
  return allgather_bytes(local, &me, sizeof me, out->data());
}

MPI_Comm make_intercomm(MPI_Comm local_dup, rocl_gid_t self,
                        const std::vector<GroupMember> &remote) {
  std::vector<rocl_gid_t> gids;
  std::vector<int> world;
  for (const Member &m : remote) {
    gids.push_back(m.gid);
    world.push_back(m.world);
  }
  // new_comm takes `self` as gids[rank]: give it then put the remote table in.
  MPI_Comm c =
      new_comm(0, {self}, {local_dup->world[std::size_t(local_dup->rank)]}, local_dup->errhandler);
  c->gids = std::move(gids);
  c->world = std::move(world);
  c->size = int(c->gids.size());
  c->rank = local_dup->rank;
  c->rank_of.clear();
  for (int i = 0; i < c->size; ++i) c->rank_of[c->gids[std::size_t(i)]] = i;
  c->inter_local = local_dup;
  return c;
}

}  // namespace rmpi

namespace {

int check_inter(MPI_Comm comm, const char *who) {
  if (int rc = check_comm(comm, who)) return rc;
  if (comm->inter_local == nullptr) {
    return fail(comm, MPI_ERR_COMM, who, "the communicator is not an intercommunicator");
  }
  return MPI_SUCCESS;
}

}  // namespace

namespace rmpi {

int check_intra(MPI_Comm comm, const char *who) {
  if (comm != MPI_COMM_NULL && comm->magic == rocl_mpi_comm::kMagic &&
      comm->inter_local != nullptr) {
    return fail(comm, MPI_ERR_COMM, who, "rocl's MPI does this on intracommunicators only");
  }
  return MPI_SUCCESS;
}

int inter_barrier(MPI_Comm comm) {
  MPI_Comm local = comm->inter_local;
  if (int rc = MPI_Barrier(local)) return rc;
  if (local->rank == 0) {
    char none = 0, got = 0;
    if (int rc = exchange_bytes(comm, 0, kInterTag, kCollective, &none, &got, 1)) return rc;
  }
  return MPI_Barrier(local);
}

int inter_bcast(void *buffer, int count, MPI_Datatype t, int root, MPI_Comm comm) {
  if (root == MPI_PROC_NULL) return MPI_SUCCESS;
  Contiguous data(buffer, count, t, root == MPI_ROOT);
  if (root == MPI_ROOT) {
    return send_bytes(comm, 0, kInterTag, kCollective, data.data(), data.bytes());
  }
  if (root < 0 || root >= comm->size) {
    return fail(comm, MPI_ERR_ROOT, "MPI_Bcast",
                "root %d is neither MPI_ROOT, MPI_PROC_NULL nor a rank of the remote group (of %d)",
                root, comm->size);
  }
  MPI_Comm local = comm->inter_local;
  if (local->rank == 0) {
    if (int rc = recv_bytes(comm, root, kInterTag, kCollective, data.data(), data.bytes()))
      return rc;
    data.store(data.bytes());
  }
  return MPI_Bcast(buffer, count, t, 0, local);
}

// Each group gets the reduction of the other group's data.
int inter_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op,
                    MPI_Comm comm) {
  MPI_Comm local = comm->inter_local;
  const std::size_t bytes = t->packed * std::size_t(count);
  std::vector<char> mine(bytes), theirs(bytes);
  // The group's reduction at its leader, swapped with the other leader's.
  if (int rc = MPI_Reduce(sendbuf, local->rank == 0 ? recvbuf : nullptr, count, t, op, 0, local))
    return rc;
  if (local->rank == 0) {
    pack(recvbuf, count, t, mine.data());
    if (int rc = exchange_bytes(comm, 0, kInterTag, kCollective, mine.data(), theirs.data(), bytes))
      return rc;
    unpack(theirs.data(), bytes, recvbuf, count, t);
  }
  return MPI_Bcast(recvbuf, count, t, 0, local);
}

// Both groups dup their local part; the leaders swap the new resources.
int inter_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  const char *who = "MPI_Comm_dup";
  MPI_Comm local = MPI_COMM_NULL;
  if (int rc = MPI_Comm_dup(comm->inter_local, &local)) return rc;
  const rocl_gid_t self = register_comm_resource("inter", local->rank);
  if (self == ROCL_NULL_GID) {
    MPI_Comm_free(&local);
    return fail_rocl(comm, ROCL_EINTERNAL, who);
  }
  std::vector<Member> mine, theirs;
  int rc = gather_group(local, self, &mine);
  if (rc == MPI_SUCCESS) rc = swap_groups(local, 0, comm, 0, kInterTag, true, mine, &theirs, who);
  if (rc != MPI_SUCCESS) {
    rocl_delete(self);
    MPI_Comm_free(&local);
    return rc;
  }
  MPI_Comm c = make_intercomm(local, self, theirs);
  c->errhandler = comm->errhandler;
  *newcomm = c;
  return copy_attributes(comm, c);
}

// Each group splits its local part; the subgroups of one color on the two
// sides make a new intercommunicator. A color the other side lacks gives
// MPI_COMM_NULL.
int inter_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
  const char *who = "MPI_Comm_split";
  struct Entry {
    int color, key;
    Member member;
  };
  *newcomm = MPI_COMM_NULL;
  MPI_Comm local = MPI_COMM_NULL;
  if (int rc = MPI_Comm_split(comm->inter_local, color, key, &local)) return rc;
  Entry me{color, key, {ROCL_NULL_GID, comm->inter_local->world[std::size_t(comm->rank)]}};
  if (color != MPI_UNDEFINED) {
    me.member.gid = register_comm_resource("inter", local->rank);
    if (me.member.gid == ROCL_NULL_GID) {
      MPI_Comm_free(&local);
      return fail_rocl(comm, ROCL_EINTERNAL, who);
    }
  }
  std::vector<Entry> mine(std::size_t(comm->inter_local->size)), theirs;
  int rc = allgather_bytes(comm->inter_local, &me, sizeof me, mine.data());
  if (rc == MPI_SUCCESS) {
    rc = swap_groups(comm->inter_local, 0, comm, 0, kInterTag, true, mine, &theirs, who);
  }
  // The remote subgroup of my color in its rank order: by key, then rank.
  std::vector<Entry> same;
  for (const Entry &e : theirs) {
    if (color != MPI_UNDEFINED && e.color == color) same.push_back(e);
  }
  std::stable_sort(same.begin(), same.end(),
                   [](const Entry &a, const Entry &b) { return a.key < b.key; });
  if (rc != MPI_SUCCESS || same.empty()) {
    if (me.member.gid != ROCL_NULL_GID) rocl_delete(me.member.gid);
    if (local != MPI_COMM_NULL) MPI_Comm_free(&local);
    return rc;
  }
  std::vector<Member> remote;
  remote.reserve(same.size());
  for (const Entry &e : same) remote.push_back(e.member);
  MPI_Comm c = make_intercomm(local, me.member.gid, remote);
  c->errhandler = comm->errhandler;
  *newcomm = c;
  return MPI_SUCCESS;
}

}  // namespace rmpi

extern "C" {

int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                         int remote_leader, int tag, MPI_Comm *newintercomm) {
  const char *who = "MPI_Intercomm_create";
  if (int rc = check_comm(local_comm, who)) return rc;
  if (int rc = check_intra(local_comm, who)) return rc;
  if (local_leader < 0 || local_leader >= local_comm->size) {
    return fail(local_comm, MPI_ERR_RANK, who, "local leader %d of %d", local_leader,
                local_comm->size);
  }
  if (local_comm->rank == local_leader) {
    if (int rc = check_comm(peer_comm, who)) return rc;
    if (int rc = check_rank(peer_comm, remote_leader, false, who)) return rc;
  }
  if (int rc = check_tag(local_comm, tag, false, who)) return rc;
  MPI_Comm local = MPI_COMM_NULL;
  if (int rc = MPI_Comm_dup(local_comm, &local)) return rc;
  const rocl_gid_t self = register_comm_resource("inter", local->rank);
  if (self == ROCL_NULL_GID) return fail_rocl(local_comm, ROCL_EINTERNAL, who);
  std::vector<Member> mine, theirs;
  int rc = gather_group(local, self, &mine);
  if (rc == MPI_SUCCESS) {
    rc = swap_groups(local, local_leader, peer_comm, remote_leader, tag, false, mine, &theirs, who);
  }
  if (rc != MPI_SUCCESS) {
    rocl_delete(self);
    MPI_Comm_free(&local);
    return rc;
  }
  *newintercomm = make_intercomm(local, self, theirs);
  return MPI_SUCCESS;
}

// The group that said high = false comes first; if both said the same, the
// group of the lower world rank.
int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm) {
  const char *who = "MPI_Intercomm_merge";
  if (int rc = check_inter(intercomm, who)) return rc;
  MPI_Comm local = intercomm->inter_local;
  const rocl_gid_t self = register_comm_resource("merged", local->rank);
  if (self == ROCL_NULL_GID) return fail_rocl(intercomm, ROCL_EINTERNAL, who);
  std::vector<Member> mine, theirs;
  int rc = gather_group(local, self, &mine);
  int their_high = 0;
  if (rc == MPI_SUCCESS && local->rank == 0) {
    const int h = high ? 1 : 0;
    rc = exchange_bytes(intercomm, 0, kInterTag, kCollective, &h, &their_high, sizeof h);
  }
  if (rc == MPI_SUCCESS) rc = MPI_Bcast(&their_high, 1, MPI_INT, 0, local);
  if (rc == MPI_SUCCESS) {
    rc = swap_groups(local, 0, intercomm, 0, kInterTag, true, mine, &theirs, who);
  }
  if (rc != MPI_SUCCESS) {
    rocl_delete(self);
    return rc;
  }
  const bool me_high = high != 0;
  bool mine_first = !me_high && their_high != 0;
  if (me_high == (their_high != 0)) mine_first = mine.front().world < theirs.front().world;
  std::vector<Member> all = mine_first ? mine : theirs;
  const std::vector<Member> &second = mine_first ? theirs : mine;
  all.insert(all.end(), second.begin(), second.end());
  std::vector<rocl_gid_t> gids;
  std::vector<int> world;
  int rank = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].gid == self) rank = int(i);
    gids.push_back(all[i].gid);
    world.push_back(all[i].world);
  }
  *newintracomm = new_comm(rank, std::move(gids), std::move(world), intercomm->errhandler);
  return MPI_SUCCESS;
}

int MPI_Comm_test_inter(MPI_Comm comm, int *flag) {
  if (int rc = check_comm(comm, "MPI_Comm_test_inter")) return rc;
  *flag = comm->inter_local != nullptr;
  return MPI_SUCCESS;
}

int MPI_Comm_remote_size(MPI_Comm comm, int *size) {
  if (int rc = check_inter(comm, "MPI_Comm_remote_size")) return rc;
  *size = comm->size;
  return MPI_SUCCESS;
}

}  // extern "C"
