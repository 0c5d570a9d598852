/* Shared helpers of the MPI test programs (plain C11, MPI standard only).
 *
 * Include this header FIRST in every test program (it selects POSIX
 * features before any system header is read).
 *
 *   CHECK(cond, fmt, ...)  on failure prints
 *                          "rank R: FAILED at file:line: <what>" to stderr and
 *                          calls MPI_Abort(MPI_COMM_WORLD, 1).
 *   CHECK_MPI(call)        CHECK(call == MPI_SUCCESS, ...).
 *   test_done(name)        barrier, rank 0 prints "<name>: OK", MPI_Finalize.
 *   test_note(fmt, ...)    rank 0 prints a note (e.g. a skipped part).
 */
#ifndef MPI_CHECK_H
#define MPI_CHECK_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <mpi.h>

/* MPICH's header defines MPI_STATUSES_IGNORE as (MPI_Status *)1 and declares
 * the status arguments as arrays, so GCC >= 11 warns (-Wstringop-overflow)
 * at every Waitall(..., MPI_STATUSES_IGNORE). The warning is about MPICH's
 * header, not our code: silence it for MPICH only. */
#if defined(MPICH) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

/* Known bugs of the reference MPIs (see the guarded checks):
 * MPICH < 4.2 returns source 0 / tag 0 (not MPI_PROC_NULL / MPI_ANY_TAG) in
 * the status of an MPI_Irecv from MPI_PROC_NULL (pmodels/mpich#6805). */
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40200000
#define REF_BUG_IRECV_PROC_NULL_STATUS 1
#endif
/* MPICH 4.0.2 compares unsigned integers as signed in MPI_MIN/MPI_MAX
 * (pmodels/mpich#6083); Open MPI 4.1.4 does so for MPI_UNSIGNED_LONG
 * (open-mpi/ompi#10648). */
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000
#define REF_BUG_UNSIGNED_MINMAX 1
#endif
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION == 1 && \
    OMPI_RELEASE_VERSION <= 4
#define REF_BUG_ULONG_MINMAX 1
#endif
/* MPICH 4.0.2 hangs when threads of a single process take messages it
 * sends itself with matched probes (mprobe.c's threads part at np 1). */
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000
#define REF_BUG_MPROBE_THREADS_SELF 1
#endif
/* Open MPI 4.1 (ob1) writes the whole message past the end of the receive
 * buffer when a message above the eager limit is truncated. */
#if defined(OPEN_MPI)
#define REF_BUG_TRUNCATE_OVERWRITES 1
#endif

/* Open MPI 4.1.4's osc/rdma (its one-sided component for windows of
 * user memory on shared memory, and the only one that allows
 * MPI_THREAD_MULTIPLE) crashes in MPI_Compare_and_swap over vader's
 * emulated atomics (mca_btl_vader_emu_acswap). */
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION == 1
#define REF_BUG_RMA_COMPARE_AND_SWAP 1
/* ... and with a single process it falls back to osc/pt2pt, which refuses
 * every window under MPI_THREAD_MULTIPLE. */
#define REF_BUG_RMA_THREADS_ALONE 1
#endif

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline void check_fail_(const char *file, int line, const char *cond, const char *fmt, ...) {
  int init = 0, fin = 0, rank = -1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  fprintf(stderr, "rank %d: FAILED at %s:%d: %s [%s]\n", rank, file, line, what, cond);
  fflush(stderr);
  if (init && !fin) MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) check_fail_(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)

#define CHECK_MPI(call)                                      \
  do {                                                       \
    int rc_ = (call);                                        \
    CHECK(rc_ == MPI_SUCCESS, "%s returned %d", #call, rc_); \
  } while (0)

static inline int world_rank(void) {
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

static inline int world_size(void) {
  int s;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

/* Rank 0 prints a note line on stdout (e.g. "skipped: needs 3 ranks"). */
static inline void test_note(const char *fmt, ...) {
  if (world_rank() != 0) return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

/* Sleep without busy-waiting (the tests often run oversubscribed). */
static inline void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* True if st is the "empty status" of MPI 3.1 section 3.7.3 (source, tag,
 * count). The MPI_ERROR field is checked separately where it is defined. */
static inline int status_is_empty(const MPI_Status *st) {
  int count = -1;
  MPI_Get_count(st, MPI_BYTE, &count);
  return st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count == 0;
}

static inline void test_done(const char *name) {
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  if (world_rank() == 0) {
    printf("%s: OK\n", name);
    fflush(stdout);
  }
  CHECK_MPI(MPI_Finalize());
}

#endif
