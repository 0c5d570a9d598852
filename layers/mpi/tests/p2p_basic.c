/* p2p_basic: blocking point-to-point.
 * Every basic and pair datatype (values checked), sizes 0 B .. 4 MiB+ (eager
 * and rendezvous), wildcards and status fields, Get_count (incl.
 * MPI_UNDEFINED), non-overtaking order with mixed sizes, send to self,
 * MPI_PROC_NULL, truncation (MPI_ERR_TRUNCATE under MPI_ERRORS_RETURN),
 * Sendrecv, Sendrecv_replace. Works with any number of ranks (1 = self). */
#include "mpi_check.h"

#include <float.h>
#include <limits.h>

static int rank, size, next, prev;

/* ---- every datatype over a ring (Isend to next, Recv from prev) ---- */

#define NELEM 17

/* EXPR computes element i sent by rank src. */
#define TYPE_TEST(CT, MT, EXPR)                                                          \
  do {                                                                                   \
    CT sb[NELEM], rb[NELEM];                                                             \
    int src = rank;                                                                      \
    for (int i = 0; i < NELEM; i++) sb[i] = (CT)(EXPR);                                  \
    memset(rb, 0, sizeof rb);                                                            \
    MPI_Request rq;                                                                      \
    MPI_Status st;                                                                       \
    CHECK_MPI(MPI_Isend(sb, NELEM, MT, next, 10, MPI_COMM_WORLD, &rq));                  \
    CHECK_MPI(MPI_Recv(rb, NELEM, MT, prev, 10, MPI_COMM_WORLD, &st));                   \
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));                                         \
    int cnt = -1;                                                                        \
    CHECK_MPI(MPI_Get_count(&st, MT, &cnt));                                             \
    CHECK(cnt == NELEM, "%s: Get_count %d", #MT, cnt);                                   \
    CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 10, "%s: status source %d tag %d", #MT, \
          st.MPI_SOURCE, st.MPI_TAG);                                                    \
    src = prev;                                                                          \
    for (int i = 0; i < NELEM; i++) {                                                    \
      CT want = (CT)(EXPR);                                                              \
      CHECK(rb[i] == want, "%s: element %d wrong", #MT, i);                              \
    }                                                                                    \
  } while (0)

