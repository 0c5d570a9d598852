/* datatypes: derived datatypes.
 * Type_size/Type_get_extent of basic and pair types (pair extents equal the
 * C struct), Type_contiguous, Type_vector (matrix columns sent into
 * contiguous buffers and back, nested types), Type_indexed (unordered
 * displacements, order of the type map), zero-size types, Get_count with
 * derived types (incl. MPI_UNDEFINED), Get_address (relative displacements,
 * MPI_BOTTOM with absolute displacements), Type_free (handle becomes
 * MPI_DATATYPE_NULL; types built from it and pending operations are
 * unaffected), derived types in collectives; subarrays (both orders),
 * indexed blocks, hindexed (block), Type_dup, true extents, the _x
 * inquiries, Get_elements, Aint_add/diff. Ring exchange (1 rank = self). */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS */
#include "mpi_check.h"

#include <stdint.h>
#include <sys/mman.h>

static int rank, size, next, prev;

static void check_type(MPI_Datatype t, int want_size, MPI_Aint want_lb, MPI_Aint want_extent,
                       const char *what) {
  int s = -1;
  MPI_Aint lb = -1, ext = -1;
  CHECK_MPI(MPI_Type_size(t, &s));
  CHECK_MPI(MPI_Type_get_extent(t, &lb, &ext));
  CHECK(s == want_size, "%s: size %d, want %d", what, s, want_size);
  CHECK(lb == want_lb && ext == want_extent, "%s: lb %ld extent %ld, want %ld %ld", what, (long)lb,
        (long)ext, (long)want_lb, (long)want_extent);
}

