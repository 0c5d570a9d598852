/* coll: collective operations.
 * Barrier (really waits for the last rank), Bcast (every root, 0 B .. 1 MiB),
 * Reduce/Allreduce with every predefined op on suitable types (every root,
 * MPI_IN_PLACE), MAXLOC/MINLOC on all pair types with ties (lowest index
 * wins), Gather(v)/Scatter(v)/Allgather(v)/Alltoall(v) incl. zero counts,
 * NULL buffers where nothing is sent, gaps in displacements and
 * MPI_IN_PLACE, Reduce_scatter_block, Reduce_scatter (unequal counts), Alltoallw,
 * Scan, Exscan, user ops (commutative and a
 * non-commutative 2x2 matrix product whose order is checked), Op_free, and
 * collectives on split communicators. */
#include "mpi_check.h"

#include <limits.h>

static int rank, size;

/* ---- Barrier ---- */

static void test_barrier(void) {
  for (int i = 0; i < 20; i++) CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  if (size < 2) {
    test_note("coll: Barrier timing skipped (needs 2 ranks)");
    return;
  }
  /* Rank size-1 enters the second Barrier 100 ms after leaving the first,
   * which it cannot leave before everyone entered it: measured from the
   * entry into the first Barrier, nobody leaves the second one in less
   * than 100 ms (whatever the scheduling). */
  double t0 = MPI_Wtime();
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == size - 1) sleep_ms(100);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  double dt = MPI_Wtime() - t0;
  CHECK(dt >= 0.095,
        "left the Barrier after %.1f ms, before the last rank "
        "arrived (100 ms)",
        dt * 1e3);
}

/* ---- Bcast ---- */

static void test_bcast(void) {
  static const int sizes[] = {0, 1, 3, 100, 4096, 65536, 1 << 20}; /* bytes */
  unsigned char *buf = malloc(1 << 20);
  for (int root = 0; root < size; root++) {
    for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      int n = sizes[k];
      for (int i = 0; i < n; i++) buf[i] = rank == root ? (unsigned char)(i * 13 + root + n) : 0xee;
      CHECK_MPI(MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD));
      for (int i = 0; i < n; i++)
        CHECK(buf[i] == (unsigned char)(i * 13 + root + n), "Bcast root %d size %d: byte %d", root,
              n, i);
    }
    double d[5];
    for (int i = 0; i < 5; i++) d[i] = rank == root ? root * 1.25 + i : -1.0;
    CHECK_MPI(MPI_Bcast(d, 5, MPI_DOUBLE, root, MPI_COMM_WORLD));
    for (int i = 0; i < 5; i++) CHECK(d[i] == root * 1.25 + i, "Bcast doubles root %d", root);
  }
  free(buf);
}

/* ---- Reduce / Allreduce with predefined ops ----
 * EXPR: value contributed by rank r at element i; COMB: combine a and b.
 * Checked with Allreduce, Allreduce in place, and Reduce (plain and in
 * place) at every root. Values are chosen so that the result is exact in
 * any association order. */
