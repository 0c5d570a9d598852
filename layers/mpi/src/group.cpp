// group.cpp - groups and the communicators made from them (MPI 3.1
// chapter 6.3-6.4). A group is an ordered list of processes named by their
// rank in MPI_COMM_WORLD (every process of a job has one), so that groups
// of different communicators compare and translate without asking anyone.
// MPI_Comm_create is MPI_Comm_split with the group's order as the key;
// MPI_Comm_create_group, collective over the group alone, gathers the
// members' new resources at the group's first member and sends the list
// back, point to point over the parent in a tag space above MPI_TAG_UB
// (so no user message matches), with the caller's tag in it.
#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "mpi_impl.hpp"

struct rocl_mpi_group {
  static constexpr std::uint32_t kMagic = 0x67727570;
  std::uint32_t magic = kMagic;
  std::vector<int> world;  // group rank -> rank in MPI_COMM_WORLD
  bool predefined = false;
  int rank_of_world(int w) const {
    const auto it = std::find(world.begin(), world.end(), w);
    return it == world.end() ? MPI_UNDEFINED : int(it - world.begin());
  }
};

struct rocl_mpi_group rocl_mpi_group_empty {
  rocl_mpi_group::kMagic, {}, true
};

namespace {

using rmpi::fail;

int my_world_rank() {
  return MPI_COMM_WORLD->rank;
}

int check_group(MPI_Group g, const char *who) {
  if (!rmpi::initialized()) return rmpi::check_comm(MPI_COMM_WORLD, who);  // says so and exits
  if (g == MPI_GROUP_NULL) return fail(nullptr, MPI_ERR_GROUP, who, "the group is MPI_GROUP_NULL");
  if (g->magic != rocl_mpi_group::kMagic) {
    return fail(nullptr, MPI_ERR_GROUP, who, "%p is not a group (freed?)", static_cast<void *>(g));
  }
  return MPI_SUCCESS;
}

MPI_Group make(std::vector<int> world) {
  if (world.empty()) return MPI_GROUP_EMPTY;
  auto *g = new rocl_mpi_group;
  g->world = std::move(world);
  return g;
}

// Ranks of g (n of them, each 0..size-1 and none twice), or an error.
int check_ranks(MPI_Group g, int n, const int ranks[], const char *who) {
  if (n < 0 || n > int(g->world.size())) {
    return fail(nullptr, MPI_ERR_ARG, who, "%d ranks of a group of %zu", n, g->world.size());
  }
  std::vector<bool> seen(g->world.size());
  for (int i = 0; i < n; ++i) {
    if (ranks[i] < 0 || ranks[i] >= int(g->world.size())) {
      return fail(nullptr, MPI_ERR_RANK, who, "rank %d (entry %d) is not in a group of %zu",
                  ranks[i], i, g->world.size());
    }
    if (seen[ranks[i]]) {
      return fail(nullptr, MPI_ERR_RANK, who, "rank %d is named twice (entry %d)", ranks[i], i);
    }
    seen[ranks[i]] = true;
  }
  return MPI_SUCCESS;
}

// The ranks ranges[0..n) name (first, last, stride each), in order.
int expand_ranges(MPI_Group g, int n, int ranges[][3], std::vector<int> *out, const char *who) {
  if (n < 0) return fail(nullptr, MPI_ERR_ARG, who, "%d ranges", n);
  for (int i = 0; i < n; ++i) {
    const int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
    if (stride == 0 || (stride > 0 && first > last) || (stride < 0 && first < last)) {
      return fail(nullptr, MPI_ERR_ARG, who, "range %d (%d, %d, %d) is empty or endless", i, first,
                  last, stride);
    }
    for (int r = first; stride > 0 ? r <= last : r >= last; r += stride) {
      out->push_back(r);
      if (out->size() > g->world.size()) break;  // check_ranks names the duplicate
    }
  }
  return check_ranks(g, int(out->size()), out->data(), who);
}

constexpr int kCreateGroupTag = rmpi::kTagUb + 1;

using namespace rmpi;

// Gathers the members' new resources at the group's first member and sends
// the list back: the communicator of MPI_Comm_create_group.
int create_among(MPI_Comm parent, const std::vector<int> &members, int tag, MPI_Comm *newcomm,
                 const char *who) {
  const int me = int(std::find(members.begin(), members.end(), parent->rank) - members.begin());
  const rocl_gid_t mine = register_comm_resource("group", me);
  if (mine == ROCL_NULL_GID) return fail_rocl(parent, ROCL_EINTERNAL, who);
  const int t = kCreateGroupTag + (tag & 0x3fffffff);
  std::vector<rocl_gid_t> gids(members.size());
  int rc = MPI_SUCCESS;
  if (me == 0) {
    gids[0] = mine;
    for (std::size_t i = 1; i < members.size() && rc == MPI_SUCCESS; ++i) {
      rc = recv_bytes(parent, members[i], t, kPointToPoint, &gids[i], sizeof gids[i]);
    }
    for (std::size_t i = 1; i < members.size() && rc == MPI_SUCCESS; ++i) {
      rc = send_bytes(parent, members[i], t, kPointToPoint, gids.data(),
                      gids.size() * sizeof gids[0]);
    }
  } else {
    rc = send_bytes(parent, members[0], t, kPointToPoint, &mine, sizeof mine);
    if (rc == MPI_SUCCESS) {
      rc = recv_bytes(parent, members[0], t, kPointToPoint, gids.data(),
                      gids.size() * sizeof gids[0]);
    }
  }
  if (rc != MPI_SUCCESS) {
    rocl_delete(mine);
    return rc;
  }
  std::vector<int> world;
  world.reserve(members.size());
  for (int r : members) world.push_back(parent->world[r]);
  *newcomm = new_comm(me, std::move(gids), std::move(world), parent->errhandler);
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Comm_group(MPI_Comm comm, MPI_Group *group) {
  if (int rc = rmpi::check_comm(comm, "MPI_Comm_group")) return rc;
  *group = make(comm->inter_local != nullptr ? comm->inter_local->world : comm->world);
  return MPI_SUCCESS;
}

int MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group) {
  if (int rc = rmpi::check_comm(comm, "MPI_Comm_remote_group")) return rc;
  if (comm->inter_local == nullptr) {
    return fail(comm, MPI_ERR_COMM, "MPI_Comm_remote_group",
                "the communicator is not an intercommunicator");
  }
  *group = make(comm->world);
  return MPI_SUCCESS;
}

int MPI_Group_size(MPI_Group group, int *size) {
  if (int rc = check_group(group, "MPI_Group_size")) return rc;
  *size = int(group->world.size());
  return MPI_SUCCESS;
}

int MPI_Group_rank(MPI_Group group, int *rank) {
  if (int rc = check_group(group, "MPI_Group_rank")) return rc;
  *rank = group->rank_of_world(my_world_rank());
  return MPI_SUCCESS;
}

int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup) {
  if (int rc = check_group(group, "MPI_Group_incl")) return rc;
  if (int rc = check_ranks(group, n, ranks, "MPI_Group_incl")) return rc;
  std::vector<int> world;
  world.reserve(std::size_t(n));
  for (int i = 0; i < n; ++i) world.push_back(group->world[ranks[i]]);
  *newgroup = make(std::move(world));
  return MPI_SUCCESS;
}

