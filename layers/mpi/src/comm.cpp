// comm.cpp - communicators: each rank registers one rocl resource per
// communicator and learns the others' gids (the directory for
// MPI_COMM_WORLD, an allgather over the parent for dup and split).
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "mpi_impl.hpp"

struct rocl_mpi_comm rocl_mpi_comm_world, rocl_mpi_comm_self;

int rocl_mpi_comm::source_rank_of(rocl_gid_t gid) const {
  if (rank < size && gid == gids[rank]) return rank;
  const auto it = rank_of.find(gid);
  return it != rank_of.end() ? it->second : MPI_UNDEFINED;
}

namespace rmpi {
namespace {

std::string job_id() {
  // Spawned children's world is their own, inside the parents' job.
  if (std::string spawn = spawn_id(); !spawn.empty()) return spawn;
  // roclrun --hosts: ROCL_JOB_ID names the job on every host, whose job
  // folders (ROCL_JOB_DIR) differ.
  if (const char *id = std::getenv("ROCL_JOB_ID"); id != nullptr && *id != '\0') return id;
  const char *dir = std::getenv("ROCL_JOB_DIR");
  return dir != nullptr ? dir : "single-" + std::to_string(getpid());
}

int env_int(const char *name, int otherwise) {
  const char *v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : otherwise;
}

rocl_attrl_t *attributes(const char *kind, int rank) {
  rocl_attrl_t *a = rocl_new_attrl(512);
  const std::string job = job_id(), r = std::to_string(rank);
  rocl_add_attr(a, "type", "mpi", 3);
  rocl_add_attr(a, "mpi.job", job.data(), int(job.size()));
  rocl_add_attr(a, "mpi.comm", kind, int(std::strlen(kind)));
  rocl_add_attr(a, "mpi.rank", r.data(), int(r.size()));
  return a;
}

// World rank r's resource, registered by its process at its MPI_Init: ask
// the directory until it is there (processes start at different times).
int find_world_rank(int r, rocl_gid_t *gid) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto nap = std::chrono::microseconds(100);
  for (;;) {
    rocl_attrl_t *a = attributes("world", r);
    *gid = ROCL_NULL_GID;
    const int rc = rocl_query(gid, a);
    rocl_kill_attrl(a);
    if (rc == ROCL_OK) return MPI_SUCCESS;
    if (rc != ROCL_ENOTFOUND || std::chrono::steady_clock::now() > give_up) {
      return fail(nullptr, MPI_ERR_OTHER, "MPI_Init",
                  "rank %d of MPI_COMM_WORLD did not appear in the directory within 60 s (%s)", r,
                  rocl_last_error());
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(5000));
  }
}

void fill(MPI_Comm c, int rank, std::vector<rocl_gid_t> gids, std::vector<int> world) {
  c->rank = rank;
  c->size = int(gids.size());
  c->self = gids[rank];
  c->gids = std::move(gids);
  c->world = std::move(world);
  c->rank_of.clear();
  for (int i = 0; i < c->size; ++i) c->rank_of[c->gids[i]] = i;
  c->magic = rocl_mpi_comm::kMagic;
}

}  // namespace

MPI_Comm new_comm(int rank, std::vector<rocl_gid_t> gids, std::vector<int> world,
                  MPI_Errhandler errhandler) {
  auto *c = new rocl_mpi_comm;
  fill(c, rank, std::move(gids), std::move(world));
  c->errhandler = errhandler;
  return c;
}

rocl_gid_t register_comm_resource(const char *kind, int rank) {
  rocl_attrl_t *a = attributes(kind, rank);
  const std::int64_t gid = rocl_register(a);
  rocl_kill_attrl(a);
  return gid > 0 ? rocl_gid_t(gid) : ROCL_NULL_GID;
}

int setup_world() {
  const int size = env_int("ROCL_SIZE", 1), rank = env_int("ROCL_RANK", 0);
  if (size < 1 || rank < 0 || rank >= size) {
    return fail(nullptr, MPI_ERR_OTHER, "MPI_Init", "ROCL_RANK %d / ROCL_SIZE %d make no sense",
                rank, size);
  }
  std::vector<rocl_gid_t> gids(size);
  std::vector<int> world(size);
  for (int r = 0; r < size; ++r) world[r] = r;
  gids[rank] = register_comm_resource("world", rank);
  const rocl_gid_t self = register_comm_resource("self", rank);
  if (gids[rank] == ROCL_NULL_GID || self == ROCL_NULL_GID) return MPI_ERR_OTHER;
  for (int r = 0; r < size; ++r) {
    if (r != rank) {
      if (int rc = find_world_rank(r, &gids[r])) return rc;
    }
  }
  fill(MPI_COMM_WORLD, rank, std::move(gids), std::move(world));
  fill(MPI_COMM_SELF, 0, {self}, {rank});
  return MPI_SUCCESS;
}

void teardown_world() {
  for (MPI_Comm c : {MPI_COMM_WORLD, MPI_COMM_SELF}) {
    rocl_delete(c->self);
    c->magic = 0;
  }
}