#define PAIR_TEST(VT, MT, VEXPR)                                                                  \
  do {                                                                                            \
    struct {                                                                                      \
      VT v;                                                                                       \
      int i;                                                                                      \
    } sb[NELEM], rb[NELEM];                                                                       \
    int src = rank;                                                                               \
    for (int i = 0; i < NELEM; i++) {                                                             \
      sb[i].v = (VT)(VEXPR);                                                                      \
      sb[i].i = src * 1000 - i;                                                                   \
    }                                                                                             \
    memset(rb, 0, sizeof rb);                                                                     \
    MPI_Request rq;                                                                               \
    MPI_Status st;                                                                                \
    CHECK_MPI(MPI_Isend(sb, NELEM, MT, next, 11, MPI_COMM_WORLD, &rq));                           \
    CHECK_MPI(MPI_Recv(rb, NELEM, MT, prev, 11, MPI_COMM_WORLD, &st));                            \
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));                                                  \
    int cnt = -1;                                                                                 \
    CHECK_MPI(MPI_Get_count(&st, MT, &cnt));                                                      \
    CHECK(cnt == NELEM, "%s: Get_count %d", #MT, cnt);                                            \
    src = prev;                                                                                   \
    for (int i = 0; i < NELEM; i++) {                                                             \
      CHECK(rb[i].v == (VT)(VEXPR) && rb[i].i == src * 1000 - i, "%s: element %d wrong", #MT, i); \
    }                                                                                             \
  } while (0)

static void test_datatypes(void) {
  TYPE_TEST(char, MPI_CHAR, 'A' + (src + i) % 26);
  TYPE_TEST(signed char, MPI_SIGNED_CHAR, i == 0 ? SCHAR_MIN : i == 1 ? SCHAR_MAX : src - i);
  TYPE_TEST(unsigned char, MPI_UNSIGNED_CHAR, i == 0 ? UCHAR_MAX : src * 13 + i);
  TYPE_TEST(unsigned char, MPI_BYTE, (src * 31 + i * 7) & 0xff);
  TYPE_TEST(short, MPI_SHORT, i == 0 ? SHRT_MIN : i == 1 ? SHRT_MAX : src * 100 - i);
  TYPE_TEST(int, MPI_INT, i == 0 ? INT_MIN : i == 1 ? INT_MAX : src * 100000 - i);
  TYPE_TEST(unsigned, MPI_UNSIGNED, i == 0 ? UINT_MAX : src * 100000u + i);
  TYPE_TEST(long, MPI_LONG, i == 0 ? LONG_MIN : i == 1 ? LONG_MAX : src * 100000L - i);
  TYPE_TEST(unsigned long, MPI_UNSIGNED_LONG, i == 0 ? ULONG_MAX : src * 1000ul + i);
  TYPE_TEST(long long, MPI_LONG_LONG,
            i == 0   ? LLONG_MIN
            : i == 1 ? LLONG_MAX
                     : src * 10000000000LL - i);
  TYPE_TEST(float, MPI_FLOAT, i == 0 ? FLT_MAX : i == 1 ? -FLT_MIN : src * 0.5f - i * 0.25f);
  TYPE_TEST(double, MPI_DOUBLE, i == 0 ? DBL_MAX : i == 1 ? -DBL_MIN : src / 3.0 - i * 1e100);
  TYPE_TEST(long double, MPI_LONG_DOUBLE, i == 0 ? LDBL_MAX : src / 7.0L - i * 1e300L);
  TYPE_TEST(MPI_Aint, MPI_AINT, i == 0 ? (MPI_Aint)-1 : (MPI_Aint)src * 4096 + i);
  PAIR_TEST(float, MPI_FLOAT_INT, src * 1.5f + i);
  PAIR_TEST(double, MPI_DOUBLE_INT, src * 1e10 - i);
  PAIR_TEST(long, MPI_LONG_INT, src * 100000L - i);
  PAIR_TEST(int, MPI_2INT, src * 7 + i);
  PAIR_TEST(short, MPI_SHORT_INT, src * 3 - i);
  PAIR_TEST(long double, MPI_LONG_DOUBLE_INT, src / 3.0L + i);
}

/* ---- sizes 0 .. 4 MiB+: blocking Send/Recv between ranks 0 and 1 ---- */

static unsigned char pattern(size_t i, int from, size_t n) {
  return (unsigned char)((i * 7 + n + (size_t)from * 131) & 0xff);
}

static void check_pattern(const unsigned char *b, size_t n, int from) {
  for (size_t i = 0; i < n; i++)
    CHECK(b[i] == pattern(i, from, n), "byte %zu of %zu from %d wrong", i, n, from);
}

static void test_sizes(void) {
  static const size_t sizes[] = {0,     1,     7,     64,     1000,    4096,         12288,
                                 65535, 65536, 65537, 262144, 1 << 20, (1 << 22) + 3};
  const size_t nsizes = sizeof sizes / sizeof sizes[0];
  /* room for the largest size plus the 16 bytes the receives allow beyond it */
  unsigned char *sb = malloc((1 << 22) + 32), *rb = malloc((1 << 22) + 32);
  CHECK(sb && rb, "malloc");
  for (size_t k = 0; k < nsizes; k++) {
    size_t n = sizes[k];
    MPI_Status st;
    int cnt = -1;
    if (size == 1) { /* to self */
      MPI_Request rq;
      for (size_t i = 0; i < n; i++) sb[i] = pattern(i, 0, n);
      CHECK_MPI(MPI_Isend(sb, (int)n, MPI_BYTE, 0, 20, MPI_COMM_WORLD, &rq));
      CHECK_MPI(MPI_Recv(rb, (int)n + 16, MPI_BYTE, 0, 20, MPI_COMM_WORLD, &st));
      CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
      CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &cnt));
      CHECK(cnt == (int)n, "self size %zu: count %d", n, cnt);
      check_pattern(rb, n, 0);
      continue;
    }
    if (rank > 1) continue;
    /* 0 -> 1, then 1 echoes back what it got with its own pattern. */
    int peer = 1 - rank;
    for (int dir = 0; dir < 2; dir++) {
      int sender = dir;
      if (rank == sender) {
        for (size_t i = 0; i < n; i++) sb[i] = pattern(i, rank, n);
        CHECK_MPI(MPI_Send(sb, (int)n, MPI_BYTE, peer, 21, MPI_COMM_WORLD));
      } else {
        memset(rb, 0xee, n + 16);
        CHECK_MPI(MPI_Recv(rb, (int)n + 16, MPI_BYTE, peer, 21, MPI_COMM_WORLD, &st));
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &cnt));
        CHECK(cnt == (int)n, "size %zu: count %d", n, cnt);
        CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 21, "size %zu: source %d tag %d", n,
              st.MPI_SOURCE, st.MPI_TAG);
        check_pattern(rb, n, peer);
        for (int i = 0; i < 16; i++)
          CHECK(rb[n + i] == 0xee, "size %zu: wrote past the message", n);
      }
    }
  }
  free(sb);
  free(rb);
}

