// rma.cpp - the one-sided operations (MPI 3.1 sections 11.3, 11.3.4-5):
// checked here against what the origin knows of the target's window
// (its size and displacement unit), then handed to the window's Access as
// packed bytes and a target layout.
#include <cstring>
#include <optional>

#include "reductions.hpp"
#include "win.hpp"

namespace rmpi {
namespace {

// What a checked operation knows about its target.
struct Target {
  MPI_Aint offset = 0;  // bytes from the window's base (dynamic: the address)
  Layout layout;
};

int check_target(MPI_Win win, int rank, MPI_Aint disp, int count, MPI_Datatype t, Target *out,
                 const char *who) {
  MPI_Comm c = win->comm;
  if (rank != MPI_PROC_NULL && (rank < 0 || rank >= c->size)) {
    return fail(c, MPI_ERR_RANK, who, "target rank %d is not in the window's group of %d", rank,
                c->size);
  }
  if (int rc = check_count(c, count, who)) return rc;
  if (int rc = check_type(c, t, who)) return rc;
  if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
  if (!win->epoch_to(rank)) {
    return fail(c, MPI_ERR_RMA_SYNC, who,
                "no access epoch to rank %d is open (MPI_Win_fence, _lock, _lock_all or _start)",
                rank);
  }
  out->layout = Layout::of(t);
  if (win->dynamic) {
    out->offset = disp;
    return MPI_SUCCESS;
  }
  if (disp < 0)
    return fail(c, MPI_ERR_DISP, who, "the target displacement %ld is negative", long(disp));
  out->offset = disp * win->disp_units[std::size_t(rank)];
  if (count == 0) return MPI_SUCCESS;
  const MPI_Aint lo = out->offset + out->layout.low(count);
  const MPI_Aint hi = out->offset + out->layout.high(count);
  if (lo < 0 || hi > win->sizes[std::size_t(rank)]) {
    return fail(c, MPI_ERR_RMA_RANGE, who,
                "bytes %ld to %ld are outside rank %d's window of %ld bytes", long(lo), long(hi),
                rank, long(win->sizes[std::size_t(rank)]));
  }
  return MPI_SUCCESS;
}

int check_match(MPI_Win win, int origin_count, MPI_Datatype origin, int target_count,
                MPI_Datatype target, const char *who) {
  if (std::size_t(origin_count) * origin->packed != std::size_t(target_count) * target->packed) {
    return fail(win->comm, MPI_ERR_TYPE, who,
                "the origin's %d elements (%zu bytes) do not match the target's %d (%zu bytes)",
                origin_count, std::size_t(origin_count) * origin->packed, target_count,
                std::size_t(target_count) * target->packed);
  }
  return MPI_SUCCESS;
}

// The op of an accumulate and the predefined type its elements are made
// of: predefined ops only; MPI_REPLACE and MPI_NO_OP on any type.
int check_accumulate(MPI_Win win, MPI_Op op, MPI_Datatype origin, MPI_Datatype target,
                     MPI_Datatype *basic, const char *who) {
  if (op == MPI_OP_NULL || op->magic != rocl_mpi_op::kMagic) {
    return fail(win->comm, MPI_ERR_OP, who, "not a reduction operation");
  }
  if (op->user != nullptr) {
    return fail(win->comm, MPI_ERR_OP, who,
                "one-sided accumulates take predefined operations only");
  }
  *basic = basic_of(target);
  const bool replace = op->builtin == kReplace || op->builtin == kNoOp;
  if (!replace && (*basic == nullptr || basic_of(origin) != *basic)) {
    return fail(win->comm, MPI_ERR_TYPE, who,
                "an accumulate needs origin and target types made of one predefined type");
  }
  if (!replace && (*basic)->reducer(op->builtin) == nullptr) {
    return fail(win->comm, MPI_ERR_OP, who, "%s is not defined on the target's type",
                op_name(op->builtin));
  }
  return MPI_SUCCESS;
}

// A result's bytes: the origin's memory itself when its type is dense,
// else a staging buffer unpacked when the bytes arrive.
Access::Result result_into(void *buf, int count, MPI_Datatype t) {
  if (t->dense) return {static_cast<char *>(buf) + t->first(), nullptr, nullptr};
  auto staging = std::make_shared<std::vector<char>>(std::size_t(count) * t->packed);
  retain_type(t);
  char *into = staging->data();
  return {into, staging, [staging, buf, count, t] {
            unpack(staging->data(), staging->size(), buf, count, t);
            release_type(t);
          }};
}

int get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                   void *result_addr, int result_count, MPI_Datatype result_datatype,
                   int target_rank, MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, const char *who) {
  if (int rc = check_win(win, who)) return rc;
  Target t;
  if (int rc = check_target(win, target_rank, target_disp, target_count, target_datatype, &t, who))
    return rc;
  if (target_rank == MPI_PROC_NULL) return MPI_SUCCESS;
  const bool no_op = op == MPI_NO_OP;
  if (!no_op) {
    if (int rc = check_type(win->comm, origin_datatype, who)) return rc;
    if (int rc =
            check_match(win, origin_count, origin_datatype, target_count, target_datatype, who))
      return rc;
  }
  if (result_addr != nullptr) {
    if (int rc = check_type(win->comm, result_datatype, who)) return rc;
    if (int rc =
            check_match(win, result_count, result_datatype, target_count, target_datatype, who))
      return rc;
  }
  MPI_Datatype basic = nullptr;
  if (int rc = check_accumulate(win, op, no_op ? target_datatype : origin_datatype, target_datatype,
                                &basic, who))
    return rc;
  std::optional<Contiguous> src;
  if (!no_op) src.emplace(origin_addr, origin_count, origin_datatype, true);
  Access::Result r{};
  if (result_addr != nullptr) r = result_into(result_addr, result_count, result_datatype);
  return win->access->accumulate(target_rank, t.offset, target_count, t.layout, op->builtin, basic,
                                 no_op ? nullptr : src->data(), std::move(r));
}

// The request of an operation started by an R form: complete (after a
// flush of its target, so that a get's bytes are in).
int complete_at_once(MPI_Win win, int target, int rc, MPI_Request *request) {
  *request = MPI_REQUEST_NULL;
  if (rc != MPI_SUCCESS) return rc;
  if (target != MPI_PROC_NULL && (rc = win->access->flush(target)) != MPI_SUCCESS) return rc;
  MPI_Status s;
  set_empty_status(&s);
  *request = completed_request(win->comm, s, MPI_SUCCESS);
  return MPI_SUCCESS;
}

// A put or get of one dense committed type on both sides of a direct
// window, in range: a copy, without the general path's layouts. Returns
// false for everything else (the general path then checks and reports).
bool direct_copy(MPI_Win win, int target, MPI_Aint disp, int count, MPI_Datatype t, char *local,
                 bool put) {
  if (win == MPI_WIN_NULL || win->magic != rocl_mpi_win::kMagic || win->segment == nullptr ||
      t == MPI_DATATYPE_NULL || t->magic != rocl_mpi_datatype::kMagic || !t->committed ||
      !t->dense || count < 0 || target < 0 || target >= win->comm->size || disp < 0 ||
      !win->epoch_to(target)) {
    return false;
  }
  const std::size_t bytes = t->packed * std::size_t(count);
  const MPI_Aint offset = disp * win->disp_units[std::size_t(target)] + t->first();
  if (offset < 0 || offset + MPI_Aint(bytes) > win->sizes[std::size_t(target)]) return false;
  char *remote = win->shared[std::size_t(target)] + offset;
  local += t->first();
  std::memcpy(put ? remote : local, put ? local : remote, bytes);
  return true;
}

}  // namespace
}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
            MPI_Win win) {
  if (origin_datatype == target_datatype && origin_count == target_count &&
      direct_copy(win, target_rank, target_disp, target_count, target_datatype,
                  static_cast<char *>(const_cast<void *>(origin_addr)), true)) {
    return MPI_SUCCESS;
  }
  if (int rc = check_win(win, "MPI_Put")) return rc;
  Target t;
  if (int rc =
          check_target(win, target_rank, target_disp, target_count, target_datatype, &t, "MPI_Put"))
    return rc;
  if (target_rank == MPI_PROC_NULL) return MPI_SUCCESS;
  if (int rc = check_type(win->comm, origin_datatype, "MPI_Put")) return rc;
  if (int rc =
          check_match(win, origin_count, origin_datatype, target_count, target_datatype, "MPI_Put"))
    return rc;
  Contiguous src(origin_addr, origin_count, origin_datatype, true);
  return win->access->put(target_rank, t.offset, target_count, t.layout, src.data());
}