int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup) {
  if (int rc = check_group(group, "MPI_Group_excl")) return rc;
  if (int rc = check_ranks(group, n, ranks, "MPI_Group_excl")) return rc;
  const std::set<int> out(ranks, ranks + n);
  std::vector<int> world;
  for (int r = 0; r < int(group->world.size()); ++r) {
    if (out.count(r) == 0) world.push_back(group->world[r]);
  }
  *newgroup = make(std::move(world));
  return MPI_SUCCESS;
}

int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup) {
  if (int rc = check_group(group, "MPI_Group_range_incl")) return rc;
  std::vector<int> ranks;
  if (int rc = expand_ranges(group, n, ranges, &ranks, "MPI_Group_range_incl")) return rc;
  return MPI_Group_incl(group, int(ranks.size()), ranks.data(), newgroup);
}

int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup) {
  if (int rc = check_group(group, "MPI_Group_range_excl")) return rc;
  std::vector<int> ranks;
  if (int rc = expand_ranges(group, n, ranges, &ranks, "MPI_Group_range_excl")) return rc;
  return MPI_Group_excl(group, int(ranks.size()), ranks.data(), newgroup);
}

// The set operations keep the first group's order, then the second's.
int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup) {
  if (int rc = check_group(group1, "MPI_Group_union")) return rc;
  if (int rc = check_group(group2, "MPI_Group_union")) return rc;
  std::vector<int> world = group1->world;
  for (int w : group2->world) {
    if (group1->rank_of_world(w) == MPI_UNDEFINED) world.push_back(w);
  }
  *newgroup = make(std::move(world));
  return MPI_SUCCESS;
}

