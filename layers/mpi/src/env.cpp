// env.cpp - MPI's environment: init and finalize, threads, time, errors
// and error handlers, attributes, and the argument checks every call makes.
#include <pthread.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "mpi_impl.hpp"
#include "win.hpp"

struct rocl_mpi_errhandler rocl_mpi_errors_are_fatal {
  true
}, rocl_mpi_errors_return{false};

namespace rmpi {
int setup_world();      // comm.cpp
void teardown_world();  // comm.cpp
}  // namespace rmpi

namespace {

std::atomic<int> g_state{0};  // 0 before Init, 1 between Init and Finalize, 2 after
int g_thread_level = MPI_THREAD_SINGLE;
pthread_t g_main_thread;

const char *class_text(int cls) {
  static const char *const kText[] = {"no error",
                                      "invalid buffer",
                                      "invalid count",
                                      "invalid datatype",
                                      "invalid tag",
                                      "invalid communicator",
                                      "invalid rank",
                                      "invalid request",
                                      "invalid root",
                                      "invalid group",
                                      "invalid operation",
                                      "invalid topology",
                                      "invalid dimensions",
                                      "invalid argument",
                                      "unknown error",
                                      "message truncated",
                                      "other error",
                                      "internal error",
                                      "error code in status",
                                      "pending request",
                                      "out of memory",
                                      "unsupported operation",
                                      "invalid keyval",
                                      "invalid window",
                                      "invalid info",
                                      "invalid info key",
                                      "invalid info value",
                                      "info key not found",
                                      "spawn failed",
                                      "invalid base",
                                      "invalid displacement",
                                      "invalid lock type",
                                      "invalid assertion",
                                      "conflicting accesses",
                                      "wrong synchronization of RMA calls",
                                      "target memory out of the window",
                                      "memory cannot be attached",
                                      "memory cannot be shared",
                                      "wrong window flavor",
                                      "invalid size"};
  return cls >= 0 && cls < int(sizeof kText / sizeof *kText) ? kText[cls] : "unknown error class";
}

// The last sentences said, so that MPI_Error_string can give the one behind
// a code: code = class + 256 * (slot + 1).
constexpr int kSlots = 64;
struct Said {
  int code = 0;
  char text[MPI_MAX_ERROR_STRING] = {};
};
Said g_said[kSlots];
int g_next_slot = 0;
std::mutex g_said_lock;

int remember(int cls, const char *text) {
  std::lock_guard<std::mutex> guard(g_said_lock);
  const int slot = g_next_slot++ % kSlots;
  g_said[slot].code = cls + 256 * (slot + 1);
  std::snprintf(g_said[slot].text, sizeof g_said[slot].text, "%s: %s", class_text(cls), text);
  return g_said[slot].code;
}

// No communicator yet, so no error handler: MPI_Init's failures end the process.
[[noreturn]] void init_failed(const char *what) {
  std::fprintf(stderr, "rocl MPI: MPI_Init: %s: %s\n", what, rocl_last_error());
  _exit(MPI_ERR_OTHER);
}

int my_rank() {
  const char *r = std::getenv("ROCL_RANK");
  return r != nullptr ? std::atoi(r) : 0;
}

}  // namespace

// Below MPI_THREAD_MULTIPLE one thread at a time calls MPI (the program
// orders the calls of different threads), so what only MPI calls touch
// needs no locked instruction.
bool rmpi::one_caller_at_a_time() {
  return g_thread_level < MPI_THREAD_MULTIPLE;
}