int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win) {
  if (origin_datatype == target_datatype && origin_count == target_count &&
      direct_copy(win, target_rank, target_disp, target_count, target_datatype,
                  static_cast<char *>(origin_addr), false)) {
    return MPI_SUCCESS;
  }
  if (int rc = check_win(win, "MPI_Get")) return rc;
  Target t;
  if (int rc =
          check_target(win, target_rank, target_disp, target_count, target_datatype, &t, "MPI_Get"))
    return rc;
  if (target_rank == MPI_PROC_NULL) return MPI_SUCCESS;
  if (int rc = check_type(win->comm, origin_datatype, "MPI_Get")) return rc;
  if (int rc =
          check_match(win, origin_count, origin_datatype, target_count, target_datatype, "MPI_Get"))
    return rc;
  return win->access->get(target_rank, t.offset, target_count, t.layout,
                          result_into(origin_addr, origin_count, origin_datatype));
}

int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) {
  return get_accumulate(origin_addr, origin_count, origin_datatype, nullptr, 0, MPI_DATATYPE_NULL,
                        target_rank, target_disp, target_count, target_datatype, op, win,
                        "MPI_Accumulate");
}

int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                       void *result_addr, int result_count, MPI_Datatype result_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) {
  if (result_addr == nullptr && result_count > 0) {
    return fail(nullptr, MPI_ERR_BUFFER, "MPI_Get_accumulate", "the result buffer is NULL");
  }
  // A zero-count result still names a buffer: keep it apart from "none".
  static char none;
  return get_accumulate(origin_addr, origin_count, origin_datatype,
                        result_addr != nullptr ? result_addr : &none, result_count, result_datatype,
                        target_rank, target_disp, target_count, target_datatype, op, win,
                        "MPI_Get_accumulate");
}

