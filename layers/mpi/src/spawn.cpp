// spawn.cpp - MPI_Comm_spawn, MPI_Comm_spawn_multiple and
// MPI_Comm_get_parent (MPI 3.1 section 10.3) over rocl_spawn: the spawning
// group's root starts the children through their host's directory server
// (the info key "host" names the host, else the hosts take turns), each
// with ROCL_RANK, ROCL_SIZE, ROCL_MPI_APPNUM (its command's index) and
// ROCL_MPI_SPAWN=<spawn id>: their MPI_COMM_WORLD is a world of its own
// (its resources are told apart from the parents' by that id) and their
// MPI_Init joins the parents. The two groups meet at a resource the root
// registers for the spawn ({type=mpi, mpi.job=<id>, mpi.comm=spawn}): the
// children's rank 0 sends their list there and gets the parents' back,
// and each group makes an intercommunicator of the two (intercomm.cpp).
// World ranks name processes within one world, so groups that mix the
// parents' and the children's worlds cannot be compared or translated.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mpi_impl.hpp"

namespace {

using namespace rmpi;

constexpr int kSpawnTag = kTagUb + 3;
constexpr int kMeetMs = 60000;
MPI_Comm g_parent = MPI_COMM_NULL;
std::atomic<unsigned> g_spawns{0};

rocl_attrl_t *meeting_point(const std::string &id) {
  rocl_attrl_t *a = rocl_new_attrl(512);
  rocl_add_attr(a, "type", "mpi", 3);
  rocl_add_attr(a, "mpi.job", id.data(), int(id.size()));
  rocl_add_attr(a, "mpi.comm", "spawn", 5);
  return a;
}

// The parents' root: the children's list arrives at the meeting point,
// the parents' goes back.
int meet_children(const std::string &id, const std::vector<GroupMember> &parents,
                  std::vector<GroupMember> *children, const char *who) {
  rocl_attrl_t *a = meeting_point(id);
  const std::int64_t point = rocl_register(a);
  rocl_kill_attrl(a);
  if (point < 0) return fail_rocl(MPI_COMM_SELF, int(point), who);
  rocl_status_t st{};
  int rc =
      rocl_recvx(rocl_gid_t(point), ROCL_ANY_GID, kSpawnTag, kCollective, nullptr, 0, &st, kMeetMs);
  if (rc == ROCL_OK) {
    children->resize(st.len / sizeof(GroupMember));
    std::memcpy(children->data(), st.ptr, children->size() * sizeof(GroupMember));
    rocl_bfret(st.ptr);
    rc =
        rocl_sendx(rocl_gid_t(point), st.origin, kSpawnTag, kCollective, 0,
                   const_cast<GroupMember *>(parents.data()), parents.size() * sizeof(GroupMember));
  }
  rocl_delete(rocl_gid_t(point));
  if (rc != ROCL_OK) {
    return fail(MPI_COMM_SELF, MPI_ERR_SPAWN, who, "the children did not report within %d ms: %s",
                kMeetMs, rocl_last_error());
  }
  return MPI_SUCCESS;
}

// The children's rank 0: finds the meeting point, sends the children's
// list from its own resource, gets the parents'.
int meet_parents(const std::string &id, rocl_gid_t from, const std::vector<GroupMember> &children,
                 std::vector<GroupMember> *parents) {
  rocl_attrl_t *a = meeting_point(id);
  rocl_gid_t point = ROCL_NULL_GID;
  int rc = rocl_query_wait(a, 1, kMeetMs) >= 1 ? rocl_query(&point, a) : ROCL_ETIMEDOUT;
  rocl_kill_attrl(a);
  if (rc == ROCL_OK) {
    rc = rocl_sendx(from, point, kSpawnTag, kCollective, 0,
                    const_cast<GroupMember *>(children.data()),
                    children.size() * sizeof(GroupMember));
  }
  rocl_status_t st{};
  if (rc == ROCL_OK) rc = rocl_recvx(from, point, kSpawnTag, kCollective, nullptr, 0, &st, kMeetMs);
  if (rc != ROCL_OK) {
    std::fprintf(stderr,
                 "rocl MPI: MPI_Init of a spawned process: the parents' meeting point "
                 "for spawn %s: %s\n",
                 id.c_str(), rocl_last_error());
    return MPI_ERR_SPAWN;
  }
  parents->resize(st.len / sizeof(GroupMember));
  std::memcpy(parents->data(), st.ptr, parents->size() * sizeof(GroupMember));
  rocl_bfret(st.ptr);
  return MPI_SUCCESS;
}

// Sends a list from local rank 0 to the others of local.
int share_list(MPI_Comm local, std::vector<GroupMember> *list) {
  int n = int(list->size());
  if (int rc = MPI_Bcast(&n, 1, MPI_INT, 0, local)) return rc;
  list->resize(std::size_t(n));
  return MPI_Bcast(list->data(), int(list->size() * sizeof(GroupMember)), MPI_BYTE, 0, local);
}

// One command of a spawn: MPI_Comm_spawn has one, MPI_Comm_spawn_multiple
// several (significant at the root only).
struct App {
  const char *command;
  char **argv;
  int maxprocs;
  MPI_Info info;
};

// The root: checks the commands and starts their processes, child i of
// the spawn with ROCL_RANK=i of ROCL_SIZE=all of them (the commands in
// order) and ROCL_MPI_APPNUM=its command's index. codes: one per child.
int start_children(MPI_Comm comm, const std::vector<App> &apps, const std::string &id,
                   std::vector<int> *codes, const char *who) {
  int total = 0;
  for (const App &app : apps) {
    if (app.maxprocs < 0 || app.command == nullptr || *app.command == '\0') {
      return fail(comm, MPI_ERR_ARG, who, "%d processes of '%s'", app.maxprocs,
                  app.command != nullptr ? app.command : "(null)");
    }
    total += app.maxprocs;
  }
  if (total < 1) return fail(comm, MPI_ERR_ARG, who, "no process to start");
  codes->assign(std::size_t(total), MPI_SUCCESS);
  const std::string size_var = "ROCL_SIZE=" + std::to_string(total);
  const std::string id_var = "ROCL_MPI_SPAWN=" + id;
  int rc = MPI_SUCCESS, rank = 0;
  for (std::size_t c = 0; c < apps.size(); ++c) {
    char host[MPI_MAX_INFO_VAL + 1] = {};
    int has_host = 0;
    if (apps[c].info != MPI_INFO_NULL) {
      MPI_Info_get(apps[c].info, "host", MPI_MAX_INFO_VAL, host, &has_host);
    }
    std::vector<const char *> args{apps[c].command};
    for (char **a = apps[c].argv; a != nullptr && *a != nullptr; ++a) args.push_back(*a);
    args.push_back(nullptr);
    const std::string appnum_var = "ROCL_MPI_APPNUM=" + std::to_string(c);
    for (int i = 0; i < apps[c].maxprocs; ++i, ++rank) {
      const std::string rank_var = "ROCL_RANK=" + std::to_string(rank);
      const char *env[] = {rank_var.c_str(), size_var.c_str(), id_var.c_str(), appnum_var.c_str(),
                           nullptr};
      const std::int64_t g = rocl_spawn_env(has_host ? host : "any", args.data(), env, kMeetMs);
      if (g < 0) rc = (*codes)[std::size_t(rank)] = fail_rocl(comm, int(g), who);
    }
  }
  return rc;
}

// Both spawn calls: the root starts the children and meets them, every
// process of comm learns the outcome and makes the intercommunicator.
int spawn(const std::vector<App> &apps, int root, MPI_Comm comm, MPI_Comm *intercomm,
          int array_of_errcodes[], const char *who) {
  if (int rc = check_comm(comm, who)) return rc;
  if (int rc = check_intra(comm, who)) return rc;
  if (root < 0 || root >= comm->size) {
    return fail(comm, MPI_ERR_ROOT, who, "root %d of %d", root, comm->size);
  }
  MPI_Comm local = MPI_COMM_NULL;
  if (int rc = MPI_Comm_dup(comm, &local)) return rc;
  const rocl_gid_t self = register_comm_resource("inter", local->rank);
  if (self == ROCL_NULL_GID) return fail_rocl(comm, ROCL_EINTERNAL, who);
  std::vector<GroupMember> parents, children;
  if (int rc = gather_group(local, self, &parents)) return rc;
  // The root spawns and meets the children; everyone learns how it went
  // and how many children there are (the commands count at the root only).
  int outcome[2] = {MPI_SUCCESS, 0};  // error, children
  std::vector<int> codes;
  if (local->rank == root) {
    char id[96];
    std::snprintf(id, sizeof id, "spawn-%llx-%u",
                  static_cast<unsigned long long>(rocl_context_gid()), g_spawns++);
    outcome[0] = start_children(comm, apps, id, &codes, who);
    outcome[1] = int(codes.size());
    if (outcome[0] == MPI_SUCCESS) outcome[0] = meet_children(id, parents, &children, who);
  }
  if (int rc = MPI_Bcast(outcome, 2, MPI_INT, root, local)) return rc;
  codes.resize(std::size_t(outcome[1]), MPI_SUCCESS);
  if (outcome[1] > 0) {
    if (int rc = MPI_Bcast(codes.data(), outcome[1], MPI_INT, root, local)) return rc;
  }
  if (array_of_errcodes != MPI_ERRCODES_IGNORE) {
    std::copy(codes.begin(), codes.end(), array_of_errcodes);
  }
  if (outcome[0] != MPI_SUCCESS) {
    rocl_delete(self);
    MPI_Comm_free(&local);
    *intercomm = MPI_COMM_NULL;
    return outcome[0];
  }
  // share_list sends from local rank 0: the root's list goes there first.
  if (root != 0) {
    if (local->rank == root) {
      int n = int(children.size());
      send_bytes(local, 0, kSpawnTag, kCollective, &n, sizeof n);
      send_bytes(local, 0, kSpawnTag, kCollective, children.data(),
                 children.size() * sizeof(GroupMember));
    } else if (local->rank == 0) {
      int n = 0;
      recv_bytes(local, root, kSpawnTag, kCollective, &n, sizeof n);
      children.resize(std::size_t(n));
      recv_bytes(local, root, kSpawnTag, kCollective, children.data(),
                 children.size() * sizeof(GroupMember));
    }
  }
  if (int rc = share_list(local, &children)) return rc;
  *intercomm = make_intercomm(local, self, children);
  return MPI_SUCCESS;
}

}  // namespace