int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup) {
  if (int rc = check_group(group1, "MPI_Group_intersection")) return rc;
  if (int rc = check_group(group2, "MPI_Group_intersection")) return rc;
  std::vector<int> world;
  for (int w : group1->world) {
    if (group2->rank_of_world(w) != MPI_UNDEFINED) world.push_back(w);
  }
  *newgroup = make(std::move(world));
  return MPI_SUCCESS;
}

int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup) {
  if (int rc = check_group(group1, "MPI_Group_difference")) return rc;
  if (int rc = check_group(group2, "MPI_Group_difference")) return rc;
  std::vector<int> world;
  for (int w : group1->world) {
    if (group2->rank_of_world(w) == MPI_UNDEFINED) world.push_back(w);
  }
  *newgroup = make(std::move(world));
  return MPI_SUCCESS;
}

int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
                              int ranks2[]) {
  if (int rc = check_group(group1, "MPI_Group_translate_ranks")) return rc;
  if (int rc = check_group(group2, "MPI_Group_translate_ranks")) return rc;
  if (n < 0) return fail(nullptr, MPI_ERR_ARG, "MPI_Group_translate_ranks", "%d ranks", n);
  for (int i = 0; i < n; ++i) {
    if (ranks1[i] == MPI_PROC_NULL) {
      ranks2[i] = MPI_PROC_NULL;
      continue;
    }
    if (ranks1[i] < 0 || ranks1[i] >= int(group1->world.size())) {
      return fail(nullptr, MPI_ERR_RANK, "MPI_Group_translate_ranks",
                  "rank %d (entry %d) is not in the first group, of %zu", ranks1[i], i,
                  group1->world.size());
    }
    ranks2[i] = group2->rank_of_world(group1->world[ranks1[i]]);
  }
  return MPI_SUCCESS;
}

int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result) {
  if (int rc = check_group(group1, "MPI_Group_compare")) return rc;
  if (int rc = check_group(group2, "MPI_Group_compare")) return rc;
  if (group1->world == group2->world) {
    *result = MPI_IDENT;
    return MPI_SUCCESS;
  }
  std::vector<int> a = group1->world, b = group2->world;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  *result = a == b ? MPI_SIMILAR : MPI_UNEQUAL;
  return MPI_SUCCESS;
}