int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                     int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win) {
  // One predefined element of a direct window in an epoch: applied here.
  if (win != MPI_WIN_NULL && win->magic == rocl_mpi_win::kMagic && win->segment != nullptr &&
      datatype != MPI_DATATYPE_NULL && datatype->magic == rocl_mpi_datatype::kMagic &&
      datatype->predefined && op != MPI_OP_NULL && op->magic == rocl_mpi_op::kMagic &&
      op->user == nullptr && op->builtin != kNoOp && target_rank >= 0 &&
      target_rank < win->comm->size && target_disp >= 0 && win->epoch_to(target_rank)) {
    const MPI_Aint offset = target_disp * win->disp_units[std::size_t(target_rank)];
    if (offset + MPI_Aint(datatype->packed) <= win->sizes[std::size_t(target_rank)] &&
        direct_fetch_and_op(win, target_rank, offset, datatype, op->builtin, origin_addr,
                            result_addr)) {
      return MPI_SUCCESS;
    }
  }
  return get_accumulate(origin_addr, 1, datatype, result_addr, 1, datatype, target_rank,
                        target_disp, 1, datatype, op, win, "MPI_Fetch_and_op");
}

int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                         MPI_Datatype datatype, int target_rank, MPI_Aint target_disp,
                         MPI_Win win) {
  const char *who = "MPI_Compare_and_swap";
  if (int rc = check_win(win, who)) return rc;
  Target t;
  if (int rc = check_target(win, target_rank, target_disp, 1, datatype, &t, who)) return rc;
  if (target_rank == MPI_PROC_NULL) return MPI_SUCCESS;
  if (!datatype->predefined || datatype->reducer == nullptr) {
    return fail(win->comm, MPI_ERR_TYPE, who, "compare-and-swap takes a predefined integer type");
  }
  return win->access->compare_and_swap(target_rank, t.offset, datatype,
                                       static_cast<const char *>(origin_addr),
                                       static_cast<const char *>(compare_addr),
                                       {static_cast<char *>(result_addr), nullptr, nullptr});
}

// The request-based forms: the operation is complete at the origin when
// they return (puts and accumulates copied their data; gets flushed), so
// their requests are complete ones.
int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
             int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
             MPI_Win win, MPI_Request *request) {
  const int rc = MPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win);
  return complete_at_once(win, target_rank, rc, request);
}

int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
             MPI_Request *request) {
  int rc = MPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                   target_count, target_datatype, win);
  return complete_at_once(win, target_rank, rc, request);
}

int MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request) {
  const int rc = MPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank,
                                target_disp, target_count, target_datatype, op, win);
  return complete_at_once(win, target_rank, rc, request);
}

int MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        void *result_addr, int result_count, MPI_Datatype result_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                        MPI_Request *request) {
  int rc = MPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
                              result_datatype, target_rank, target_disp, target_count,
                              target_datatype, op, win);
  return complete_at_once(win, target_rank, rc, request);
}

}  // extern "C"