#define NRED 37
#define RED_TEST(CT, MT, OP, EXPR, COMB, EQ)                                                      \
  do {                                                                                            \
    CT in[NRED], out[NRED], want[NRED];                                                           \
    for (int i = 0; i < NRED; i++) {                                                              \
      int r = rank;                                                                               \
      in[i] = (CT)(EXPR);                                                                         \
      r = 0;                                                                                      \
      want[i] = (CT)(EXPR);                                                                       \
      for (r = 1; r < size; r++) {                                                                \
        CT a = want[i], b = (CT)(EXPR);                                                           \
        want[i] = (CT)(COMB);                                                                     \
      }                                                                                           \
    }                                                                                             \
    CHECK_MPI(MPI_Allreduce(in, out, NRED, MT, OP, MPI_COMM_WORLD));                              \
    for (int i = 0; i < NRED; i++) {                                                              \
      CT a = out[i], b = want[i];                                                                 \
      CHECK(EQ, "Allreduce %s %s: element %d", #MT, #OP, i);                                      \
    }                                                                                             \
    memcpy(out, in, sizeof in);                                                                   \
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, out, NRED, MT, OP, MPI_COMM_WORLD));                    \
    for (int i = 0; i < NRED; i++) {                                                              \
      CT a = out[i], b = want[i];                                                                 \
      CHECK(EQ, "Allreduce in place %s %s: element %d", #MT, #OP, i);                             \
    }                                                                                             \
    for (int root = 0; root < size; root++) {                                                     \
      memset(out, 0, sizeof out);                                                                 \
      if (root % 2 == 1 && rank == root) {                                                        \
        memcpy(out, in, sizeof in);                                                               \
        CHECK_MPI(MPI_Reduce(MPI_IN_PLACE, out, NRED, MT, OP, root, MPI_COMM_WORLD));             \
      } else {                                                                                    \
        CHECK_MPI(MPI_Reduce(in, rank == root ? out : NULL, NRED, MT, OP, root, MPI_COMM_WORLD)); \
      }                                                                                           \
      if (rank == root)                                                                           \
        for (int i = 0; i < NRED; i++) {                                                          \
          CT a = out[i], b = want[i];                                                             \
          CHECK(EQ, "Reduce %s %s root %d: element %d", #MT, #OP, root, i);                       \
        }                                                                                         \
    }                                                                                             \
  } while (0)

#define EXACT (a == b)
#define TRUTH ((a != 0) == (b != 0))
#define MIN_(x, y) ((x) < (y) ? (x) : (y))
#define MAX_(x, y) ((x) > (y) ? (x) : (y))

static void test_reduce_ops(void) {
  /* SUM */
  RED_TEST(int, MPI_INT, MPI_SUM, r * 1000 - i * 7 + 3, a + b, EXACT);
  RED_TEST(long, MPI_LONG, MPI_SUM, r * 100000000L + i, a + b, EXACT);
  RED_TEST(long long, MPI_LONG_LONG, MPI_SUM, r * 1000000000000LL - i, a + b, EXACT);
  RED_TEST(unsigned, MPI_UNSIGNED, MPI_SUM, r * 3u + i, a + b, EXACT);
  RED_TEST(unsigned long, MPI_UNSIGNED_LONG, MPI_SUM, r * 5ul + i, a + b, EXACT);
  RED_TEST(short, MPI_SHORT, MPI_SUM, r * 10 - i, a + b, EXACT);
  RED_TEST(signed char, MPI_SIGNED_CHAR, MPI_SUM, r - i % 5, a + b, EXACT);
  RED_TEST(unsigned char, MPI_UNSIGNED_CHAR, MPI_SUM, r + i % 7, a + b, EXACT);
  RED_TEST(float, MPI_FLOAT, MPI_SUM, r * 0.5f + i, a + b, EXACT);
  RED_TEST(double, MPI_DOUBLE, MPI_SUM, r * 0.25 - i * 1024.0, a + b, EXACT);
  RED_TEST(long double, MPI_LONG_DOUBLE, MPI_SUM, r * 0.125L + i, a + b, EXACT);
  /* PROD (powers of two and signs: exact) */
  RED_TEST(int, MPI_INT, MPI_PROD, (r + i) % 3 == 0 ? -2 : 1, a * b, EXACT);
  RED_TEST(long long, MPI_LONG_LONG, MPI_PROD, (r + i) % 2 ? 3 : 1, a * b, EXACT);
  RED_TEST(double, MPI_DOUBLE, MPI_PROD, (r + i) % 2 ? 0.5 : -4.0, a * b, EXACT);
  RED_TEST(float, MPI_FLOAT, MPI_PROD, (r + i) % 3 ? 2.0f : 1.0f, a * b, EXACT);
  /* MIN / MAX */
  RED_TEST(int, MPI_INT, MPI_MIN, (r * 7 + i * 3) % 11 - 5, MIN_(a, b), EXACT);
  RED_TEST(int, MPI_INT, MPI_MAX, (r * 7 + i * 3) % 11 - 5, MAX_(a, b), EXACT);
  RED_TEST(unsigned, MPI_UNSIGNED, MPI_MAX, (r * 5u + i) % 9u + 4000000000u, MAX_(a, b), EXACT);
  RED_TEST(long, MPI_LONG, MPI_MIN, (r - i) * 10000000000L, MIN_(a, b), EXACT);
  RED_TEST(short, MPI_SHORT, MPI_MIN, (r * 3 + i) % 7 - 3, MIN_(a, b), EXACT);
  RED_TEST(unsigned char, MPI_UNSIGNED_CHAR, MPI_MAX, (r * 30 + i) % 128, MAX_(a, b), EXACT);
  RED_TEST(signed char, MPI_SIGNED_CHAR, MPI_MIN, (r * 50 + i) % 256 - 128, MIN_(a, b), EXACT);
  RED_TEST(double, MPI_DOUBLE, MPI_MAX, ((r * 13 + i) % 5) * -1.5, MAX_(a, b), EXACT);
  RED_TEST(float, MPI_FLOAT, MPI_MIN, ((r * 13 + i) % 5) * 2.5f, MIN_(a, b), EXACT);
  RED_TEST(long double, MPI_LONG_DOUBLE, MPI_MAX, (r + i) % 4 - 1.5L, MAX_(a, b), EXACT);
  /* MIN / MAX on unsigned values with the top bit set and clear mixed. */
#ifndef REF_BUG_UNSIGNED_MINMAX
  RED_TEST(unsigned char, MPI_UNSIGNED_CHAR, MPI_MAX, (r * 50 + i * 29) % 256, MAX_(a, b), EXACT);
  RED_TEST(unsigned char, MPI_UNSIGNED_CHAR, MPI_MIN, (r * 50 + i * 29) % 256, MIN_(a, b), EXACT);
  RED_TEST(unsigned, MPI_UNSIGNED, MPI_MIN, (r + i) % 2 ? UINT_MAX - r : r + 1u, MIN_(a, b), EXACT);
  RED_TEST(unsigned, MPI_UNSIGNED, MPI_MAX, (r + i) % 2 ? UINT_MAX - r : r + 1u, MAX_(a, b), EXACT);
#ifndef REF_BUG_ULONG_MINMAX
  RED_TEST(unsigned long, MPI_UNSIGNED_LONG, MPI_MIN, (r + i) % 2 ? ULONG_MAX - r : r + 1ul,
           MIN_(a, b), EXACT);
  RED_TEST(unsigned long, MPI_UNSIGNED_LONG, MPI_MAX, (r + i) % 2 ? ULONG_MAX - r : r + 1ul,
           MAX_(a, b), EXACT);
#endif
#endif
  /* LAND / LOR (any non-zero is true; compare truth values) */
  RED_TEST(int, MPI_INT, MPI_LAND, (r + i) % 5 == 0 ? 0 : r * 3 + 7, a && b, TRUTH);
  RED_TEST(int, MPI_INT, MPI_LOR, (r * 3 + i) % 7 == 1 ? -3 : 0, a || b, TRUTH);
  RED_TEST(int, MPI_INT, MPI_LAND, i % 2, a && b, TRUTH);
  RED_TEST(int, MPI_INT, MPI_LOR, i % 3 == 0 && r == size - 1, a || b, TRUTH);
  /* BAND / BOR */
  RED_TEST(unsigned, MPI_UNSIGNED, MPI_BAND, ~(1u << ((r + i) % 32)), a &b, EXACT);
  RED_TEST(unsigned, MPI_UNSIGNED, MPI_BOR, 1u << ((r * 5 + i) % 32), a | b, EXACT);
  RED_TEST(int, MPI_INT, MPI_BOR, 1 << ((r + i) % 16), a | b, EXACT);
  RED_TEST(long, MPI_LONG, MPI_BAND, ~(1L << ((r + i) % 40)), a &b, EXACT);
  RED_TEST(unsigned char, MPI_UNSIGNED_CHAR, MPI_BAND, 0xff ^ (1 << ((r + i) % 8)), a & b, EXACT);
  RED_TEST(unsigned char, MPI_BYTE, MPI_BOR, 1 << ((r + i) % 8), a | b, EXACT);
  RED_TEST(unsigned char, MPI_BYTE, MPI_BAND, 0xf0 | (r + i) % 16, a & b, EXACT);

  /* A large Allreduce (segmented/pipelined in most implementations). */
  int n = 200000;
  double *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
  for (int i = 0; i < n; i++) in[i] = rank + (i % 1000);
  CHECK_MPI(MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  for (int i = 0; i < n; i++)
    CHECK(out[i] == size * (size - 1) / 2.0 + size * (double)(i % 1000),
          "large Allreduce element %d", i);
  free(in);
  free(out);
  /* Rounding makes the order of a floating-point sum matter: every rank
   * must still end with the same bits. */
  enum { NB = 64 };
  double vals[NB], sums[NB], all[4 * NB];
  for (int i = 0; i < NB; i++)
    vals[i] = (rank + 1) * 0.1 + (i % 7) * 1e16 * (rank % 2 ? -1 : 1) + i * 1e-7;
  CHECK_MPI(MPI_Allreduce(vals, sums, NB, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  if (size <= 4) {
    CHECK_MPI(MPI_Allgather(sums, NB, MPI_DOUBLE, all, NB, MPI_DOUBLE, MPI_COMM_WORLD));
    for (int j = 1; j < size; j++)
      CHECK(memcmp(all, all + j * NB, sizeof sums) == 0,
            "Allreduce of doubles: rank %d's sum differs from rank 0's in its bits", j);
  }
  /* count 0 */
  int z = 5, zo = 6;
  CHECK_MPI(MPI_Allreduce(&z, &zo, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK(zo == 6, "Allreduce of 0 elements wrote the buffer");
}

/* ---- MAXLOC / MINLOC on every pair type, with ties ---- */

#define LOC_TEST(VT, MT)                                                                          \
  do {                                                                                            \
    struct {                                                                                      \
      VT v;                                                                                       \
      int i;                                                                                      \
    } in[NRED], out[NRED], wmax[NRED], wmin[NRED];                                                \
    for (int e = 0; e < NRED; e++) {                                                              \
      for (int r = 0; r < size; r++) {                                                            \
        /* few distinct values: many ties; index not monotonic in r */                            \
        VT v = (VT)((r * 7 + e * 3) % 3) - (VT)1;                                                 \
        int idx = ((size - 1) * r + e) % size + 10 * e;                                           \
        if (r == rank) {                                                                          \
          in[e].v = v;                                                                            \
          in[e].i = idx;                                                                          \
        }                                                                                         \
        if (r == 0 || v > wmax[e].v || (v == wmax[e].v && idx < wmax[e].i)) {                     \
          wmax[e].v = v;                                                                          \
          wmax[e].i = idx;                                                                        \
        }                                                                                         \
        if (r == 0 || v < wmin[e].v || (v == wmin[e].v && idx < wmin[e].i)) {                     \
          wmin[e].v = v;                                                                          \
          wmin[e].i = idx;                                                                        \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
    CHECK_MPI(MPI_Allreduce(in, out, NRED, MT, MPI_MAXLOC, MPI_COMM_WORLD));                      \
    for (int e = 0; e < NRED; e++)                                                                \
      CHECK(out[e].v == wmax[e].v && out[e].i == wmax[e].i,                                       \
            "MAXLOC %s element %d: index %d want %d", #MT, e, out[e].i, wmax[e].i);               \
    for (int root = 0; root < size; root++) {                                                     \
      memset(out, 0, sizeof out);                                                                 \
      CHECK_MPI(MPI_Reduce(in, out, NRED, MT, MPI_MINLOC, root, MPI_COMM_WORLD));                 \
      if (rank == root)                                                                           \
        for (int e = 0; e < NRED; e++)                                                            \
          CHECK(out[e].v == wmin[e].v && out[e].i == wmin[e].i,                                   \
                "MINLOC %s root %d element %d: index %d want %d", #MT, root, e, out[e].i,         \
                wmin[e].i);                                                                       \
    }                                                                                             \
    memcpy(out, in, sizeof in);                                                                   \
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, out, NRED, MT, MPI_MINLOC, MPI_COMM_WORLD));            \
    for (int e = 0; e < NRED; e++)                                                                \
      CHECK(out[e].v == wmin[e].v && out[e].i == wmin[e].i, "MINLOC in place %s element %d", #MT, \
            e);                                                                                   \
  } while (0)

static void test_loc_ops(void) {
  LOC_TEST(double, MPI_DOUBLE_INT);
  LOC_TEST(int, MPI_2INT);
  LOC_TEST(float, MPI_FLOAT_INT);
  LOC_TEST(long, MPI_LONG_INT);
  LOC_TEST(short, MPI_SHORT_INT);
  LOC_TEST(long double, MPI_LONG_DOUBLE_INT);
}

/* ---- user-defined ops ---- */

#define PRIME 10007
typedef struct {
  int m[4]; /* row-major 2x2 */
} mat2;

/* inoutvec[k] = invec[k] * inoutvec[k]: invec holds the lower ranks' part. */
static void matmul_op(void *invec, void *inoutvec, int *len, MPI_Datatype *dt) {
  (void)dt;
  const mat2 *a = invec;
  mat2 *b = inoutvec;
  for (int k = 0; k < *len; k++) {
    long long c0 = (long long)a[k].m[0] * b[k].m[0] + (long long)a[k].m[1] * b[k].m[2];
    long long c1 = (long long)a[k].m[0] * b[k].m[1] + (long long)a[k].m[1] * b[k].m[3];
    long long c2 = (long long)a[k].m[2] * b[k].m[0] + (long long)a[k].m[3] * b[k].m[2];
    long long c3 = (long long)a[k].m[2] * b[k].m[1] + (long long)a[k].m[3] * b[k].m[3];
    b[k].m[0] = (int)(c0 % PRIME);
    b[k].m[1] = (int)(c1 % PRIME);
    b[k].m[2] = (int)(c2 % PRIME);
    b[k].m[3] = (int)(c3 % PRIME);
  }
}

static mat2 mat_of(int r, int k) {
  mat2 m = {{r + 2 + k, 1 + r * k, (r * 3 + k) % 5, 1 + r}};
  return m;
}

static mat2 mat_mul(mat2 a, mat2 b) {
  int one = 1;
  matmul_op(&a, &b, &one, NULL);
  return b;
}

static int mat_eq(mat2 a, mat2 b) {
  return memcmp(a.m, b.m, sizeof a.m) == 0;
}

static void summod_op(void *invec, void *inoutvec, int *len, MPI_Datatype *dt) {
  (void)dt;
  const int *a = invec;
  int *b = inoutvec;
  for (int k = 0; k < *len; k++) b[k] = (a[k] + b[k]) % 1000;
}

static void test_user_ops(void) {
  enum { K = 3 };
  MPI_Datatype mt;
  CHECK_MPI(MPI_Type_contiguous(4, MPI_INT, &mt));
  CHECK_MPI(MPI_Type_commit(&mt));
  MPI_Op op;
  CHECK_MPI(MPI_Op_create(matmul_op, 0, &op));

  mat2 in[K], out[K], want[K], prefix[K];
  for (int k = 0; k < K; k++) {
    in[k] = mat_of(rank, k);
    want[k] = mat_of(0, k);
    for (int r = 1; r < size; r++) want[k] = mat_mul(want[k], mat_of(r, k));
    prefix[k] = mat_of(0, k);
    for (int r = 1; r <= rank; r++) prefix[k] = mat_mul(prefix[k], mat_of(r, k));
  }
  /* The reverse order gives a different product (so the check means
   * something) as soon as there are 2 ranks. */
  if (size >= 2) {
    mat2 rev = mat_of(size - 1, 0);
    for (int r = size - 2; r >= 0; r--) rev = mat_mul(rev, mat_of(r, 0));
    CHECK(!mat_eq(rev, want[0]), "test matrices happen to commute");
  }
  for (int root = 0; root < size; root++) {
    memset(out, 0, sizeof out);
    CHECK_MPI(MPI_Reduce(in, out, K, mt, op, root, MPI_COMM_WORLD));
    if (rank == root)
      for (int k = 0; k < K; k++)
        CHECK(mat_eq(out[k], want[k]),
              "non-commutative Reduce root %d: "
              "element %d is not M0*M1*...",
              root, k);
  }
  memset(out, 0, sizeof out);
  CHECK_MPI(MPI_Allreduce(in, out, K, mt, op, MPI_COMM_WORLD));
  for (int k = 0; k < K; k++)
    CHECK(mat_eq(out[k], want[k]), "non-commutative Allreduce element %d", k);
  memset(out, 0, sizeof out);
  CHECK_MPI(MPI_Scan(in, out, K, mt, op, MPI_COMM_WORLD));
  for (int k = 0; k < K; k++)
    CHECK(mat_eq(out[k], prefix[k]), "non-commutative Scan element %d", k);
  CHECK_MPI(MPI_Op_free(&op));
  CHECK(op == MPI_OP_NULL, "Op_free did not set MPI_OP_NULL");
  CHECK_MPI(MPI_Type_free(&mt));

  /* Commutative user op. */
  CHECK_MPI(MPI_Op_create(summod_op, 1, &op));
  int v[5], w[5];
  for (int i = 0; i < 5; i++) v[i] = (rank * 397 + i * 101) % 1000;
  CHECK_MPI(MPI_Allreduce(v, w, 5, MPI_INT, op, MPI_COMM_WORLD));
  for (int i = 0; i < 5; i++) {
    int s = 0;
    for (int r = 0; r < size; r++) s = (s + (r * 397 + i * 101) % 1000) % 1000;
    CHECK(w[i] == s, "commutative user op element %d: %d want %d", i, w[i], s);
  }
  CHECK_MPI(MPI_Op_free(&op));
}

/* ---- Scan ---- */

static void test_scan(void) {
  int v[3] = {rank + 1, -rank, rank % 2}, w[3];
  CHECK_MPI(MPI_Scan(v, w, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK(w[0] == (rank + 1) * (rank + 2) / 2 && w[1] == -rank * (rank + 1) / 2 &&
            w[2] == (rank + 1) / 2,
        "Scan SUM: %d %d %d", w[0], w[1], w[2]);
  double d = (rank * 7) % 4, e;
  CHECK_MPI(MPI_Scan(&d, &e, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  double m = 0;
  for (int r = 0; r <= rank; r++) m = MAX_(m, (r * 7) % 4);
  CHECK(e == m, "Scan MAX: %g want %g", e, m);
  /* in place */
  long l = 1L << rank;
  CHECK_MPI(MPI_Scan(MPI_IN_PLACE, &l, 1, MPI_LONG, MPI_BOR, MPI_COMM_WORLD));
  CHECK(l == (1L << (rank + 1)) - 1, "Scan in place BOR: %ld", l);

  /* Exscan: ranks 0..r-1; rank 0's buffer untouched. */
  int x[2] = {rank + 1, 1 << rank}, y[2] = {-7, -7};
  CHECK_MPI(MPI_Exscan(x, y, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  if (rank == 0) {
    CHECK(y[0] == -7 && y[1] == -7, "Exscan wrote rank 0's buffer: %d %d", y[0], y[1]);
  } else {
    CHECK(y[0] == rank * (rank + 1) / 2 && y[1] == (1 << rank) - 1, "Exscan SUM: %d %d", y[0],
          y[1]);
  }
  long bits = 1L << rank;
  CHECK_MPI(MPI_Exscan(MPI_IN_PLACE, &bits, 1, MPI_LONG, MPI_BOR, MPI_COMM_WORLD));
  if (rank > 0) CHECK(bits == (1L << rank) - 1, "Exscan in place BOR: %ld", bits);
}

/* ---- Gather / Scatter families ---- */

static void test_gather_scatter(void) {
  int n = size;
  int *all = malloc((3 * n + 4 * n * n + 16) * sizeof *all);
  int *cnt = malloc(n * sizeof *cnt), *dsp = malloc(n * sizeof *dsp);
  int mine[3] = {rank * 10, rank * 10 + 1, rank * 10 + 2};

  for (int root = 0; root < n; root++) {
    /* Gather, 3 ints each; non-roots pass NULL as recvbuf. */
    for (int i = 0; i < 3 * n; i++) all[i] = -1;
    CHECK_MPI(
        MPI_Gather(mine, 3, MPI_INT, rank == root ? all : NULL, 3, MPI_INT, root, MPI_COMM_WORLD));
    if (rank == root)
      for (int i = 0; i < 3 * n; i++)
        CHECK(all[i] == (i / 3) * 10 + i % 3, "Gather root %d element %d", root, i);
    /* Gather in place at the root. */
    for (int i = 0; i < 3 * n; i++) all[i] = -1;
    if (rank == root) {
      memcpy(all + 3 * root, mine, sizeof mine);
      CHECK_MPI(MPI_Gather(MPI_IN_PLACE, 3, MPI_INT, all, 3, MPI_INT, root, MPI_COMM_WORLD));
      for (int i = 0; i < 3 * n; i++)
        CHECK(all[i] == (i / 3) * 10 + i % 3, "Gather in place element %d", i);
    } else {
      CHECK_MPI(MPI_Gather(mine, 3, MPI_INT, NULL, 0, MPI_INT, root, MPI_COMM_WORLD));
    }

    /* Gatherv: rank r sends r ints (rank 0 sends none, from NULL);
     * blocks land in reverse rank order with a 1-int gap after each. */
    int pos = 0;
    for (int r = n - 1; r >= 0; r--) {
      cnt[r] = r;
      dsp[r] = pos;
      pos += r + 1;
    }
    for (int i = 0; i < pos; i++) all[i] = -1;
    int *vsend = malloc((rank + 1) * sizeof *vsend);
    for (int i = 0; i < rank; i++) vsend[i] = rank * 100 + i;
    CHECK_MPI(MPI_Gatherv(rank == 0 ? NULL : vsend, rank, MPI_INT, rank == root ? all : NULL, cnt,
                          dsp, MPI_INT, root, MPI_COMM_WORLD));
    if (rank == root)
      for (int r = 0; r < n; r++) {
        for (int i = 0; i < r; i++)
          CHECK(all[dsp[r] + i] == r * 100 + i, "Gatherv root %d from %d [%d]", root, r, i);
        CHECK(all[dsp[r] + r] == -1, "Gatherv wrote into a gap");
      }

    /* Scatter, 2 ints each; non-roots pass NULL as sendbuf. */
    for (int i = 0; i < 2 * n; i++) all[i] = root * 1000 + i;
    int two[2] = {-1, -1};
    CHECK_MPI(
        MPI_Scatter(rank == root ? all : NULL, 2, MPI_INT, two, 2, MPI_INT, root, MPI_COMM_WORLD));
    CHECK(two[0] == root * 1000 + 2 * rank && two[1] == root * 1000 + 2 * rank + 1,
          "Scatter root %d: %d %d", root, two[0], two[1]);
    /* Scatter in place at the root: its own block stays where it is. */
    if (rank == root) {
      CHECK_MPI(MPI_Scatter(all, 2, MPI_INT, MPI_IN_PLACE, 2, MPI_INT, root, MPI_COMM_WORLD));
      CHECK(all[2 * root] == root * 1000 + 2 * root, "Scatter in place changed root data");
    } else {
      two[0] = two[1] = -1;
      CHECK_MPI(MPI_Scatter(NULL, 0, MPI_INT, two, 2, MPI_INT, root, MPI_COMM_WORLD));
      CHECK(two[1] == root * 1000 + 2 * rank + 1, "Scatter (in place root) got %d", two[1]);
    }

    /* Scatterv: rank r gets r ints (rank 0 none, into NULL), reverse
     * order with gaps in the send buffer. */
    for (int i = 0; i < pos; i++) all[i] = root * 10000 + i;
    int *vrecv = malloc((rank + 1) * sizeof *vrecv);
    for (int i = 0; i <= rank; i++) vrecv[i] = -1;
    CHECK_MPI(MPI_Scatterv(rank == root ? all : NULL, cnt, dsp, MPI_INT, rank == 0 ? NULL : vrecv,
                           rank, MPI_INT, root, MPI_COMM_WORLD));
    for (int i = 0; i < rank; i++)
      CHECK(vrecv[i] == root * 10000 + dsp[rank] + i, "Scatterv root %d [%d]", root, i);
    CHECK(vrecv[rank] == -1, "Scatterv wrote past the count");
    free(vsend);
    free(vrecv);
  }

  /* Allgather (plain and in place). */
  for (int i = 0; i < 3 * n; i++) all[i] = -1;
  CHECK_MPI(MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, MPI_COMM_WORLD));
  for (int i = 0; i < 3 * n; i++) CHECK(all[i] == (i / 3) * 10 + i % 3, "Allgather element %d", i);
  for (int i = 0; i < 3 * n; i++) all[i] = i / 3 == rank ? mine[i % 3] : -1;
  CHECK_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_INT, all, 3, MPI_INT, MPI_COMM_WORLD));
  for (int i = 0; i < 3 * n; i++)
    CHECK(all[i] == (i / 3) * 10 + i % 3, "Allgather in place element %d", i);

  /* Allgatherv: rank r contributes (r % 3) ints (some zero, from NULL). */
  int pos = 0;
  for (int r = 0; r < n; r++) {
    cnt[r] = r % 3;
    dsp[r] = pos + 1; /* one-int gap before each block */
    pos += cnt[r] + 1;
  }
  for (int i = 0; i < pos + 1; i++) all[i] = -1;
  int contrib[2] = {rank * 7, rank * 7 + 1};
  CHECK_MPI(MPI_Allgatherv(cnt[rank] ? contrib : NULL, cnt[rank], MPI_INT, all, cnt, dsp, MPI_INT,
                           MPI_COMM_WORLD));
  for (int r = 0; r < n; r++) {
    CHECK(all[dsp[r] - 1] == -1, "Allgatherv wrote into a gap");
    for (int i = 0; i < cnt[r]; i++)
      CHECK(all[dsp[r] + i] == r * 7 + i, "Allgatherv from %d [%d]", r, i);
  }

  /* Alltoall, 2 ints per pair. */
  int *sb = malloc(2 * n * sizeof *sb), *rb = malloc(2 * n * sizeof *rb);
  for (int j = 0; j < n; j++) {
    sb[2 * j] = rank * 100 + j * 10;
    sb[2 * j + 1] = rank * 100 + j * 10 + 1;
  }
  CHECK_MPI(MPI_Alltoall(sb, 2, MPI_INT, rb, 2, MPI_INT, MPI_COMM_WORLD));
  for (int j = 0; j < n; j++)
    CHECK(rb[2 * j] == j * 100 + rank * 10 && rb[2 * j + 1] == j * 100 + rank * 10 + 1,
          "Alltoall from %d", j);
  free(sb);
  free(rb);

  /* Alltoallv: rank a sends (a + b) % 3 ints to rank b (often zero);
   * blocks packed in reverse order. NULL buffers when all counts are 0. */
  int *scnt = malloc(n * sizeof *scnt), *sdsp = malloc(n * sizeof *sdsp);
  int *rcnt = malloc(n * sizeof *rcnt), *rdsp = malloc(n * sizeof *rdsp);
  int stot = 0, rtot = 0;
  for (int j = n - 1; j >= 0; j--) {
    scnt[j] = (rank + j) % 3;
    sdsp[j] = stot;
    stot += scnt[j];
    rcnt[j] = (j + rank) % 3;
    rdsp[j] = rtot + 1; /* gap */
    rtot += rcnt[j] + 1;
  }
  sb = stot ? malloc(stot * sizeof *sb) : NULL;
  rb = malloc((rtot + 1) * sizeof *rb);
  for (int j = 0; j < n; j++)
    for (int i = 0; i < scnt[j]; i++) sb[sdsp[j] + i] = rank * 1000 + j * 10 + i;
  for (int i = 0; i < rtot + 1; i++) rb[i] = -1;
  int any_recv = 0;
  for (int j = 0; j < n; j++) any_recv |= rcnt[j];
  CHECK_MPI(MPI_Alltoallv(sb, scnt, sdsp, MPI_INT, any_recv ? rb : NULL, rcnt, rdsp, MPI_INT,
                          MPI_COMM_WORLD));
  for (int j = 0; j < n; j++) {
    CHECK(rb[rdsp[j] - 1] == -1, "Alltoallv wrote into a gap");
    for (int i = 0; i < rcnt[j]; i++)
      CHECK(rb[rdsp[j] + i] == j * 1000 + rank * 10 + i, "Alltoallv from %d [%d]", j, i);
  }
  free(sb);
  free(rb);
  free(scnt);
  free(sdsp);
  free(rcnt);
  free(rdsp);
  free(all);
  free(cnt);
  free(dsp);
}

/* ---- Reduce_scatter_block ---- */

static void test_reduce_scatter(void) {
  enum { K = 3 };
  int n = size;
  int *in = malloc(K * n * sizeof *in), out[K];
  for (int j = 0; j < K * n; j++) in[j] = rank * 1000 + j;
  CHECK_MPI(MPI_Reduce_scatter_block(in, out, K, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  for (int t = 0; t < K; t++)
    CHECK(out[t] == 1000 * n * (n - 1) / 2 + n * (rank * K + t),
          "Reduce_scatter_block element %d: %d", t, out[t]);
  /* In place: the input is the receive buffer, the result its first block. */
  for (int j = 0; j < K * n; j++) in[j] = (rank + 1) * (j + 1);
  CHECK_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, in, K, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  for (int t = 0; t < K; t++)
    CHECK(in[t] == n * (rank * K + t + 1), "Reduce_scatter_block in place element %d", t);
  free(in);

  /* Reduce_scatter: rank r gets r+1 elements (rank 0 one, ...). */
  int counts[64], total = 0;
  for (int r = 0; r < n; r++) total += counts[r] = r + 1;
  int *v = malloc(total * sizeof *v), *got = malloc((rank + 1) * sizeof *got);
  for (int j = 0; j < total; j++) v[j] = rank + j;
  CHECK_MPI(MPI_Reduce_scatter(v, got, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  int first = 0;
  for (int r = 0; r < rank; r++) first += counts[r];
  for (int t = 0; t <= rank; t++)
    CHECK(got[t] == n * (n - 1) / 2 + n * (first + t), "Reduce_scatter element %d: %d", t, got[t]);
  /* In place. */
  for (int j = 0; j < total; j++) v[j] = (rank + 1) * (j + 1);
  CHECK_MPI(MPI_Reduce_scatter(MPI_IN_PLACE, v, counts, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  for (int t = 0; t <= rank; t++)
    CHECK(v[t] == n * (first + t + 1), "Reduce_scatter in place element %d: %d", t, v[t]);
  free(v);
  free(got);

  /* Alltoallw: one int to and from each rank, with a type per peer
   * (MPI_INT or MPI_INT32_T) and displacements in bytes. */
  int *sw = malloc(n * sizeof *sw), *rw = malloc(n * sizeof *rw);
  int *cnt = malloc(n * sizeof *cnt), *dis = malloc(n * sizeof *dis);
  MPI_Datatype *ty = malloc(n * sizeof *ty);
  for (int j = 0; j < n; j++) {
    sw[j] = 100 * rank + j;
    rw[j] = -1;
    cnt[j] = 1;
    dis[j] = j * (int)sizeof(int);
    ty[j] = (j % 2 == 0) ? MPI_INT : MPI_INT32_T;
  }
  CHECK_MPI(MPI_Alltoallw(sw, cnt, dis, ty, rw, cnt, dis, ty, MPI_COMM_WORLD));
  for (int j = 0; j < n; j++) CHECK(rw[j] == 100 * j + rank, "Alltoallw from %d: %d", j, rw[j]);
  free(sw), free(rw), free(cnt), free(dis), free(ty);
}

/* ---- collectives on split communicators ---- */

static void test_split_colls(void) {
  MPI_Comm sub;
  int color = rank % 2;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, -rank, &sub)); /* reversed */
  int sr, ss;
  CHECK_MPI(MPI_Comm_rank(sub, &sr));
  CHECK_MPI(MPI_Comm_size(sub, &ss));
  /* Members are the world ranks with my parity, highest world rank first. */
  int v = rank, sum = 0;
  CHECK_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, sub));
  int want = 0;
  for (int r = color; r < size; r += 2) want += r;
  CHECK(sum == want, "Allreduce on split: %d want %d", sum, want);
  /* Interleave a WORLD collective. */
  int wsum = 0;
  CHECK_MPI(MPI_Allreduce(&v, &wsum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK(wsum == size * (size - 1) / 2, "Allreduce on WORLD between split collectives");
  int b = sr == 0 ? 1000 + rank : -1;
  CHECK_MPI(MPI_Bcast(&b, 1, MPI_INT, 0, sub));
  int top = color + 2 * ((size - 1 - color) / 2); /* highest world rank of my color */
  CHECK(b == 1000 + top, "Bcast on split from sub-rank 0: %d want %d", b, 1000 + top);
  int *g = malloc(ss * sizeof *g);
  CHECK_MPI(MPI_Allgather(&v, 1, MPI_INT, g, 1, MPI_INT, sub));
  for (int i = 0; i < ss; i++) CHECK(g[i] == top - 2 * i, "Allgather on split [%d] = %d", i, g[i]);
  int pre = 0;
  CHECK_MPI(MPI_Scan(&v, &pre, 1, MPI_INT, MPI_SUM, sub));
  want = 0;
  for (int i = 0; i <= sr; i++) want += top - 2 * i;
  CHECK(pre == want, "Scan on split: %d want %d", pre, want);
  free(g);
  CHECK_MPI(MPI_Barrier(sub));
  CHECK_MPI(MPI_Comm_free(&sub));
}

/* Blocks of 256 KiB, large enough for an MPI to send them from the user's
 * memory: Alltoall (also in place, where a block sent to j is where j's
 * arrives), Gather, Scatter, Allgather, and a Reduce of 1 MiB to every
 * root. Each int names its sender, its destination and its index. */
static void test_large(void) {
  const int n = 65536; /* ints per block: 256 KiB, lent over shm */
  const size_t all = (size_t)n * (size_t)size;
  int *sb = malloc(all * sizeof(int)), *rb = malloc(all * sizeof(int));
  for (int inplace = 0; inplace < 2; inplace++) {
    for (int j = 0; j < size; j++) {
      for (int i = 0; i < n; i++)
        (inplace ? rb : sb)[(size_t)j * n + i] = rank * 1000000 + j * 100000 + i % 1000;
    }
    CHECK_MPI(
        MPI_Alltoall(inplace ? MPI_IN_PLACE : sb, n, MPI_INT, rb, n, MPI_INT, MPI_COMM_WORLD));
    for (int j = 0; j < size; j++) {
      for (int i = 0; i < n; i += 97) {
        CHECK(rb[(size_t)j * n + i] == j * 1000000 + rank * 100000 + i % 1000,
              "large alltoall%s: block %d element %d: %d", inplace ? " in place" : "", j, i,
              rb[(size_t)j * n + i]);
      }
    }
  }
  for (int root = 0; root < size; root++) {
    for (int i = 0; i < n; i++) sb[i] = rank * 1000000 + root * 100000 + i % 1000;
    memset(rb, 0xff, all * sizeof(int));
    CHECK_MPI(MPI_Gather(sb, n, MPI_INT, rb, n, MPI_INT, root, MPI_COMM_WORLD));
    if (rank == root) {
      for (int j = 0; j < size; j++) {
        for (int i = 0; i < n; i += 97) {
          CHECK(rb[(size_t)j * n + i] == j * 1000000 + root * 100000 + i % 1000,
                "large gather at %d: block %d element %d", root, j, i);
        }
      }
    }
    if (rank == root) {
      for (size_t k = 0; k < all; k++) rb[k] = (int)(k / n) * 7 + (int)(k % n) % 1000;
    }
    CHECK_MPI(MPI_Scatter(rb, n, MPI_INT, sb, n, MPI_INT, root, MPI_COMM_WORLD));
    for (int i = 0; i < n; i += 97)
      CHECK(sb[i] == rank * 7 + i % 1000, "large scatter from %d", root);
    /* 1 MiB of doubles summed at root. */
    const int m = 131072;
    double *in = malloc((size_t)m * sizeof(double)), *out = malloc((size_t)m * sizeof(double));
    for (int i = 0; i < m; i++) in[i] = rank + i % 7;
    CHECK_MPI(MPI_Reduce(in, out, m, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD));
    if (rank == root) {
      for (int i = 0; i < m; i += 101) {
        const double want = (double)size * (size - 1) / 2 + (double)size * (i % 7);
        CHECK(out[i] == want, "large reduce at %d: element %d: %g, want %g", root, i, out[i], want);
      }
    }
    free(in);
    free(out);
  }
  for (int i = 0; i < n; i++) sb[i] = rank * 1000000 + i % 1000;
  CHECK_MPI(MPI_Allgather(sb, n, MPI_INT, rb, n, MPI_INT, MPI_COMM_WORLD));
  for (int j = 0; j < size; j++) {
    for (int i = 0; i < n; i += 97) {
      CHECK(rb[(size_t)j * n + i] == j * 1000000 + i % 1000, "large allgather block %d", j);
    }
  }
  free(sb);
  free(rb);
}

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  rank = world_rank();
  size = world_size();
  test_barrier();
  test_bcast();
  test_reduce_ops();
  test_loc_ops();
  test_user_ops();
  test_scan();
  test_gather_scatter();
  test_reduce_scatter();
  test_split_colls();
  test_large();
  test_done("coll");
  return 0;
}