/* ---- wildcards: everyone (incl. rank 0) sends to rank 0 ---- */

static void test_wildcards(void) {
  for (int round = 0; round < 3; round++) {
    int tag = 100 + rank;
    int payload[2] = {rank, tag};
    MPI_Request rq;
    CHECK_MPI(MPI_Isend(payload, 2, MPI_INT, 0, tag, MPI_COMM_WORLD, &rq));
    if (rank == 0) {
      int seen[64] = {0};
      for (int k = 0; k < size; k++) {
        int got[2] = {-1, -1};
        MPI_Status st;
        int want_src = MPI_ANY_SOURCE, want_tag = MPI_ANY_TAG;
        if (round == 1) want_tag = 100 + k;      /* ANY_SOURCE, specific tag */
        if (round == 2) want_src = size - 1 - k; /* specific source, ANY_TAG */
        CHECK_MPI(MPI_Recv(got, 2, MPI_INT, want_src, want_tag, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == got[0] && st.MPI_TAG == got[1],
              "round %d: status (%d,%d) but payload (%d,%d)", round, st.MPI_SOURCE, st.MPI_TAG,
              got[0], got[1]);
        CHECK(got[0] >= 0 && got[0] < size && got[1] == 100 + got[0], "round %d: bad payload",
              round);
        if (round == 1) CHECK(got[0] == k, "round 1: tag %d from %d", want_tag, got[0]);
        if (round == 2) CHECK(got[0] == want_src, "round 2: source %d", got[0]);
        CHECK(++seen[got[0]] == 1, "message from %d twice", got[0]);
        int cnt = -1;
        CHECK_MPI(MPI_Get_count(&st, MPI_INT, &cnt));
        CHECK(cnt == 2, "count %d", cnt);
      }
    }
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  }
}

/* ---- Get_count, incl. MPI_UNDEFINED for a partial derived element ---- */

static void test_get_count(void) {
  MPI_Datatype pair;
  CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
  CHECK_MPI(MPI_Type_commit(&pair));
  int sb[6] = {1, 2, 3, 4, 5, 6}, rb[8];
  MPI_Request rq;
  MPI_Status st;
  int cnt;
  /* 3 ints received into 4 pairs: 1.5 pairs -> MPI_UNDEFINED. */
  CHECK_MPI(MPI_Isend(sb, 3, MPI_INT, next, 30, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(rb, 4, pair, prev, 30, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  cnt = -2;
  CHECK_MPI(MPI_Get_count(&st, pair, &cnt));
  CHECK(cnt == MPI_UNDEFINED, "3 ints as pairs: Get_count %d", cnt);
  CHECK(rb[0] == 1 && rb[1] == 2 && rb[2] == 3, "partial pair data");
  /* 6 ints -> 3 pairs. */
  CHECK_MPI(MPI_Isend(sb, 6, MPI_INT, next, 31, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(rb, 4, pair, prev, 31, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Get_count(&st, pair, &cnt));
  CHECK(cnt == 3, "6 ints as pairs: Get_count %d", cnt);
  /* 0 elements. */
  CHECK_MPI(MPI_Isend(sb, 0, MPI_INT, next, 32, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(rb, 4, pair, prev, 32, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Get_count(&st, pair, &cnt));
  CHECK(cnt == 0, "empty message: Get_count %d", cnt);
  CHECK_MPI(MPI_Get_count(&st, MPI_INT, &cnt));
  CHECK(cnt == 0, "empty message: Get_count(MPI_INT) %d", cnt);
  CHECK_MPI(MPI_Type_free(&pair));
}

/* ---- non-overtaking: rank 0 -> rank 1 (or self), mixed sizes ---- */

#define NMSG 120
static size_t msg_len(int i) {
  return i % 4 == 0 ? (size_t)(300000 + i) : (size_t)(4 + i * 3);
}

static void test_order(void) {
  int src = 0, dst = size > 1 ? 1 : 0;
  size_t maxlen = msg_len(0) + NMSG;
  if (rank == src) {
    unsigned char **bufs = malloc(NMSG * sizeof *bufs);
    MPI_Request *rq = malloc(NMSG * sizeof *rq);
    for (int i = 0; i < NMSG; i++) {
      size_t n = msg_len(i);
      bufs[i] = malloc(n);
      memset(bufs[i], i & 0xff, n);
      memcpy(bufs[i], &i, sizeof i);
      CHECK_MPI(MPI_Isend(bufs[i], (int)n, MPI_BYTE, dst, 40, MPI_COMM_WORLD, &rq[i]));
    }
    if (rank == dst) { /* self: receive here before completing the sends */
      unsigned char *rb = malloc(maxlen);
      for (int i = 0; i < NMSG; i++) {
        MPI_Status st;
        int cnt, seq;
        CHECK_MPI(MPI_Recv(rb, (int)maxlen, MPI_BYTE, MPI_ANY_SOURCE, 40, MPI_COMM_WORLD, &st));
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &cnt));
        memcpy(&seq, rb, sizeof seq);
        CHECK(seq == i && cnt == (int)msg_len(i), "self order: message %d arrived as #%d (len %d)",
              seq, i, cnt);
      }
      free(rb);
    }
    CHECK_MPI(MPI_Waitall(NMSG, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < NMSG; i++) free(bufs[i]);
    free(bufs);
    free(rq);
  } else if (rank == dst) {
    unsigned char *rb = malloc(maxlen);
    for (int i = 0; i < NMSG; i++) {
      MPI_Status st;
      int cnt, seq;
      /* Alternate wildcard and specific source: both keep the order. */
      CHECK_MPI(MPI_Recv(rb, (int)maxlen, MPI_BYTE, i % 2 ? MPI_ANY_SOURCE : src,
                         i % 3 ? 40 : MPI_ANY_TAG, MPI_COMM_WORLD, &st));
      CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &cnt));
      memcpy(&seq, rb, sizeof seq);
      CHECK(seq == i && cnt == (int)msg_len(i), "order: message %d arrived as #%d (len %d)", seq, i,
            cnt);
      for (int k = sizeof seq; k < cnt; k++) CHECK(rb[k] == (i & 0xff), "message %d byte %d", i, k);
    }
    free(rb);
  }
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

  /* Pre-posted receives that all match are satisfied in posting order. */
  enum { NPRE = 40 };
  if (rank == dst) {
    int got[NPRE];
    MPI_Request rq[NPRE];
    for (int i = 0; i < NPRE; i++)
      CHECK_MPI(
          MPI_Irecv(&got[i], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[i]));
    if (rank == src)
      for (int i = 0; i < NPRE; i++) CHECK_MPI(MPI_Send(&i, 1, MPI_INT, dst, 41, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Waitall(NPRE, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < NPRE; i++)
      CHECK(got[i] == i, "pre-posted receive %d got message %d", i, got[i]);
  } else {
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == src)
      for (int i = 0; i < NPRE; i++) CHECK_MPI(MPI_Send(&i, 1, MPI_INT, dst, 41, MPI_COMM_WORLD));
  }
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---- send to self ---- */

static void test_self(void) {
  size_t sizes[] = {0, 5, 100000, (1 << 22) + 1};
  for (int k = 0; k < 4; k++) {
    size_t n = sizes[k];
    unsigned char *sb = malloc(n + 1), *rb = malloc(n + 1);
    for (size_t i = 0; i < n; i++) sb[i] = pattern(i, rank, n);
    MPI_Request rq;
    MPI_Status st;
    int cnt;
    CHECK_MPI(MPI_Isend(sb, (int)n, MPI_BYTE, rank, 50, MPI_COMM_WORLD, &rq));
    CHECK_MPI(MPI_Recv(rb, (int)n, MPI_BYTE, rank, 50, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &cnt));
    CHECK(cnt == (int)n && st.MPI_SOURCE == rank && st.MPI_TAG == 50,
          "self %zu: count %d source %d", n, cnt, st.MPI_SOURCE);
    check_pattern(rb, n, rank);
    free(sb);
    free(rb);
  }
  /* Sendrecv to self, also on MPI_COMM_SELF. */
  int a = rank * 3, b = -1;
  MPI_Status st;
  CHECK_MPI(MPI_Sendrecv(&a, 1, MPI_INT, 0, 51, &b, 1, MPI_INT, 0, 51, MPI_COMM_SELF, &st));
  CHECK(b == a && st.MPI_SOURCE == 0, "Sendrecv on COMM_SELF");
}

/* ---- MPI_PROC_NULL ---- */

static void test_proc_null(void) {
  int buf[4] = {7, 7, 7, 7};
  MPI_Status st;
  int cnt = -1;
  CHECK_MPI(MPI_Send(buf, 4, MPI_INT, MPI_PROC_NULL, 60, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Ssend(buf, 4, MPI_INT, MPI_PROC_NULL, 60, MPI_COMM_WORLD));
  st.MPI_SOURCE = 12345;
  st.MPI_TAG = 12345;
  CHECK_MPI(MPI_Recv(buf, 4, MPI_INT, MPI_PROC_NULL, 60, MPI_COMM_WORLD, &st));
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "PROC_NULL recv: source %d", st.MPI_SOURCE);
  CHECK(st.MPI_TAG == MPI_ANY_TAG, "PROC_NULL recv: tag %d", st.MPI_TAG);
  CHECK_MPI(MPI_Get_count(&st, MPI_INT, &cnt));
  CHECK(cnt == 0, "PROC_NULL recv: count %d", cnt);
  CHECK(buf[0] == 7 && buf[3] == 7, "PROC_NULL recv modified the buffer");
  /* Non-blocking forms complete at once. */
  MPI_Request rq[2];
  CHECK_MPI(MPI_Isend(buf, 4, MPI_INT, MPI_PROC_NULL, 61, MPI_COMM_WORLD, &rq[0]));
  CHECK_MPI(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 61, MPI_COMM_WORLD, &rq[1]));
  MPI_Status sts[2];
  CHECK_MPI(MPI_Waitall(2, rq, sts));
#ifndef REF_BUG_IRECV_PROC_NULL_STATUS
  CHECK(sts[1].MPI_SOURCE == MPI_PROC_NULL && sts[1].MPI_TAG == MPI_ANY_TAG,
        "PROC_NULL Irecv status: source %d tag %d", sts[1].MPI_SOURCE, sts[1].MPI_TAG);
  CHECK_MPI(MPI_Get_count(&sts[1], MPI_INT, &cnt));
  CHECK(cnt == 0, "PROC_NULL Irecv count %d", cnt);
#endif
  /* Sendrecv with PROC_NULL on both sides. */
  CHECK_MPI(MPI_Sendrecv(buf, 4, MPI_INT, MPI_PROC_NULL, 62, buf, 4, MPI_INT, MPI_PROC_NULL, 62,
                         MPI_COMM_WORLD, &st));
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "PROC_NULL Sendrecv status");
  CHECK_MPI(MPI_Get_count(&st, MPI_INT, &cnt));
  CHECK(cnt == 0, "PROC_NULL Sendrecv count %d", cnt);
  CHECK(buf[0] == 7, "PROC_NULL Sendrecv modified the buffer");
}

/* ---- truncation under MPI_ERRORS_RETURN ---- */

static void test_truncate(void) {
  MPI_Comm comm;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  CHECK_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  size_t lens[2] = {100 * sizeof(int), 2 << 20}; /* eager and rendezvous */
  for (int k = 0; k < 2; k++) {
    size_t n = lens[k];
    unsigned char *sb = malloc(n), *rb = malloc(n);
    for (size_t i = 0; i < n; i++) sb[i] = pattern(i, rank, n);
    MPI_Request rq;
    MPI_Status st;
    CHECK_MPI(MPI_Isend(sb, (int)n, MPI_BYTE, next, 70, comm, &rq));
    int small = 40;
    memset(rb, 0xee, n);
    int rc = MPI_Recv(rb, small, MPI_BYTE, prev, 70, comm, &st);
    int cls = -1;
    CHECK(rc != MPI_SUCCESS, "truncated receive of %zu bytes returned success", n);
    CHECK_MPI(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive: error class %d", cls);
#ifdef REF_BUG_TRUNCATE_OVERWRITES
    if (k == 0)
#endif
      CHECK(rb[small] == 0xee, "truncated receive of %zu bytes wrote past its buffer", n);
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    free(sb);
    free(rb);
  }
  /* The communicator still works afterwards. */
  int x = rank, y = -1;
  CHECK_MPI(
      MPI_Sendrecv(&x, 1, MPI_INT, next, 71, &y, 1, MPI_INT, prev, 71, comm, MPI_STATUS_IGNORE));
  CHECK(y == prev, "Sendrecv after truncation got %d", y);
  CHECK_MPI(MPI_Barrier(comm));
  CHECK_MPI(MPI_Comm_free(&comm));
}

/* ---- Sendrecv and Sendrecv_replace ---- */

static void test_sendrecv(void) {
  MPI_Status st;
  int cnt;
  /* Ring shift: 3 ints into a buffer of 5. */
  int si[3] = {rank, rank * 2, rank * 3}, ri[5] = {-1, -1, -1, -1, -1};
  CHECK_MPI(MPI_Sendrecv(si, 3, MPI_INT, next, 80, ri, 5, MPI_INT, prev, 80, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Get_count(&st, MPI_INT, &cnt));
  CHECK(cnt == 3 && st.MPI_SOURCE == prev && st.MPI_TAG == 80,
        "Sendrecv status: count %d source %d tag %d", cnt, st.MPI_SOURCE, st.MPI_TAG);
  CHECK(ri[0] == prev && ri[1] == prev * 2 && ri[2] == prev * 3 && ri[3] == -1,
        "Sendrecv ring data");
  /* Other direction, wildcards on the receive side, different tags. */
  double sd[2] = {rank + 0.5, rank + 0.25}, rd[2] = {0, 0};
  CHECK_MPI(MPI_Sendrecv(sd, 2, MPI_DOUBLE, prev, 81 + rank, rd, 2, MPI_DOUBLE, MPI_ANY_SOURCE,
                         MPI_ANY_TAG, MPI_COMM_WORLD, &st));
  CHECK(st.MPI_SOURCE == next && st.MPI_TAG == 81 + next && rd[0] == next + 0.5 &&
            rd[1] == next + 0.25,
        "Sendrecv reverse: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
  /* (wildcards would also match the next phase's messages: separate) */
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  /* Large (rendezvous) ring: both directions must progress together. */
  size_t n = 3 << 20;
  unsigned char *sb = malloc(n), *rb = malloc(n);
  for (size_t i = 0; i < n; i++) sb[i] = pattern(i, rank, n);
  CHECK_MPI(MPI_Sendrecv(sb, (int)n, MPI_BYTE, next, 83, rb, (int)n, MPI_BYTE, prev, 83,
                         MPI_COMM_WORLD, &st));
  check_pattern(rb, n, prev);
  free(sb);
  free(rb);

  /* Sendrecv_replace: small and large. */
  size_t lens[2] = {1000, 1 << 18};
  for (int k = 0; k < 2; k++) {
    size_t m = lens[k];
    int *buf = malloc(m * sizeof *buf);
    for (size_t i = 0; i < m; i++) buf[i] = rank * 1000003 + (int)i;
    CHECK_MPI(MPI_Sendrecv_replace(buf, (int)m, MPI_INT, next, 84, prev, 84, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &cnt));
    CHECK(cnt == (int)m && st.MPI_SOURCE == prev && st.MPI_TAG == 84,
          "Sendrecv_replace status: count %d source %d", cnt, st.MPI_SOURCE);
    for (size_t i = 0; i < m; i++)
      CHECK(buf[i] == prev * 1000003 + (int)i, "Sendrecv_replace element %zu", i);
    free(buf);
  }
  /* Sendrecv_replace with MPI_ANY_SOURCE/ANY_TAG. */
  long v = 1000L + rank;
  CHECK_MPI(MPI_Sendrecv_replace(&v, 1, MPI_LONG, prev, 85, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                 MPI_COMM_WORLD, &st));
  CHECK(v == 1000L + next && st.MPI_SOURCE == next && st.MPI_TAG == 85,
        "Sendrecv_replace wildcard: %ld from %d", v, st.MPI_SOURCE);
}

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  rank = world_rank();
  size = world_size();
  next = (rank + 1) % size;
  prev = (rank + size - 1) % size;

  test_datatypes();
  test_sizes();
  if (size == 1) test_note("p2p_basic: sizes tested to self only (Send/Recv pair needs 2 ranks)");
  test_wildcards();
  test_get_count();
  test_order();
  test_self();
  test_proc_null();
  test_truncate();
  test_sendrecv();

  test_done("p2p_basic");
  return 0;
}
