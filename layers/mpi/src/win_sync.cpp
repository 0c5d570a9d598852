// win_sync.cpp - synchronisation of one-sided operations (MPI 3.1 section
// 11.5): fences, passive-target locks and flushes, and the generalised
// active target (post, start, complete, wait). Fences and PSCW travel as
// messages on the window's private communicator; locks and flushes are
// the window's Access's.
#include <atomic>

#include "win.hpp"

namespace rmpi {
namespace {

// Tags of the PSCW messages on the window's private communicator.
constexpr int kPostTag = 1;
constexpr int kCompleteTag = 2;

// The window ranks of a group's members.
int ranks_of(MPI_Win win, MPI_Group group, std::vector<int> *out, const char *who) {
  int n = 0;
  if (int rc = MPI_Group_size(group, &n)) return rc;
  MPI_Group all;
  MPI_Comm_group(win->comm, &all);
  std::vector<int> in(std::size_t(n), 0);
  for (int k = 0; k < n; ++k) in[std::size_t(k)] = k;
  out->assign(std::size_t(n), MPI_UNDEFINED);
  const int rc = MPI_Group_translate_ranks(group, n, in.data(), all, out->data());
  MPI_Group_free(&all);
  if (rc != MPI_SUCCESS) return rc;
  for (int k = 0; k < n; ++k) {
    if ((*out)[std::size_t(k)] == MPI_UNDEFINED) {
      return fail(win->comm, MPI_ERR_GROUP, who, "member %d of the group is not in the window", k);
    }
  }
  return MPI_SUCCESS;
}

int check_lock_target(MPI_Win win, int rank, const char *who) {
  if (rank < 0 || rank >= win->comm->size) {
    return fail(win->comm, MPI_ERR_RANK, who, "rank %d is not in the window's group of %d", rank,
                win->comm->size);
  }
  return MPI_SUCCESS;
}

int passive_epoch(MPI_Win win, int rank, const char *who) {
  if (win->lock_all != 0 || (rank >= 0 && win->locked[std::size_t(rank)] != kLockNone)) {
    return MPI_SUCCESS;
  }
  if (rank < 0) {
    for (int l : win->locked) {
      if (l != kLockNone) return MPI_SUCCESS;
    }
  }
  return fail(win->comm, MPI_ERR_RMA_SYNC, who, "no passive-target epoch is open%s",
              rank >= 0 ? " to that rank" : "");
}

}  // namespace
}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Win_fence(int assert, MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_fence")) return rc;
  if (win->lock_all != 0 || !win->started.empty() || !win->posted.empty()) {
    return fail(win->comm, MPI_ERR_RMA_SYNC, "MPI_Win_fence",
                "a lock_all or post/start epoch is still open");
  }
  int rc = MPI_SUCCESS;
  if ((assert &MPI_MODE_NOPRECEDE) == 0) rc = win->access->flush_all();
  // Before the barrier: this rank's own stores are visible to whoever
  // applies the next epoch's operations to its window; after it: what the
  // last epoch's did is visible to this rank.
  if (int l = win->access->sync_local(); rc == MPI_SUCCESS) rc = l;
  if (int b = MPI_Barrier(win->comm); rc == MPI_SUCCESS) rc = b;
  if (int l = win->access->sync_local(); rc == MPI_SUCCESS) rc = l;
  win->fence_open = (assert &MPI_MODE_NOSUCCEED) == 0;
  return rc;
}

int MPI_Win_lock(int lock_type, int rank, int, MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_lock")) return rc;
  if (int rc = check_lock_target(win, rank, "MPI_Win_lock")) return rc;
  if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED) {
    return fail(win->comm, MPI_ERR_LOCKTYPE, "MPI_Win_lock",
                "%d is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED", lock_type);
  }
  if (win->locked[std::size_t(rank)] != kLockNone || win->lock_all != 0) {
    return fail(win->comm, MPI_ERR_RMA_SYNC, "MPI_Win_lock", "rank %d is locked already", rank);
  }
  const bool exclusive = lock_type == MPI_LOCK_EXCLUSIVE;
  if (int rc = win->access->lock(rank, exclusive)) return rc;
  win->locked[std::size_t(rank)] = exclusive ? kLockExclusive : kLockShared;
  return MPI_SUCCESS;
}

int MPI_Win_unlock(int rank, MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_unlock")) return rc;
  if (int rc = check_lock_target(win, rank, "MPI_Win_unlock")) return rc;
  if (win->locked[std::size_t(rank)] == kLockNone) {
    return fail(win->comm, MPI_ERR_RMA_SYNC, "MPI_Win_unlock", "rank %d is not locked", rank);
  }
  win->locked[std::size_t(rank)] = kLockNone;
  return win->access->unlock(rank);  // completes the epoch's operations first
}

int MPI_Win_lock_all(int, MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_lock_all")) return rc;
  if (win->lock_all != 0) {
    return fail(win->comm, MPI_ERR_RMA_SYNC, "MPI_Win_lock_all", "the window is locked already");
  }
  for (int r = 0; r < win->comm->size; ++r) {
    if (win->locked[std::size_t(r)] != kLockNone) {
      return fail(win->comm, MPI_ERR_RMA_SYNC, "MPI_Win_lock_all", "rank %d is locked already", r);
    }
  }
  for (int r = 0; r < win->comm->size; ++r) {
    if (int rc = win->access->lock(r, false)) return rc;
  }
  win->lock_all = 1;
  return MPI_SUCCESS;
}