namespace rmpi {

std::string spawn_id() {
  const char *id = std::getenv("ROCL_MPI_SPAWN");
  return id != nullptr ? id : "";
}

int appnum() {
  const char *n = std::getenv("ROCL_MPI_APPNUM");
  return n != nullptr ? std::atoi(n) : 0;
}

int join_parents() {
  const std::string id = spawn_id();
  if (id.empty()) return MPI_SUCCESS;
  MPI_Comm local = MPI_COMM_NULL;
  if (int rc = MPI_Comm_dup(MPI_COMM_WORLD, &local)) return rc;
  const rocl_gid_t self = register_comm_resource("inter", local->rank);
  if (self == ROCL_NULL_GID) return MPI_ERR_SPAWN;
  std::vector<GroupMember> children, parents;
  if (int rc = gather_group(local, self, &children)) return rc;
  if (local->rank == 0) {
    if (int rc = meet_parents(id, self, children, &parents)) return rc;
  }
  if (int rc = share_list(local, &parents)) return rc;
  g_parent = make_intercomm(local, self, parents);
  return MPI_SUCCESS;
}

}  // namespace rmpi

extern "C" {

int MPI_Comm_get_parent(MPI_Comm *parent) {
  if (int rc = check_comm(MPI_COMM_WORLD, "MPI_Comm_get_parent")) return rc;
  *parent = g_parent;
  return MPI_SUCCESS;
}

int MPI_Comm_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root,
                   MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[]) {
  return spawn({App{command, argv, maxprocs, info}}, root, comm, intercomm, array_of_errcodes,
               "MPI_Comm_spawn");
}

int MPI_Comm_spawn_multiple(int count, char *array_of_commands[], char **array_of_argv[],
                            const int array_of_maxprocs[], const MPI_Info array_of_info[], int root,
                            MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[]) {
  const char *who = "MPI_Comm_spawn_multiple";
  std::vector<App> apps;
  if (int rc = check_comm(comm, who)) return rc;
  if (comm->rank == root) {
    if (count < 1) return fail(comm, MPI_ERR_ARG, who, "%d commands", count);
    for (int c = 0; c < count; ++c) {
      apps.push_back(App{array_of_commands[c],
                         array_of_argv != MPI_ARGVS_NULL ? array_of_argv[c] : MPI_ARGV_NULL,
                         array_of_maxprocs[c], array_of_info[c]});
    }
  }
  return spawn(apps, root, comm, intercomm, array_of_errcodes, who);
}

}  // extern "C"