#define PAIR_EXTENT(VT, MT)                                                       \
  do {                                                                            \
    struct {                                                                      \
      VT v;                                                                       \
      int i;                                                                      \
    } p_;                                                                         \
    (void)p_;                                                                     \
    check_type(MT, (int)(sizeof(VT) + sizeof(int)), 0, (MPI_Aint)sizeof p_, #MT); \
  } while (0)

static void test_basic_sizes(void) {
  check_type(MPI_CHAR, 1, 0, 1, "MPI_CHAR");
  check_type(MPI_SIGNED_CHAR, 1, 0, 1, "MPI_SIGNED_CHAR");
  check_type(MPI_UNSIGNED_CHAR, 1, 0, 1, "MPI_UNSIGNED_CHAR");
  check_type(MPI_BYTE, 1, 0, 1, "MPI_BYTE");
  check_type(MPI_SHORT, sizeof(short), 0, sizeof(short), "MPI_SHORT");
  check_type(MPI_INT, sizeof(int), 0, sizeof(int), "MPI_INT");
  check_type(MPI_UNSIGNED, sizeof(unsigned), 0, sizeof(unsigned), "MPI_UNSIGNED");
  check_type(MPI_LONG, sizeof(long), 0, sizeof(long), "MPI_LONG");
  check_type(MPI_UNSIGNED_LONG, sizeof(long), 0, sizeof(long), "MPI_UNSIGNED_LONG");
  check_type(MPI_LONG_LONG, sizeof(long long), 0, sizeof(long long), "MPI_LONG_LONG");
  check_type(MPI_FLOAT, sizeof(float), 0, sizeof(float), "MPI_FLOAT");
  check_type(MPI_DOUBLE, sizeof(double), 0, sizeof(double), "MPI_DOUBLE");
  check_type(MPI_AINT, sizeof(MPI_Aint), 0, sizeof(MPI_Aint), "MPI_AINT");
  /* long double: the size is the value's bytes (10 on x86 = 80-bit) or
   * the full sizeof; the extent is sizeof. */
  int lds = 0;
  MPI_Aint lb, ext;
  CHECK_MPI(MPI_Type_size(MPI_LONG_DOUBLE, &lds));
  CHECK_MPI(MPI_Type_get_extent(MPI_LONG_DOUBLE, &lb, &ext));
  CHECK(
      lds > 0 && lds <= (int)sizeof(long double) && lb == 0 && ext == (MPI_Aint)sizeof(long double),
      "MPI_LONG_DOUBLE: size %d extent %ld", lds, (long)ext);
  PAIR_EXTENT(float, MPI_FLOAT_INT);
  PAIR_EXTENT(double, MPI_DOUBLE_INT);
  PAIR_EXTENT(long, MPI_LONG_INT);
  PAIR_EXTENT(int, MPI_2INT);
  PAIR_EXTENT(short, MPI_SHORT_INT);
  struct {
    long double v;
    int i;
  } ldi;
  (void)ldi;
  int s = 0;
  CHECK_MPI(MPI_Type_size(MPI_LONG_DOUBLE_INT, &s));
  CHECK_MPI(MPI_Type_get_extent(MPI_LONG_DOUBLE_INT, &lb, &ext));
  CHECK(s == lds + (int)sizeof(int) && lb == 0 && ext == (MPI_Aint)sizeof ldi,
        "MPI_LONG_DOUBLE_INT: size %d extent %ld", s, (long)ext);
}

/* ---- contiguous ---- */

static void test_contiguous(void) {
  MPI_Datatype c5, c0, cc;
  CHECK_MPI(MPI_Type_contiguous(5, MPI_INT, &c5));
  CHECK_MPI(MPI_Type_commit(&c5));
  check_type(c5, 20, 0, 20, "contiguous(5, INT)");
  /* Contiguous of a contiguous. */
  CHECK_MPI(MPI_Type_contiguous(3, c5, &cc));
  CHECK_MPI(MPI_Type_commit(&cc));
  check_type(cc, 60, 0, 60, "contiguous(3, contiguous(5))");

  /* 2 x c5 sent, received as 10 ints; and 15 ints received as 1 cc. */
  int sb[15], rb[15];
  for (int i = 0; i < 15; i++) sb[i] = rank * 100 + i;
  MPI_Request rq;
  MPI_Status st;
  int cnt;
  CHECK_MPI(MPI_Isend(sb, 2, c5, next, 1, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(rb, 15, MPI_INT, prev, 1, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Get_count(&st, MPI_INT, &cnt));
  CHECK(cnt == 10, "2 x contiguous(5) as ints: count %d", cnt);
  for (int i = 0; i < 10; i++) CHECK(rb[i] == prev * 100 + i, "contiguous element %d", i);
  CHECK_MPI(MPI_Isend(sb, 15, MPI_INT, next, 2, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(rb, 1, cc, prev, 2, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Get_count(&st, cc, &cnt));
  CHECK(cnt == 1, "15 ints as contiguous(3, contiguous(5)): count %d", cnt);
  /* 7 ints into contiguous(5) elements: 1.4 elements -> MPI_UNDEFINED. */
  CHECK_MPI(MPI_Isend(sb, 7, MPI_INT, next, 3, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(rb, 3, c5, prev, 3, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Get_count(&st, c5, &cnt));
  CHECK(cnt == MPI_UNDEFINED, "7 ints as contiguous(5): Get_count %d", cnt);
  CHECK(rb[6] == prev * 100 + 6, "partial contiguous data");

  /* Zero-size type: Get_count returns 0. */
  CHECK_MPI(MPI_Type_contiguous(0, MPI_INT, &c0));
  CHECK_MPI(MPI_Type_commit(&c0));
  check_type(c0, 0, 0, 0, "contiguous(0, INT)");
  CHECK_MPI(MPI_Isend(sb, 4, c0, next, 4, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(rb, 4, c0, prev, 4, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Get_count(&st, c0, &cnt));
  CHECK(cnt == 0, "zero-size type: Get_count %d", cnt);

  CHECK_MPI(MPI_Type_free(&c0));
  CHECK_MPI(MPI_Type_free(&cc));
  CHECK_MPI(MPI_Type_free(&c5));
  CHECK(c5 == MPI_DATATYPE_NULL && cc == MPI_DATATYPE_NULL, "Type_free did not set NULL");
}

/* ---- vector: matrix columns ---- */

#define ROWS 8
#define COLS 6

static double mval(int who, int r, int c) {
  return who * 1000.0 + r * 10.0 + c;
}

static void test_vector(void) {
  double m[ROWS][COLS], out[ROWS][COLS], col[ROWS], cols2[2 * ROWS];
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++) m[r][c] = mval(rank, r, c);
  MPI_Datatype column, twocols;
  CHECK_MPI(MPI_Type_vector(ROWS, 1, COLS, MPI_DOUBLE, &column));
  CHECK_MPI(MPI_Type_commit(&column));
  check_type(column, ROWS * 8, 0, ((ROWS - 1) * COLS + 1) * 8, "column vector");
  CHECK_MPI(MPI_Type_vector(ROWS, 2, COLS, MPI_DOUBLE, &twocols));
  CHECK_MPI(MPI_Type_commit(&twocols));
  check_type(twocols, ROWS * 16, 0, ((ROWS - 1) * COLS + 2) * 8, "two-column vector");

  MPI_Request rq;
  MPI_Status st;
  int cnt;
  /* Column 3 -> contiguous. */
  CHECK_MPI(MPI_Isend(&m[0][3], 1, column, next, 10, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(col, ROWS, MPI_DOUBLE, prev, 10, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Get_count(&st, MPI_DOUBLE, &cnt));
  CHECK(cnt == ROWS, "column as doubles: count %d", cnt);
  for (int r = 0; r < ROWS; r++) CHECK(col[r] == mval(prev, r, 3), "column element %d", r);
  /* Columns 1-2 -> contiguous (row-interleaved: m[r][1], m[r][2]). */
  CHECK_MPI(MPI_Isend(&m[0][1], 1, twocols, next, 11, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(cols2, 2 * ROWS, MPI_DOUBLE, prev, 11, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int r = 0; r < ROWS; r++)
    CHECK(cols2[2 * r] == mval(prev, r, 1) && cols2[2 * r + 1] == mval(prev, r, 2),
          "two-column element %d", r);
  /* Contiguous -> column 5 of out; the other columns untouched. */
  for (int r = 0; r < ROWS; r++) {
    col[r] = mval(rank, r, 99);
    for (int c = 0; c < COLS; c++) out[r][c] = -1.0;
  }
  CHECK_MPI(MPI_Isend(col, ROWS, MPI_DOUBLE, next, 12, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(&out[0][5], 1, column, prev, 12, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Get_count(&st, column, &cnt));
  CHECK(cnt == 1, "contiguous into a column: Get_count %d", cnt);
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++)
      CHECK(out[r][c] == (c == 5 ? mval(prev, r, 99) : -1.0), "column receive: out[%d][%d] = %g", r,
            c, out[r][c]);
  /* Column -> column (different column), on a large matrix so the
   * message is big: 512 x 64 doubles, column = 4 KiB, 16 columns. */
  enum { BR = 512, BC = 64 };
  double *big = malloc(BR * BC * sizeof *big), *bout = malloc(BR * BC * sizeof *bout);
  for (int i = 0; i < BR * BC; i++) {
    big[i] = rank * 1e6 + i;
    bout[i] = -1;
  }
  MPI_Datatype bcol, bcols;
  CHECK_MPI(MPI_Type_vector(BR, 1, BC, MPI_DOUBLE, &bcol));
  CHECK_MPI(MPI_Type_commit(&bcol));
  CHECK_MPI(MPI_Type_vector(BR, 16, BC, MPI_DOUBLE, &bcols));
  CHECK_MPI(MPI_Type_commit(&bcols));
  CHECK_MPI(MPI_Isend(big + 7, 1, bcols, next, 13, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(bout + 40, 1, bcols, prev, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int r = 0; r < BR; r++)
    for (int c = 0; c < BC; c++) {
      double want = c >= 40 && c < 56 ? prev * 1e6 + r * BC + (c - 33) : -1;
      CHECK(bout[r * BC + c] == want, "big column block [%d][%d]", r, c);
    }
  /* Vector of a vector: every other column (stride in units of the inner
   * type's extent would be awkward; use a vector of contiguous pairs). */
  MPI_Datatype pair, vpairs;
  CHECK_MPI(MPI_Type_contiguous(2, MPI_DOUBLE, &pair));
  CHECK_MPI(MPI_Type_vector(ROWS, 1, COLS / 2, pair, &vpairs)); /* cols 0-1 of each row */
  CHECK_MPI(MPI_Type_commit(&vpairs));
  /* pair may be freed now: vpairs keeps working. */
  CHECK_MPI(MPI_Type_free(&pair));
  check_type(vpairs, ROWS * 16, 0, ((ROWS - 1) * (COLS / 2) + 1) * 16, "vector of pairs");
  CHECK_MPI(MPI_Isend(&m[0][0], 1, vpairs, next, 14, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(cols2, 2 * ROWS, MPI_DOUBLE, prev, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int r = 0; r < ROWS; r++)
    CHECK(cols2[2 * r] == mval(prev, r, 0) && cols2[2 * r + 1] == mval(prev, r, 1),
          "vector of pairs row %d", r);
  /* Derived type in a collective: Bcast a column from the last rank. */
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++) out[r][c] = rank == size - 1 ? mval(size - 1, r, c) : -1.0;
  CHECK_MPI(MPI_Bcast(&out[0][2], 1, column, size - 1, MPI_COMM_WORLD));
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++)
      CHECK(out[r][c] == (c == 2 || rank == size - 1 ? mval(size - 1, r, c) : -1.0),
            "Bcast of a column: [%d][%d]", r, c);
  /* Gather one column from everyone into contiguous rows at rank 0. */
  double *rows = malloc(size * ROWS * sizeof *rows);
  CHECK_MPI(MPI_Gather(&m[0][4], 1, column, rows, ROWS, MPI_DOUBLE, 0, MPI_COMM_WORLD));
  if (rank == 0)
    for (int p = 0; p < size; p++)
      for (int r = 0; r < ROWS; r++)
        CHECK(rows[p * ROWS + r] == mval(p, r, 4), "Gather of columns [%d][%d]", p, r);
  free(rows);

  /* Type_free while an operation using the type is pending. */
  CHECK_MPI(MPI_Irecv(bout, 1, bcol, prev, 15, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Type_free(&bcol));
  CHECK(bcol == MPI_DATATYPE_NULL, "Type_free did not set MPI_DATATYPE_NULL");
  CHECK_MPI(MPI_Send(big, BR, MPI_DOUBLE, next, 15, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int r = 0; r < BR; r++)
    CHECK(bout[r * BC] == prev * 1e6 + r, "receive with a freed type: row %d", r);

  CHECK_MPI(MPI_Type_free(&bcols));
  CHECK_MPI(MPI_Type_free(&vpairs));
  CHECK_MPI(MPI_Type_free(&twocols));
  CHECK_MPI(MPI_Type_free(&column));
  free(big);
  free(bout);
}

/* ---- indexed ---- */

static void test_indexed(void) {
  int bl[3] = {1, 2, 3}, dp[3] = {5, 0, 10};
  MPI_Datatype idx;
  CHECK_MPI(MPI_Type_indexed(3, bl, dp, MPI_INT, &idx));
  CHECK_MPI(MPI_Type_commit(&idx));
  check_type(idx, 6 * 4, 0, 13 * 4, "indexed {1@5, 2@0, 3@10}");
  int src[16], dst[16];
  for (int i = 0; i < 16; i++) src[i] = rank * 100 + i;
  MPI_Request rq;
  MPI_Status st;
  int cnt;
  /* The type map order (5, 0, 1, 10, 11, 12) is the message order. */
  CHECK_MPI(MPI_Isend(src, 1, idx, next, 20, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(dst, 16, MPI_INT, prev, 20, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Get_count(&st, MPI_INT, &cnt));
  CHECK(cnt == 6, "indexed as ints: count %d", cnt);
  static const int order[6] = {5, 0, 1, 10, 11, 12};
  for (int k = 0; k < 6; k++)
    CHECK(dst[k] == prev * 100 + order[k], "indexed element %d: %d", k, dst[k]);
  /* Contiguous -> indexed: scattered into place, holes untouched. */
  int six[6];
  for (int k = 0; k < 6; k++) six[k] = rank * 100 + 50 + k;
  for (int i = 0; i < 16; i++) dst[i] = -1;
  CHECK_MPI(MPI_Isend(six, 6, MPI_INT, next, 21, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(dst, 1, idx, prev, 21, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int i = 0; i < 16; i++) {
    int want = -1;
    for (int k = 0; k < 6; k++)
      if (order[k] == i) want = prev * 100 + 50 + k;
    CHECK(dst[i] == want, "indexed receive dst[%d] = %d, want %d", i, dst[i], want);
  }
  /* Two indexed elements: the second starts one extent (13 ints) later. */
  int src2[26], dst2[12];
  for (int i = 0; i < 26; i++) src2[i] = rank * 100 + i;
  CHECK_MPI(MPI_Isend(src2, 2, idx, next, 22, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(dst2, 12, MPI_INT, prev, 22, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int k = 0; k < 12; k++)
    CHECK(dst2[k] == prev * 100 + order[k % 6] + (k / 6) * 13, "2 x indexed element %d", k);
  CHECK_MPI(MPI_Get_count(&st, MPI_INT, &cnt));
  CHECK(cnt == 12, "2 x indexed: count %d", cnt);
  /* Receiving as idx: the count is in idx elements. */
  CHECK_MPI(MPI_Isend(src2, 12, MPI_INT, next, 23, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(src2, 2, idx, prev, 23, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Get_count(&st, idx, &cnt));
  CHECK(cnt == 2, "Get_count in indexed elements: %d", cnt);
  CHECK_MPI(MPI_Type_free(&idx));

  /* Indexed with a zero-length block and an indexed of a vector. */
  int bl2[3] = {2, 0, 1}, dp2[3] = {1, 3, 4};
  CHECK_MPI(MPI_Type_indexed(3, bl2, dp2, MPI_INT, &idx));
  CHECK_MPI(MPI_Type_commit(&idx));
  check_type(idx, 12, 4, 16, "indexed {2@1, 0@3, 1@4}");
  CHECK_MPI(MPI_Type_free(&idx));
}

/* ---- Get_address and MPI_BOTTOM ---- */

static void test_addresses(void) {
  int a[10] = {0};
  MPI_Aint a0, a3, b0;
  CHECK_MPI(MPI_Get_address(&a[0], &a0));
  CHECK_MPI(MPI_Get_address(&a[3], &a3));
  CHECK(a3 - a0 == 3 * (MPI_Aint)sizeof(int), "Get_address difference %ld", (long)(a3 - a0));

  /* Relative displacements between two separate objects, computed with
   * Get_address, used in an indexed type relative to the first one. */
  int *blockA = malloc(64 * sizeof(int));
  int *blockB = blockA + 40; /* same allocation: displacement is exact */
  for (int i = 0; i < 64; i++) blockA[i] = rank * 1000 + i;
  CHECK_MPI(MPI_Get_address(blockA, &a0));
  CHECK_MPI(MPI_Get_address(blockB, &b0));
  int bl[2] = {3, 2}, dp[2] = {0, (int)((b0 - a0) / (MPI_Aint)sizeof(int))};
  MPI_Datatype t;
  CHECK_MPI(MPI_Type_indexed(2, bl, dp, MPI_INT, &t));
  CHECK_MPI(MPI_Type_commit(&t));
  int got[5];
  MPI_Request rq;
  CHECK_MPI(MPI_Isend(blockA, 1, t, next, 30, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(got, 5, MPI_INT, prev, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  CHECK(got[0] == prev * 1000 && got[2] == prev * 1000 + 2 && got[3] == prev * 1000 + 40 &&
            got[4] == prev * 1000 + 41,
        "Get_address-based indexed type");
  CHECK_MPI(MPI_Type_free(&t));
  free(blockA);

  /* MPI_BOTTOM: a type whose displacements are absolute addresses. With
   * only Type_indexed available the displacements are ints in units of
   * the old type, so the buffer must sit at a low address: map one at a
   * hint address (a plain POSIX mmap, not an MPI feature). */
  void *hint = (void *)(uintptr_t)0x10000000u;
  size_t len = 1 << 16;
  int *low = mmap(hint, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  MPI_Aint abs0 = 0;
  int ok = low != MAP_FAILED;
  if (ok) {
    CHECK_MPI(MPI_Get_address(low, &abs0));
    ok = abs0 > 0 && abs0 % (MPI_Aint)sizeof(int) == 0 &&
         abs0 / (MPI_Aint)sizeof(int) + 1000 < 0x7fffffff;
  }
  int all_ok = 0;
  CHECK_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
  if (all_ok) {
    for (int i = 0; i < 100; i++) low[i] = rank * 1000 + i;
    int base = (int)(abs0 / (MPI_Aint)sizeof(int));
    int bl2[2] = {2, 3}, dp2[2] = {base + 50, base + 10};
    CHECK_MPI(MPI_Type_indexed(2, bl2, dp2, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    int recv[5] = {-1, -1, -1, -1, -1};
    /* Send from MPI_BOTTOM with the absolute type, receive normally... */
    CHECK_MPI(MPI_Isend(MPI_BOTTOM, 1, t, next, 31, MPI_COMM_WORLD, &rq));
    CHECK_MPI(MPI_Recv(recv, 5, MPI_INT, prev, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(recv[0] == prev * 1000 + 50 && recv[1] == prev * 1000 + 51 &&
              recv[2] == prev * 1000 + 10 && recv[4] == prev * 1000 + 12,
          "send from MPI_BOTTOM: %d %d %d", recv[0], recv[1], recv[2]);
    /* ... and receive into MPI_BOTTOM. */
    int five[5];
    for (int k = 0; k < 5; k++) five[k] = rank * 1000 + 500 + k;
    for (int i = 0; i < 100; i++) low[i] = -1;
    CHECK_MPI(MPI_Isend(five, 5, MPI_INT, next, 32, MPI_COMM_WORLD, &rq));
    CHECK_MPI(MPI_Recv(MPI_BOTTOM, 1, t, prev, 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(low[50] == prev * 1000 + 500 && low[51] == prev * 1000 + 501 &&
              low[10] == prev * 1000 + 502 && low[12] == prev * 1000 + 504 && low[13] == -1 &&
              low[49] == -1,
          "receive into MPI_BOTTOM");
    CHECK_MPI(MPI_Type_free(&t));
  } else {
    test_note("datatypes: MPI_BOTTOM part skipped (no low address mapping)");
  }
  if (low != MAP_FAILED) munmap(low, len);
}

/* ---- pair types in messages (padding must not be sent as data) ---- */

static void test_pairs(void) {
  struct {
    double v;
    int i;
  } s[3], r[3];
  memset(s, 0x5a, sizeof s); /* padding garbage */
  for (int k = 0; k < 3; k++) {
    s[k].v = rank + k * 0.5;
    s[k].i = rank * 10 + k;
  }
  memset(r, 0, sizeof r);
  MPI_Request rq;
  MPI_Status st;
  CHECK_MPI(MPI_Isend(s, 3, MPI_DOUBLE_INT, next, 40, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(r, 3, MPI_DOUBLE_INT, prev, 40, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int k = 0; k < 3; k++)
    CHECK(r[k].v == prev + k * 0.5 && r[k].i == prev * 10 + k, "DOUBLE_INT element %d", k);
  int cnt;
  CHECK_MPI(MPI_Get_count(&st, MPI_DOUBLE_INT, &cnt));
  CHECK(cnt == 3, "DOUBLE_INT count %d", cnt);
  /* A vector of pair types (every other struct). */
  struct {
    short v;
    int i;
  } si[6], so[6];
  for (int k = 0; k < 6; k++) {
    si[k].v = (short)(rank * 10 + k);
    si[k].i = -k;
    so[k].v = -1;
    so[k].i = -1;
  }
  MPI_Datatype every_other;
  CHECK_MPI(MPI_Type_vector(3, 1, 2, MPI_SHORT_INT, &every_other));
  CHECK_MPI(MPI_Type_commit(&every_other));
  CHECK_MPI(MPI_Isend(si, 1, every_other, next, 41, MPI_COMM_WORLD, &rq));
  CHECK_MPI(MPI_Recv(so, 3, MPI_SHORT_INT, prev, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  for (int k = 0; k < 3; k++)
    CHECK(so[k].v == prev * 10 + 2 * k && so[k].i == -2 * k, "vector of SHORT_INT %d", k);
  CHECK_MPI(MPI_Type_free(&every_other));
}

/* Subarrays (C and Fortran order), indexed blocks, hindexed, Type_dup,
 * true extents, the _x inquiries, Get_elements, Aint arithmetic. */
static void test_more_constructors(void) {
  /* A 3x2 block at (1, 2) of a 4x5 C array of ints, sent whole and received
   * contiguous. */
  int sizes[2] = {4, 5}, sub[2] = {3, 2}, starts[2] = {1, 2};
  MPI_Datatype block;
  CHECK_MPI(MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &block));
  CHECK_MPI(MPI_Type_commit(&block));
  check_type(block, 6 * (int)sizeof(int), 0, 20 * (MPI_Aint)sizeof(int), "subarray C");
  int a[20], got[6];
  for (int i = 0; i < 20; i++) a[i] = 100 * rank + i;
  CHECK_MPI(MPI_Sendrecv(a, 1, block, next, 40, got, 6, MPI_INT, prev, 40, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 2; c++)
      CHECK(got[r * 2 + c] == 100 * prev + (1 + r) * 5 + 2 + c, "subarray C (%d, %d): %d", r, c,
            got[r * 2 + c]);
  MPI_Aint tlb = -1, text = -1;
  CHECK_MPI(MPI_Type_get_true_extent(block, &tlb, &text));
  CHECK(tlb == 7 * (MPI_Aint)sizeof(int) && text == 12 * (MPI_Aint)sizeof(int),
        "subarray true lb %ld extent %ld", (long)tlb, (long)text);
  CHECK_MPI(MPI_Type_free(&block));
  /* Fortran order: the first index fastest. sizes (4, 5) column-major. */
  CHECK_MPI(MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_INT, &block));
  CHECK_MPI(MPI_Type_commit(&block));
  CHECK_MPI(MPI_Sendrecv(a, 1, block, next, 41, got, 6, MPI_INT, prev, 41, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
  for (int c = 0; c < 2; c++)
    for (int r = 0; r < 3; r++)
      CHECK(got[c * 3 + r] == 100 * prev + (2 + c) * 4 + 1 + r, "subarray Fortran (%d, %d)", r, c);
  CHECK_MPI(MPI_Type_free(&block));

  /* Indexed blocks of 2 at 0, 5 and 8; hindexed the same in bytes. */
  int displs[3] = {8, 0, 5};
  MPI_Aint hdispls[3] = {8 * sizeof(int), 0, 5 * sizeof(int)};
  int lens[3] = {2, 2, 2};
  MPI_Datatype ib, hi, hib, dup;
  CHECK_MPI(MPI_Type_create_indexed_block(3, 2, displs, MPI_INT, &ib));
  CHECK_MPI(MPI_Type_create_hindexed(3, lens, hdispls, MPI_INT, &hi));
  CHECK_MPI(MPI_Type_create_hindexed_block(3, 2, hdispls, MPI_INT, &hib));
  CHECK_MPI(MPI_Type_dup(ib, &dup));
  MPI_Datatype all[4] = {ib, hi, hib, dup};
  for (int k = 0; k < 4; k++) {
    CHECK_MPI(MPI_Type_commit(&all[k]));
    check_type(all[k], 6 * (int)sizeof(int), 0, 10 * (MPI_Aint)sizeof(int), "indexed blocks");
    CHECK_MPI(MPI_Sendrecv(a, 1, all[k], next, 42, got, 6, MPI_INT, prev, 42, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    const int want[6] = {8, 9, 0, 1, 5, 6};
    for (int i = 0; i < 6; i++)
      CHECK(got[i] == 100 * prev + want[i], "indexed blocks type %d element %d: %d", k, i, got[i]);
  }
  MPI_Count sx = -1, lbx = -1, extx = -1;
  CHECK_MPI(MPI_Type_size_x(hi, &sx));
  CHECK_MPI(MPI_Type_get_extent_x(hi, &lbx, &extx));
  CHECK(sx == 6 * (MPI_Count)sizeof(int) && lbx == 0 && extx == 10 * (MPI_Count)sizeof(int),
        "_x inquiries %lld %lld %lld", (long long)sx, (long long)lbx, (long long)extx);
  for (int k = 0; k < 4; k++) CHECK_MPI(MPI_Type_free(&all[k]));

  /* Get_elements: 5 ints received as a 2-int contiguous type: 2 whole and
   * a half, 5 basic elements. */
  MPI_Datatype two;
  CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &two));
  CHECK_MPI(MPI_Type_commit(&two));
  int five[5] = {1, 2, 3, 4, 5}, into[6];
  MPI_Status st;
  CHECK_MPI(MPI_Sendrecv(five, 5, MPI_INT, next, 43, into, 3, two, prev, 43, MPI_COMM_WORLD, &st));
  int n = -1, elems = -1;
  CHECK_MPI(MPI_Get_count(&st, two, &n));
  CHECK_MPI(MPI_Get_elements(&st, two, &elems));
  CHECK(n == MPI_UNDEFINED && elems == 5, "Get_count %d Get_elements %d", n, elems);
  MPI_Count ex = -1;
  CHECK_MPI(MPI_Get_elements_x(&st, two, &ex));
  CHECK(ex == 5, "Get_elements_x %lld", (long long)ex);
  CHECK_MPI(MPI_Type_free(&two));

  MPI_Aint p0, p1;
  CHECK_MPI(MPI_Get_address(&a[0], &p0));
  CHECK_MPI(MPI_Get_address(&a[3], &p1));
  CHECK(MPI_Aint_diff(p1, p0) == 3 * (MPI_Aint)sizeof(int), "Aint_diff");
  CHECK(MPI_Aint_add(p0, 3 * (MPI_Aint)sizeof(int)) == p1, "Aint_add");
}

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  rank = world_rank();
  size = world_size();
  next = (rank + 1) % size;
  prev = (rank + size - 1) % size;
  test_basic_sizes();
  test_contiguous();
  test_vector();
  test_indexed();
  test_addresses();
  test_pairs();
  test_more_constructors();
  test_done("datatypes");
  return 0;
}
