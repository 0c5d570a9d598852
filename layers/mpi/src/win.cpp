// win.cpp - windows: creation in the four flavours, MPI_Win_free, and what
// a window tells about itself (group, attributes, name, shared memory,
// error handler). Operations are in rma.cpp, synchronisation in
// win_sync.cpp.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "win.hpp"

namespace rmpi {

int check_win(MPI_Win win, const char *who) {
  if (!initialized()) return check_comm(MPI_COMM_WORLD, who);  // says so and exits
  if (win == MPI_WIN_NULL) return fail(nullptr, MPI_ERR_WIN, who, "the window is MPI_WIN_NULL");
  if (win->magic != rocl_mpi_win::kMagic) {
    return fail(nullptr, MPI_ERR_WIN, who, "%p is not a window (freed?)", static_cast<void *>(win));
  }
  return MPI_SUCCESS;
}

namespace {

// Whether every rank of comm is on this rank's host (shares its memory).
int one_host(MPI_Comm comm, bool *yes) {
  MPI_Comm node;
  if (int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node)) return rc;
  int n = 0, all = 0;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  if (int rc = MPI_Allreduce(&n, &all, 1, MPI_INT, MPI_MIN, comm)) return rc;
  *yes = all == comm->size;
  return MPI_SUCCESS;
}

bool info_true(MPI_Info info, const char *key) {
  if (info == MPI_INFO_NULL) return false;
  char value[16];
  int flag = 0;
  MPI_Info_get(info, key, int(sizeof value) - 1, value, &flag);
  return flag != 0 && std::strcmp(value, "true") == 0;
}

std::atomic<int> g_segments{0};

// The window's shared segment: made by rank 0, named to the others, mapped
// by all, and unlinked once all have it (nothing is left behind in
// /dev/shm if a process dies later).
int map_segment(MPI_Win w, std::size_t bytes, char **at, const char *who) {
  char name[64] = {};
  int fd = -1;
  if (w->comm->rank == 0) {
    std::snprintf(name, sizeof name, "/rocl-mpi-win-%d-%d", int(getpid()), g_segments++);
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, off_t(bytes)) != 0) {
      const int e = errno;
      if (fd >= 0) shm_unlink(name), close(fd);
      name[0] = '\0';
      errno = e;
    }
  }
  const int made = errno;
  if (int rc = MPI_Bcast(name, sizeof name, MPI_CHAR, 0, w->comm)) return rc;
  if (name[0] == '\0') {
    return fail(w->comm, MPI_ERR_NO_MEM, who, "no shared memory segment of %zu bytes: %s", bytes,
                w->comm->rank == 0 ? std::strerror(made) : "rank 0 could not make it");
  }
  if (fd < 0) fd = shm_open(name, O_RDWR, 0);
  void *p = fd >= 0 ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  const int e = errno;
  if (fd >= 0) close(fd);
  int ok = p != MAP_FAILED ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, w->comm);
  if (w->comm->rank == 0) shm_unlink(name);
  if (all == 0) {
    if (p != MAP_FAILED) munmap(p, bytes);
    return fail(w->comm, MPI_ERR_NO_MEM, who, "mapping the window's shared memory failed%s%s",
                ok != 0 ? " on another rank" : ": ", ok != 0 ? "" : std::strerror(e));
  }
  *at = static_cast<char *>(p);
  return MPI_SUCCESS;
}

rocl_mpi_win *new_win(MPI_Comm comm, int flavor, MPI_Aint size, int disp_unit, int *rc,
                      const char *who) {
  *rc = check_comm(comm, who);
  if (*rc == MPI_SUCCESS) *rc = check_intra(comm, who);
  if (*rc != MPI_SUCCESS) return nullptr;
  if (size < 0) {
    *rc = fail(comm, MPI_ERR_SIZE, who, "the size %ld is negative", long(size));
    return nullptr;
  }
  if (disp_unit <= 0) {
    *rc = fail(comm, MPI_ERR_DISP, who, "the displacement unit %d is not positive", disp_unit);
    return nullptr;
  }
  auto *w = new rocl_mpi_win;
  if ((*rc = MPI_Comm_dup(comm, &w->comm)) != MPI_SUCCESS) {
    delete w;
    return nullptr;
  }
  w->comm->errhandler = MPI_ERRORS_ARE_FATAL;  // a window's own default
  w->flavor = flavor;
  w->size = size;
  w->disp_unit = disp_unit;
  w->locked.assign(std::size_t(comm->size), kLockNone);
  struct Extent {
    MPI_Aint size;
    std::int64_t disp_unit;
  } mine{size, disp_unit};
  std::vector<Extent> all(static_cast<std::size_t>(comm->size));
  if ((*rc = allgather_bytes(w->comm, &mine, sizeof mine, all.data())) != MPI_SUCCESS) {
    MPI_Comm_free(&w->comm);
    delete w;
    return nullptr;
  }
  for (const Extent &e : all) {
    w->sizes.push_back(e.size);
    w->disp_units.push_back(int(e.disp_unit));
  }
  return w;
}