namespace rmpi {

bool initialized() {
  return g_state.load(std::memory_order_acquire) == 1;
}
bool in_place(const void *p) {
  return p == MPI_IN_PLACE;
}

int fail(MPI_Comm comm, int cls, const char *who, const char *fmt, ...) {
  char what[MPI_MAX_ERROR_STRING - 64];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  char text[MPI_MAX_ERROR_STRING - 32];
  std::snprintf(text, sizeof text, "%s: %s", who, what);
  const int code = remember(cls, text);
  const bool valid = comm != nullptr && comm->magic == rocl_mpi_comm::kMagic;
  const MPI_Errhandler h = valid ? comm->errhandler : MPI_COMM_WORLD->errhandler;
  if (h == nullptr || h->fatal) {
    std::fprintf(stderr, "rocl MPI, rank %d: %s (%s); aborting (MPI_ERRORS_ARE_FATAL)\n", my_rank(),
                 text, class_text(cls));
    std::fflush(stderr);
    _exit(cls != 0 ? cls : 1);
  }
  return code;
}

int fail_rocl(MPI_Comm comm, int rocl_code, const char *who) {
  const int cls = rocl_code == ROCL_EINVAL      ? MPI_ERR_ARG
                  : rocl_code == ROCL_ENOMEM    ? MPI_ERR_NO_MEM
                  : rocl_code == ROCL_ETOOBIG   ? MPI_ERR_COUNT
                  : rocl_code == ROCL_EDELETED  ? MPI_ERR_COMM
                  : rocl_code == ROCL_EINTERNAL ? MPI_ERR_INTERN
                                                : MPI_ERR_OTHER;
  const char *why = rocl_last_error();
  return fail(comm, cls, who, "%s",
              why != nullptr && *why != '\0' ? why : rocl_strerror(rocl_code));
}

int check_comm(MPI_Comm comm, const char *who) {
  if (!initialized()) {
    std::fprintf(stderr, "rocl MPI: %s called %s MPI_Init\n", who,
                 g_state.load() == 0 ? "before" : "after MPI_Finalize, not between it and");
    _exit(MPI_ERR_OTHER);
  }
  if (comm == MPI_COMM_NULL)
    return fail(comm, MPI_ERR_COMM, who, "the communicator is MPI_COMM_NULL");
  if (comm->magic != rocl_mpi_comm::kMagic) {
    return fail(nullptr, MPI_ERR_COMM, who, "%p is not a communicator (freed?)",
                static_cast<void *>(comm));
  }
  return MPI_SUCCESS;
}

int check_type(MPI_Comm comm, MPI_Datatype t, const char *who) {
  if (t == MPI_DATATYPE_NULL)
    return fail(comm, MPI_ERR_TYPE, who, "the datatype is MPI_DATATYPE_NULL");
  if (t->magic != rocl_mpi_datatype::kMagic) {
    return fail(comm, MPI_ERR_TYPE, who, "%p is not a datatype (freed?)", static_cast<void *>(t));
  }
  if (!t->committed)
    return fail(comm, MPI_ERR_TYPE, who, "the datatype is not committed (MPI_Type_commit)");
  return MPI_SUCCESS;
}

int check_any_type(MPI_Datatype t, const char *who) {
  if (!initialized()) return check_comm(MPI_COMM_WORLD, who);  // says so and exits
  if (t == MPI_DATATYPE_NULL || t->magic != rocl_mpi_datatype::kMagic) {
    return fail(nullptr, MPI_ERR_TYPE, who, "%p is not a datatype", static_cast<void *>(t));
  }
  return MPI_SUCCESS;
}

int check_count(MPI_Comm comm, int count, const char *who) {
  return count >= 0 ? MPI_SUCCESS : fail(comm, MPI_ERR_COUNT, who, "count %d is negative", count);
}

int check_rank(MPI_Comm comm, int rank, bool any_ok, const char *who) {
  if (rank == MPI_PROC_NULL || (any_ok && rank == MPI_ANY_SOURCE)) return MPI_SUCCESS;
  if (rank >= 0 && rank < comm->size) return MPI_SUCCESS;
  return fail(comm, MPI_ERR_RANK, who, "rank %d is not in the communicator (size %d)", rank,
              comm->size);
}

int check_tag(MPI_Comm comm, int tag, bool any_ok, const char *who) {
  if ((tag >= 0 && tag <= kTagUb) || (any_ok && tag == MPI_ANY_TAG)) return MPI_SUCCESS;
  return fail(comm, MPI_ERR_TAG, who, "tag %d is outside 0..MPI_TAG_UB (%d)%s", tag, kTagUb,
              any_ok ? " and not MPI_ANY_TAG" : "");
}

}  // namespace rmpi

using namespace rmpi;

extern "C" {

int MPI_Init_thread(int *, char ***, int required, int *provided) {
  if (g_state.load() != 0) init_failed("called twice (or after MPI_Finalize)");
  if (rocl_init() < 0) init_failed("rocl_init failed");
  g_thread_level = required < MPI_THREAD_SINGLE     ? MPI_THREAD_SINGLE
                   : required > MPI_THREAD_MULTIPLE ? MPI_THREAD_MULTIPLE
                                                    : required;
  g_main_thread = pthread_self();
  if (setup_world() != MPI_SUCCESS) init_failed("setting up MPI_COMM_WORLD failed");
  g_state.store(1, std::memory_order_release);
  // A process started by MPI_Comm_spawn joins its parents now.
  if (join_parents() != MPI_SUCCESS) init_failed("joining the parents that spawned this process");
  if (provided != nullptr) *provided = g_thread_level;
  return MPI_SUCCESS;
}

int MPI_Init(int *argc, char ***argv) {
  return MPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, nullptr);
}

int MPI_Initialized(int *flag) {
  *flag = g_state.load() != 0;
  return MPI_SUCCESS;
}

int MPI_Finalized(int *flag) {
  *flag = g_state.load() == 2;
  return MPI_SUCCESS;
}