// Two per immediate operation: plain read-modify-writes when one thread
// at a time calls MPI, as locked ones would cost every message of a
// stream (compare's rocl-mpi-shm streams show it).
void retain_comm(MPI_Comm comm) {
  if (one_caller_at_a_time()) {
    comm->refs.store(comm->refs.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  } else {
    comm->refs.fetch_add(1, std::memory_order_relaxed);
  }
}

void release_comm(MPI_Comm comm) {
  if (one_caller_at_a_time()) {
    const int left = comm->refs.load(std::memory_order_relaxed) - 1;
    comm->refs.store(left, std::memory_order_relaxed);
    if (left != 0) return;
  } else if (comm->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) {
    return;
  }
  rocl_delete(comm->self);
  comm->magic = 0;
  if (comm->inter_local != nullptr) release_comm(comm->inter_local);
  delete comm;
}

}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  if (int rc = check_comm(comm, "MPI_Comm_rank")) return rc;
  *rank = comm->rank;
  return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
  if (int rc = check_comm(comm, "MPI_Comm_size")) return rc;
  *size = comm->inter_local != nullptr ? comm->inter_local->size : comm->size;
  return MPI_SUCCESS;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  if (int rc = check_comm(comm, "MPI_Comm_dup")) return rc;
  if (comm->inter_local != nullptr) return inter_dup(comm, newcomm);
  const rocl_gid_t mine = register_comm_resource("dup", comm->rank);
  if (mine == ROCL_NULL_GID) return fail_rocl(comm, ROCL_EINTERNAL, "MPI_Comm_dup");
  std::vector<rocl_gid_t> gids(comm->size);
  if (int rc = allgather_bytes(comm, &mine, sizeof mine, gids.data())) {
    rocl_delete(mine);
    return rc;
  }
  auto *c = new rocl_mpi_comm;
  fill(c, comm->rank, std::move(gids), comm->world);
  c->errhandler = comm->errhandler;
  c->cart_dims = comm->cart_dims;
  c->cart_periods = comm->cart_periods;
  c->graph = comm->graph;
  *newcomm = c;
  return copy_attributes(comm, c);
}

// The dup happens at once; the request is complete when it is returned.
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request) {
  const int rc = MPI_Comm_dup(comm, newcomm);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Status status;
  set_empty_status(&status);
  *request = completed_request(comm, status, MPI_SUCCESS);
  return MPI_SUCCESS;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
  if (int rc = check_comm(comm, "MPI_Comm_split")) return rc;
  if (color < 0 && color != MPI_UNDEFINED) {
    return fail(comm, MPI_ERR_ARG, "MPI_Comm_split", "color %d is negative", color);
  }
  if (comm->inter_local != nullptr) return inter_split(comm, color, key, newcomm);
  struct Entry {
    int color, key;
    rocl_gid_t gid;
  };
  Entry mine{color, key, ROCL_NULL_GID};
  if (color != MPI_UNDEFINED) {
    mine.gid = register_comm_resource("split", comm->rank);
    if (mine.gid == ROCL_NULL_GID) return fail_rocl(comm, ROCL_EINTERNAL, "MPI_Comm_split");
  }
  std::vector<Entry> all(comm->size);
  if (int rc = allgather_bytes(comm, &mine, sizeof mine, all.data())) return rc;
  *newcomm = MPI_COMM_NULL;
  if (color == MPI_UNDEFINED) return MPI_SUCCESS;
  std::vector<int> members;  // parent ranks with my color, ordered by (key, parent rank)
  for (int r = 0; r < comm->size; ++r) {
    if (all[r].color == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(),
                   [&all](int a, int b) { return all[a].key < all[b].key; });
  std::vector<rocl_gid_t> gids;
  std::vector<int> world;
  int rank = 0;
  for (int r : members) {
    if (r == comm->rank) rank = int(gids.size());
    gids.push_back(all[r].gid);
    world.push_back(comm->world[r]);
  }
  auto *c = new rocl_mpi_comm;
  fill(c, rank, std::move(gids), std::move(world));
  c->errhandler = comm->errhandler;
  *newcomm = c;
  return MPI_SUCCESS;
}

int MPI_Comm_free(MPI_Comm *comm) {
  if (int rc = check_comm(*comm, "MPI_Comm_free")) return rc;
  if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF) {
    return fail(*comm, MPI_ERR_COMM, "MPI_Comm_free",
                "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed");
  }
  if (int rc = delete_attributes(*comm, "MPI_Comm_free")) return rc;
  end_offload(*comm);  // its non-blocking collectives run to their end first
  release_comm(*comm);
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result) {
  if (int rc = check_comm(comm1, "MPI_Comm_compare")) return rc;
  if (int rc = check_comm(comm2, "MPI_Comm_compare")) return rc;
  if (comm1 == comm2) {
    *result = MPI_IDENT;
  } else if (comm1->world == comm2->world) {
    *result = MPI_CONGRUENT;
  } else {
    std::vector<int> a = comm1->world, b = comm2->world;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    *result = a == b ? MPI_SIMILAR : MPI_UNEQUAL;
  }
  return MPI_SUCCESS;
}

}  // extern "C"