int finish_messages(rocl_mpi_win *w, MPI_Comm comm, MPI_Win *out) {
  int rc = MPI_SUCCESS;
  w->access = message_access(w, &rc);
  if (rc != MPI_SUCCESS) {
    MPI_Comm_free(&w->comm);
    delete w;
    return rc;
  }
  (void)comm;
  *out = w;
  return MPI_SUCCESS;
}

// One segment: the lock words, then each rank's memory (contiguous across
// ranks for MPI_Win_allocate_shared unless asked otherwise).
int allocate_direct(rocl_mpi_win *w, bool pad, MPI_Win *out, const char *who) {
  const int n = w->comm->size;
  const std::size_t head = direct_header_bytes(n);
  std::vector<std::size_t> at(static_cast<std::size_t>(n), 0);
  std::size_t total = head;
  for (int r = 0; r < n; ++r) {
    at[std::size_t(r)] = total;
    total += std::size_t(w->sizes[std::size_t(r)]);
    if (pad) total = (total + 63) & ~std::size_t(63);
  }
  char *seg = nullptr;
  if (int rc = map_segment(w, total, &seg, who)) {
    MPI_Comm_free(&w->comm);
    delete w;
    return rc;
  }
  w->segment = seg;
  w->segment_bytes = total;
  for (int r = 0; r < n; ++r) w->shared.push_back(seg + at[std::size_t(r)]);
  w->base = w->size > 0 ? w->shared[std::size_t(w->comm->rank)] : nullptr;
  w->access = direct_access(w, seg);
  *out = w;
  return MPI_Barrier(w->comm);  // the lock words are zero before anyone uses them
}

}  // namespace
}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info, MPI_Comm comm,
                   MPI_Win *win) {
  int rc = MPI_SUCCESS;
  rocl_mpi_win *w = new_win(comm, MPI_WIN_FLAVOR_CREATE, size, disp_unit, &rc, "MPI_Win_create");
  if (w == nullptr) return rc;
  w->base = base;
  return finish_messages(w, comm, win);
}

int MPI_Win_create_dynamic(MPI_Info, MPI_Comm comm, MPI_Win *win) {
  int rc = MPI_SUCCESS;
  rocl_mpi_win *w = new_win(comm, MPI_WIN_FLAVOR_DYNAMIC, 0, 1, &rc, "MPI_Win_create_dynamic");
  if (w == nullptr) return rc;
  w->dynamic = true;
  return finish_messages(w, comm, win);
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info, MPI_Comm comm, void *baseptr,
                     MPI_Win *win) {
  int rc = MPI_SUCCESS;
  rocl_mpi_win *w =
      new_win(comm, MPI_WIN_FLAVOR_ALLOCATE, size, disp_unit, &rc, "MPI_Win_allocate");
  if (w == nullptr) return rc;
  bool shared = false;
  if ((rc = one_host(w->comm, &shared)) != MPI_SUCCESS) return rc;
  if (shared) {
    rc = allocate_direct(w, true, win, "MPI_Win_allocate");
  } else {
    w->base = size > 0 ? std::calloc(1, std::size_t(size)) : nullptr;
    w->owns_base = true;
    if (size > 0 && w->base == nullptr) {
      return fail(comm, MPI_ERR_NO_MEM, "MPI_Win_allocate", "no memory for %ld bytes", long(size));
    }
    rc = finish_messages(w, comm, win);
  }
  if (rc == MPI_SUCCESS) *static_cast<void **>(baseptr) = (*win)->base;
  return rc;
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                            void *baseptr, MPI_Win *win) {
  int rc = MPI_SUCCESS;
  rocl_mpi_win *w =
      new_win(comm, MPI_WIN_FLAVOR_SHARED, size, disp_unit, &rc, "MPI_Win_allocate_shared");
  if (w == nullptr) return rc;
  bool shared = false;
  if ((rc = one_host(w->comm, &shared)) != MPI_SUCCESS) return rc;
  if (!shared) {
    MPI_Comm_free(&w->comm);
    delete w;
    return fail(comm, MPI_ERR_RMA_SHARED, "MPI_Win_allocate_shared",
                "the communicator's processes are on more than one host");
  }
  rc =
      allocate_direct(w, info_true(info, "alloc_shared_noncontig"), win, "MPI_Win_allocate_shared");
  if (rc == MPI_SUCCESS) *static_cast<void **>(baseptr) = (*win)->base;
  return rc;
}

int MPI_Win_free(MPI_Win *win) {
  if (int rc = check_win(*win, "MPI_Win_free")) return rc;
  rocl_mpi_win *w = *win;
  int rc = delete_attributes(w, "MPI_Win_free");
  if (int f = w->access->flush_all(); rc == MPI_SUCCESS) rc = f;
  if (int b = MPI_Barrier(w->comm); rc == MPI_SUCCESS) rc = b;
  w->access.reset();
  if (w->segment != nullptr) munmap(w->segment, w->segment_bytes);
  if (w->owns_base) std::free(w->base);
  MPI_Comm_free(&w->comm);
  w->magic = 0;
  delete w;
  *win = MPI_WIN_NULL;
  return rc;
}