int MPI_Group_free(MPI_Group *group) {
  if (group == nullptr) return fail(nullptr, MPI_ERR_ARG, "MPI_Group_free", "group is NULL");
  if (int rc = check_group(*group, "MPI_Group_free")) return rc;
  if (!(*group)->predefined) {
    (*group)->magic = 0;
    delete *group;
  }
  *group = MPI_GROUP_NULL;
  return MPI_SUCCESS;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) {
  if (int rc = rmpi::check_comm(comm, "MPI_Comm_create")) return rc;
  if (int rc = rmpi::check_intra(comm, "MPI_Comm_create")) return rc;
  if (int rc = check_group(group, "MPI_Comm_create")) return rc;
  for (int w : group->world) {
    if (std::find(comm->world.begin(), comm->world.end(), w) == comm->world.end()) {
      return fail(comm, MPI_ERR_GROUP, "MPI_Comm_create",
                  "the group holds world rank %d, which is not in the communicator", w);
    }
  }
  const int mine = group->rank_of_world(comm->world[comm->rank]);
  return MPI_Comm_split(comm, mine == MPI_UNDEFINED ? MPI_UNDEFINED : 0, mine, newcomm);
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm) {
  if (int rc = rmpi::check_comm(comm, "MPI_Comm_create_group")) return rc;
  if (int rc = rmpi::check_intra(comm, "MPI_Comm_create_group")) return rc;
  if (int rc = check_group(group, "MPI_Comm_create_group")) return rc;
  if (tag < 0 || tag > rmpi::kTagUb) {
    return fail(comm, MPI_ERR_TAG, "MPI_Comm_create_group", "tag %d is outside 0..%d", tag,
                rmpi::kTagUb);
  }
  std::vector<int> members;  // parent ranks, in group order
  for (int w : group->world) {
    const auto it = std::find(comm->world.begin(), comm->world.end(), w);
    if (it == comm->world.end()) {
      return fail(comm, MPI_ERR_GROUP, "MPI_Comm_create_group",
                  "the group holds world rank %d, which is not in the communicator", w);
    }
    members.push_back(int(it - comm->world.begin()));
  }
  *newcomm = MPI_COMM_NULL;
  if (group->rank_of_world(comm->world[comm->rank]) == MPI_UNDEFINED) {
    return fail(comm, MPI_ERR_GROUP, "MPI_Comm_create_group",
                "the calling process (rank %d) is not in the group", comm->rank);
  }
  return create_among(comm, members, tag, newcomm, "MPI_Comm_create_group");
}

// Processes that share memory are those of one host: rocl's host id of
// each rank's context (its "host.id" attribute), gathered.
int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info, MPI_Comm *newcomm) {
  if (int rc = rmpi::check_comm(comm, "MPI_Comm_split_type")) return rc;
  if (int rc = rmpi::check_intra(comm, "MPI_Comm_split_type")) return rc;
  if (split_type == MPI_UNDEFINED) return MPI_Comm_split(comm, MPI_UNDEFINED, key, newcomm);
  if (split_type != MPI_COMM_TYPE_SHARED) {
    return fail(comm, MPI_ERR_ARG, "MPI_Comm_split_type",
                "split type %d is neither MPI_COMM_TYPE_SHARED nor MPI_UNDEFINED", split_type);
  }
  char host[32] = {};
  rocl_gid_t ctx = rocl_context_gid();
  rocl_attrl_t *q = rocl_new_attrl(256);
  rocl_add_attr(q, "host.id", nullptr, int(sizeof host - 1));
  const int qrc = rocl_query(&ctx, q);
  int len = 0;
  const char *id =
      qrc == ROCL_OK ? static_cast<const char *>(rocl_get_attr(q, "host.id", &len)) : nullptr;
  if (id != nullptr) std::memcpy(host, id, std::size_t(std::min(len, int(sizeof host - 1))));
  rocl_kill_attrl(q);
  if (id == nullptr)
    return rmpi::fail_rocl(comm, qrc < 0 ? qrc : ROCL_EINTERNAL, "MPI_Comm_split_type");
  std::vector<char> all(std::size_t(comm->size) * sizeof host);
  if (int rc = rmpi::allgather_bytes(comm, host, sizeof host, all.data())) return rc;
  int color = 0;
  while (std::memcmp(&all[std::size_t(color) * sizeof host], host, sizeof host) != 0) ++color;
  return MPI_Comm_split(comm, color, key, newcomm);
}

}  // extern "C"