int MPI_Win_unlock_all(MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_unlock_all")) return rc;
  if (win->lock_all == 0) {
    return fail(win->comm, MPI_ERR_RMA_SYNC, "MPI_Win_unlock_all", "the window is not locked");
  }
  win->lock_all = 0;
  int rc = MPI_SUCCESS;
  for (int r = 0; r < win->comm->size; ++r) {
    if (int u = win->access->unlock(r); rc == MPI_SUCCESS) rc = u;
  }
  return rc;
}

int MPI_Win_flush(int rank, MPI_Win win) {
  // A direct window in a passive epoch: the origin's copies are done, a
  // fence orders them (DirectAccess::flush), without the general checks.
  if (win != MPI_WIN_NULL && win->magic == rocl_mpi_win::kMagic && win->segment != nullptr &&
      rank >= 0 && rank < win->comm->size &&
      (win->lock_all != 0 || win->locked[std::size_t(rank)] != kLockNone)) {
    std::atomic_thread_fence(std::memory_order_acq_rel);
    return MPI_SUCCESS;
  }
  if (int rc = check_win(win, "MPI_Win_flush")) return rc;
  if (int rc = check_lock_target(win, rank, "MPI_Win_flush")) return rc;
  if (int rc = passive_epoch(win, rank, "MPI_Win_flush")) return rc;
  return win->access->flush(rank);
}

int MPI_Win_flush_all(MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_flush_all")) return rc;
  if (int rc = passive_epoch(win, -1, "MPI_Win_flush_all")) return rc;
  return win->access->flush_all();
}

// Local completion is no weaker than remote here: a flush serves both.
int MPI_Win_flush_local(int rank, MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_flush_local")) return rc;
  if (int rc = check_lock_target(win, rank, "MPI_Win_flush_local")) return rc;
  if (int rc = passive_epoch(win, rank, "MPI_Win_flush_local")) return rc;
  return win->access->flush(rank);
}

int MPI_Win_flush_local_all(MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_flush_local_all")) return rc;
  if (int rc = passive_epoch(win, -1, "MPI_Win_flush_local_all")) return rc;
  return win->access->flush_all();
}

int MPI_Win_sync(MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_sync")) return rc;
  return win->access->sync_local();
}

int MPI_Win_post(MPI_Group group, int, MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_post")) return rc;
  if (!win->posted.empty()) {
    return fail(win->comm, MPI_ERR_RMA_SYNC, "MPI_Win_post", "an exposure epoch is still open");
  }
  std::vector<int> origins;
  if (int rc = ranks_of(win, group, &origins, "MPI_Win_post")) return rc;
  if (int rc = win->access->sync_local()) return rc;  // this rank's stores first
  for (int o : origins) {
    if (int rc = send_bytes(win->comm, o, kPostTag, kPointToPoint, nullptr, 0)) return rc;
  }
  win->posted = std::move(origins);
  win->completed = 0;
  return MPI_SUCCESS;
}

int MPI_Win_start(MPI_Group group, int, MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_start")) return rc;
  if (!win->started.empty()) {
    return fail(win->comm, MPI_ERR_RMA_SYNC, "MPI_Win_start", "an access epoch is still open");
  }
  std::vector<int> targets;
  if (int rc = ranks_of(win, group, &targets, "MPI_Win_start")) return rc;
  for (int t : targets) {
    if (int rc = recv_bytes(win->comm, t, kPostTag, kPointToPoint, nullptr, 0)) return rc;
  }
  win->started = std::move(targets);
  return MPI_SUCCESS;
}

int MPI_Win_complete(MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_complete")) return rc;
  if (win->started.empty()) {
    return fail(win->comm, MPI_ERR_RMA_SYNC, "MPI_Win_complete", "no MPI_Win_start epoch is open");
  }
  int rc = MPI_SUCCESS;
  for (int t : win->started) {
    if (int f = win->access->flush(t); rc == MPI_SUCCESS) rc = f;
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int t : win->started) {
    if (int s = send_bytes(win->comm, t, kCompleteTag, kPointToPoint, nullptr, 0);
        rc == MPI_SUCCESS)
      rc = s;
  }
  win->started.clear();
  return rc;
}

int MPI_Win_wait(MPI_Win win) {
  if (int rc = check_win(win, "MPI_Win_wait")) return rc;
  if (win->posted.empty()) {
    return fail(win->comm, MPI_ERR_RMA_SYNC, "MPI_Win_wait", "no MPI_Win_post epoch is open");
  }
  for (std::size_t k = win->completed; k < win->posted.size(); ++k) {
    if (int rc = recv_bytes(win->comm, win->posted[k], kCompleteTag, kPointToPoint, nullptr, 0))
      return rc;
  }
  win->posted.clear();
  win->completed = 0;
  return win->access->sync_local();
}

int MPI_Win_test(MPI_Win win, int *flag) {
  if (int rc = check_win(win, "MPI_Win_test")) return rc;
  if (win->posted.empty()) {
    return fail(win->comm, MPI_ERR_RMA_SYNC, "MPI_Win_test", "no MPI_Win_post epoch is open");
  }
  // The completes come in any order: take those there, in the order posted.
  while (win->completed < win->posted.size()) {
    const int o = win->posted[win->completed];
    rocl_status_t st;
    if (rocl_probe(win->comm->self, win->comm->gids[std::size_t(o)], kCompleteTag, kPointToPoint,
                   &st, 0) != ROCL_OK) {
      break;
    }
    if (int rc = recv_bytes(win->comm, o, kCompleteTag, kPointToPoint, nullptr, 0)) return rc;
    ++win->completed;
  }
  *flag = win->completed == win->posted.size() ? 1 : 0;
  if (*flag != 0) {
    win->posted.clear();
    win->completed = 0;
    return win->access->sync_local();
  }
  return MPI_SUCCESS;
}

}  // extern "C"