// Memory for windows and lent sends: plain memory serves both (a window's
// own memory is MPI_Win_allocate's).
int MPI_Alloc_mem(MPI_Aint size, MPI_Info, void *baseptr) {
  if (size < 0) return fail(nullptr, MPI_ERR_SIZE, "MPI_Alloc_mem", "the size is negative");
  void *p = std::malloc(size > 0 ? std::size_t(size) : 1);
  if (p == nullptr) {
    return fail(nullptr, MPI_ERR_NO_MEM, "MPI_Alloc_mem", "no memory for %ld bytes", long(size));
  }
  *static_cast<void **>(baseptr) = p;
  return MPI_SUCCESS;
}

int MPI_Free_mem(void *base) {
  std::free(base);
  return MPI_SUCCESS;
}

int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size) {
  if (int rc = check_win(win, "MPI_Win_attach")) return rc;
  if (size < 0) return fail(win->comm, MPI_ERR_SIZE, "MPI_Win_attach", "the size is negative");
  return win->access->attach(base, size);
}

int MPI_Win_detach(MPI_Win win, const void *base) {
  if (int rc = check_win(win, "MPI_Win_detach")) return rc;
  return win->access->detach(base);
}

int MPI_Win_get_group(MPI_Win win, MPI_Group *group) {
  if (int rc = check_win(win, "MPI_Win_get_group")) return rc;
  return MPI_Comm_group(win->comm, group);
}

int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr) {
  if (int rc = check_win(win, "MPI_Win_shared_query")) return rc;
  if (win->flavor != MPI_WIN_FLAVOR_SHARED) {
    return fail(win->comm, MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query",
                "the window was not made by MPI_Win_allocate_shared");
  }
  if (rank == MPI_PROC_NULL) {
    rank = 0;
    while (rank < win->comm->size - 1 && win->sizes[std::size_t(rank)] == 0) ++rank;
  } else if (rank < 0 || rank >= win->comm->size) {
    return fail(win->comm, MPI_ERR_RANK, "MPI_Win_shared_query", "rank %d is not in the window",
                rank);
  }
  *size = win->sizes[std::size_t(rank)];
  *disp_unit = win->disp_units[std::size_t(rank)];
  *static_cast<void **>(baseptr) = win->shared[std::size_t(rank)];
  return MPI_SUCCESS;
}

int MPI_Win_get_attr(MPI_Win win, int keyval, void *attribute_val, int *flag) {
  if (int rc = check_win(win, "MPI_Win_get_attr")) return rc;
  *flag = 1;
  void **out = static_cast<void **>(attribute_val);
  switch (keyval) {
    case MPI_WIN_BASE:
      *out = win->base;
      return MPI_SUCCESS;
    case MPI_WIN_SIZE:
      *out = &win->size;
      return MPI_SUCCESS;
    case MPI_WIN_DISP_UNIT:
      *out = &win->disp_unit;
      return MPI_SUCCESS;
    case MPI_WIN_CREATE_FLAVOR:
      *out = &win->flavor;
      return MPI_SUCCESS;
    case MPI_WIN_MODEL:
      *out = &win->model;
      return MPI_SUCCESS;
    default:
      *flag = 0;
      return get_user_attribute(win, keyval, attribute_val, flag);
  }
}

int MPI_Win_set_name(MPI_Win win, const char *name) {
  if (int rc = check_win(win, "MPI_Win_set_name")) return rc;
  win->name.assign(name, strnlen(name, MPI_MAX_OBJECT_NAME - 1));
  return MPI_SUCCESS;
}

int MPI_Win_get_name(MPI_Win win, char *name, int *resultlen) {
  if (int rc = check_win(win, "MPI_Win_get_name")) return rc;
  std::memcpy(name, win->name.c_str(), win->name.size() + 1);
  *resultlen = int(win->name.size());
  return MPI_SUCCESS;
}

int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler) {
  if (int rc = check_win(win, "MPI_Win_set_errhandler")) return rc;
  return MPI_Comm_set_errhandler(win->comm, errhandler);
}

int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler) {
  if (int rc = check_win(win, "MPI_Win_get_errhandler")) return rc;
  return MPI_Comm_get_errhandler(win->comm, errhandler);
}

int MPI_Win_set_info(MPI_Win win, MPI_Info) {
  return check_win(win, "MPI_Win_set_info");
}

int MPI_Win_get_info(MPI_Win win, MPI_Info *info_used) {
  if (int rc = check_win(win, "MPI_Win_get_info")) return rc;
  return MPI_Info_create(info_used);
}

}  // extern "C"