int MPI_Finalize(void) {
  if (int rc = check_comm(MPI_COMM_WORLD, "MPI_Finalize")) return rc;
  // MPI_COMM_SELF's attributes are deleted first: libraries learn so that
  // MPI is ending while they may still use it (MPI 3.1 section 8.7.1).
  delete_attributes(MPI_COMM_SELF, "MPI_Finalize");
  delete_attributes(MPI_COMM_WORLD, "MPI_Finalize");
  end_all_offloads();  // the threads of the non-blocking collectives
  // Everyone has stopped sending to us before our resources go away.
  MPI_Barrier(MPI_COMM_WORLD);
  end_rma_agent();  // the thread of the one-sided operations
  teardown_world();
  g_state.store(2, std::memory_order_release);
  rocl_exit();
  return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm, int errorcode) {
  std::fprintf(stderr, "rocl MPI, rank %d: MPI_Abort(%d): stopping the job\n", my_rank(),
               errorcode);
  std::fflush(nullptr);
  // roclrun stops every process when one exits with a failure.
  const int status = errorcode & 0xff;
  _exit(status != 0 ? status : 1);
}

double MPI_Wtime(void) {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

double MPI_Wtick(void) {
  timespec t;
  clock_getres(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

int MPI_Query_thread(int *provided) {
  *provided = g_thread_level;
  return MPI_SUCCESS;
}

int MPI_Is_thread_main(int *flag) {
  *flag = pthread_equal(pthread_self(), g_main_thread) != 0;
  return MPI_SUCCESS;
}

int MPI_Get_processor_name(char *name, int *resultlen) {
  if (gethostname(name, MPI_MAX_PROCESSOR_NAME) != 0) std::strcpy(name, "localhost");
  name[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
  *resultlen = int(std::strlen(name));
  return MPI_SUCCESS;
}

int MPI_Get_version(int *version, int *subversion) {
  *version = MPI_VERSION;
  *subversion = MPI_SUBVERSION;
  return MPI_SUCCESS;
}

int MPI_Get_library_version(char *version, int *resultlen) {
  *resultlen = std::snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
                             "rocl MPI %d.%d.%d (MPI %d.%d)", ROCL_VERSION_MAJOR,
                             ROCL_VERSION_MINOR, ROCL_VERSION_PATCH, MPI_VERSION, MPI_SUBVERSION);
  return MPI_SUCCESS;
}

int MPI_Error_class(int errorcode, int *errorclass) {
  if (errorcode < 0 || errorcode > MPI_ERR_LASTCODE) {
    return fail(nullptr, MPI_ERR_ARG, "MPI_Error_class", "%d is not an error code", errorcode);
  }
  *errorclass = errorcode % 256;
  return MPI_SUCCESS;
}

int MPI_Error_string(int errorcode, char *string, int *resultlen) {
  const int slot = errorcode / 256 - 1;
  {
    std::lock_guard<std::mutex> guard(g_said_lock);
    if (slot >= 0 && slot < kSlots && g_said[slot].code == errorcode) {
      *resultlen = std::snprintf(string, MPI_MAX_ERROR_STRING, "%s", g_said[slot].text);
      return MPI_SUCCESS;
    }
  }
  *resultlen = std::snprintf(string, MPI_MAX_ERROR_STRING, "%s", class_text(errorcode % 256));
  return MPI_SUCCESS;
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  if (int rc = check_comm(comm, "MPI_Comm_set_errhandler")) return rc;
  if (errhandler != MPI_ERRORS_ARE_FATAL && errhandler != MPI_ERRORS_RETURN) {
    return fail(comm, MPI_ERR_ARG, "MPI_Comm_set_errhandler", "not an error handler");
  }
  comm->errhandler = errhandler;
  return MPI_SUCCESS;
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler) {
  if (int rc = check_comm(comm, "MPI_Comm_get_errhandler")) return rc;
  *errhandler = comm->errhandler;
  return MPI_SUCCESS;
}

int MPI_Errhandler_free(MPI_Errhandler *errhandler) {
  *errhandler = MPI_ERRHANDLER_NULL;  // the predefined ones live for ever
  return MPI_SUCCESS;
}

int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *attribute_val, int *flag) {
  if (int rc = check_comm(comm, "MPI_Comm_get_attr")) return rc;
  static int tag_ub = kTagUb, host = MPI_PROC_NULL, io = MPI_ANY_SOURCE, global = 0, appnum = 0,
             lastcode = MPI_ERR_LASTCODE;
  static int universe = 0;
  universe = MPI_COMM_WORLD->size;  // no process is spawned yet: the job is the world
  appnum = rmpi::appnum();
  int *value = keyval == MPI_TAG_UB            ? &tag_ub
               : keyval == MPI_HOST            ? &host
               : keyval == MPI_IO              ? &io
               : keyval == MPI_WTIME_IS_GLOBAL ? &global
               : keyval == MPI_UNIVERSE_SIZE   ? &universe
               : keyval == MPI_APPNUM          ? &appnum
               : keyval == MPI_LASTUSEDCODE    ? &lastcode
                                               : nullptr;
  if (is_user_key(keyval)) return get_user_attribute(comm, keyval, attribute_val, flag);
  *flag = value != nullptr;
  if (value != nullptr) *static_cast<int **>(attribute_val) = value;
  return MPI_SUCCESS;
}

int MPI_Pcontrol(const int, ...) {
  return MPI_SUCCESS;
}

}  // extern "C"
