/* type_inquiry: datatype decoding, distributed arrays, datatype attributes.
 * Type_get_envelope / Type_get_contents for every constructor: the
 * combiner and arguments as given, predefined types returned as
 * themselves, and the type rebuilt from its contents transfers the same
 * data as the original (sent between ranks, received into both);
 * predefined types are MPI_COMBINER_NAMED. Type_create_darray: block,
 * cyclic, cyclic(k) and undistributed dimensions in 1-D and 2-D, C and
 * Fortran order, against hand-computed layouts and against ownership
 * computed element by element; a global array scattered from rank 0 with
 * darray types and gathered back. Type keyvals: copy callbacks run by
 * Type_dup (MPI_TYPE_NULL_COPY_FN, MPI_TYPE_DUP_FN, a user one with its
 * extra state), delete callbacks by Type_free, set_attr's replacement and
 * Type_delete_attr, an attribute outliving its freed keyval; a
 * communicator's keyval refused on a datatype. */
#include "mpi_check.h"

static int rank, size, next, prev;

/* ---- decoding ---- */

enum { kBuf = 4096 };

/* Sends 2 elements of t from a patterned buffer to the next rank and
 * receives the previous rank's into a buffer of -1s with u. */
static void transfer(MPI_Datatype t, MPI_Datatype u, int *out) {
  static int src[kBuf];
  for (int i = 0; i < kBuf; i++) src[i] = rank * 100000 + i;
  for (int i = 0; i < kBuf; i++) out[i] = -1;
  CHECK_MPI(MPI_Sendrecv(src + 64, 2, t, next, 7, out + 64, 2, u, prev, 7, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
}

/* t and u have one size, extent, true extent and the same data transfer. */
static void check_same(MPI_Datatype t, MPI_Datatype u, const char *what) {
  int st = -1, su = -2;
  MPI_Aint lt, et, lu, eu, tlt, tet, tlu, teu;
  CHECK_MPI(MPI_Type_size(t, &st));
  CHECK_MPI(MPI_Type_size(u, &su));
  CHECK_MPI(MPI_Type_get_extent(t, &lt, &et));
  CHECK_MPI(MPI_Type_get_extent(u, &lu, &eu));
  CHECK_MPI(MPI_Type_get_true_extent(t, &tlt, &tet));
  CHECK_MPI(MPI_Type_get_true_extent(u, &tlu, &teu));
  CHECK(st == su && lt == lu && et == eu && tlt == tlu && tet == teu,
        "%s: rebuilt size %d/%d lb %ld/%ld extent %ld/%ld", what, st, su, (long)lt, (long)lu,
        (long)et, (long)eu);
  static int a[kBuf], b[kBuf];
  transfer(t, t, a);
  transfer(u, u, b);
  for (int i = 0; i < kBuf; i++) CHECK(a[i] == b[i], "%s: rebuilt type moves int %d", what, i);
  transfer(t, u, b);
  for (int i = 0; i < kBuf; i++) CHECK(a[i] == b[i], "%s: sent as one, received as other", what);
}

static void free_if_derived(MPI_Datatype *t) {
  int ni, na, nd, combiner;
  CHECK_MPI(MPI_Type_get_envelope(*t, &ni, &na, &nd, &combiner));
  if (combiner != MPI_COMBINER_NAMED) CHECK_MPI(MPI_Type_free(t));
}

/* Decodes t, checks the combiner and argument counts, rebuilds it with
 * the same constructor and compares. The contents are returned in ints,
 * addrs, types (the caller checks them and frees derived types). */
static void decode(MPI_Datatype t, int want_combiner, int want_ni, int want_na, int want_nd,
                   int *ints, MPI_Aint *addrs, MPI_Datatype *types, const char *what) {
  int ni = -1, na = -1, nd = -1, combiner = -1;
  CHECK_MPI(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner));
  CHECK(combiner == want_combiner && ni == want_ni && na == want_na && nd == want_nd,
        "%s: envelope combiner %d (want %d), %d ints, %d addresses, %d types", what, combiner,
        want_combiner, ni, na, nd);
  CHECK_MPI(MPI_Type_get_contents(t, ni, na, nd, ints, addrs, types));
  MPI_Datatype u = MPI_DATATYPE_NULL;
  const int n = ints[0];
  switch (combiner) {
    case MPI_COMBINER_DUP:
      CHECK_MPI(MPI_Type_dup(types[0], &u));
      break;
    case MPI_COMBINER_CONTIGUOUS:
      CHECK_MPI(MPI_Type_contiguous(n, types[0], &u));
      break;
    case MPI_COMBINER_VECTOR:
      CHECK_MPI(MPI_Type_vector(n, ints[1], ints[2], types[0], &u));
      break;
    case MPI_COMBINER_HVECTOR:
      CHECK_MPI(MPI_Type_create_hvector(n, ints[1], addrs[0], types[0], &u));
      break;
    case MPI_COMBINER_INDEXED:
      CHECK_MPI(MPI_Type_indexed(n, ints + 1, ints + 1 + n, types[0], &u));
      break;
    case MPI_COMBINER_HINDEXED:
      CHECK_MPI(MPI_Type_create_hindexed(n, ints + 1, addrs, types[0], &u));
      break;
    case MPI_COMBINER_INDEXED_BLOCK:
      CHECK_MPI(MPI_Type_create_indexed_block(n, ints[1], ints + 2, types[0], &u));
      break;
    case MPI_COMBINER_HINDEXED_BLOCK:
      CHECK_MPI(MPI_Type_create_hindexed_block(n, ints[1], addrs, types[0], &u));
      break;
    case MPI_COMBINER_STRUCT:
      CHECK_MPI(MPI_Type_create_struct(n, ints + 1, addrs, types, &u));
      break;
    case MPI_COMBINER_SUBARRAY:
      CHECK_MPI(MPI_Type_create_subarray(n, ints + 1, ints + 1 + n, ints + 1 + 2 * n,
                                         ints[1 + 3 * n], types[0], &u));
      break;
    case MPI_COMBINER_DARRAY: {
      const int d = ints[2];
      CHECK_MPI(MPI_Type_create_darray(ints[0], ints[1], d, ints + 3, ints + 3 + d,
                                       ints + 3 + 2 * d, ints + 3 + 3 * d, ints[3 + 4 * d],
                                       types[0], &u));
      break;
    }
    case MPI_COMBINER_RESIZED:
      CHECK_MPI(MPI_Type_create_resized(types[0], addrs[0], addrs[1], &u));
      break;
    default:
      CHECK(0, "%s: combiner %d", what, combiner);
  }
  CHECK_MPI(MPI_Type_commit(&u));
  MPI_Datatype tc;
  CHECK_MPI(MPI_Type_dup(t, &tc));
  CHECK_MPI(MPI_Type_commit(&tc));
  check_same(tc, u, what);
  CHECK_MPI(MPI_Type_free(&tc));
  CHECK_MPI(MPI_Type_free(&u));
}

static void test_named(void) {
  MPI_Datatype named[] = {MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_BYTE, MPI_FLOAT_INT, MPI_2INT};
  for (unsigned k = 0; k < sizeof named / sizeof *named; k++) {
    int ni = -1, na = -1, nd = -1, combiner = -1;
    CHECK_MPI(MPI_Type_get_envelope(named[k], &ni, &na, &nd, &combiner));
    CHECK(combiner == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0,
          "predefined type %u: combiner %d (%d %d %d)", k, combiner, ni, na, nd);
  }
  /* Get_contents of a predefined type is erroneous. */
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int i[1];
  MPI_Aint a[1];
  MPI_Datatype t[1];
  CHECK(MPI_Type_get_contents(MPI_INT, 1, 1, 1, i, a, t) != MPI_SUCCESS,
        "Type_get_contents of MPI_INT succeeded");
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

static void test_contents(void) {
  int ints[64];
  MPI_Aint addrs[16];
  MPI_Datatype types[8], t, inner;

  CHECK_MPI(MPI_Type_contiguous(5, MPI_INT, &t));
  decode(t, MPI_COMBINER_CONTIGUOUS, 1, 0, 1, ints, addrs, types, "contiguous");
  CHECK(ints[0] == 5 && types[0] == MPI_INT, "contiguous contents");
  CHECK_MPI(MPI_Type_free(&t));

  CHECK_MPI(MPI_Type_vector(3, 2, 5, MPI_INT, &t));
  decode(t, MPI_COMBINER_VECTOR, 3, 0, 1, ints, addrs, types, "vector");
  CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 5 && types[0] == MPI_INT, "vector contents");
  /* A vector of a derived type: the inner type comes back as a new handle
   * (freed here) that works like the original, even after the original
   * handle was freed. */
  inner = t;
  CHECK_MPI(MPI_Type_vector(2, 1, 3, inner, &t));
  CHECK_MPI(MPI_Type_free(&inner));
  decode(t, MPI_COMBINER_VECTOR, 3, 0, 1, ints, addrs, types, "vector of vector");
  decode(types[0], MPI_COMBINER_VECTOR, 3, 0, 1, ints, addrs, types + 1, "inner vector");
  CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 5 && types[1] == MPI_INT, "inner contents");
  CHECK_MPI(MPI_Type_free(&types[0]));
  CHECK_MPI(MPI_Type_free(&t));

  CHECK_MPI(MPI_Type_create_hvector(3, 2, 28, MPI_INT, &t));
  decode(t, MPI_COMBINER_HVECTOR, 2, 1, 1, ints, addrs, types, "hvector");
  CHECK(ints[0] == 3 && ints[1] == 2 && addrs[0] == 28 && types[0] == MPI_INT, "hvector contents");
  CHECK_MPI(MPI_Type_free(&t));

  int bl[3] = {1, 2, 3}, dp[3] = {5, 0, 10};
  CHECK_MPI(MPI_Type_indexed(3, bl, dp, MPI_INT, &t));
  decode(t, MPI_COMBINER_INDEXED, 7, 0, 1, ints, addrs, types, "indexed");
  CHECK(ints[0] == 3 && ints[1] == 1 && ints[3] == 3 && ints[4] == 5 && ints[6] == 10,
        "indexed contents");
  CHECK_MPI(MPI_Type_free(&t));

  MPI_Aint hdp[3] = {40, 0, 12};
  CHECK_MPI(MPI_Type_create_hindexed(3, bl, hdp, MPI_SHORT, &t));
  decode(t, MPI_COMBINER_HINDEXED, 4, 3, 1, ints, addrs, types, "hindexed");
  CHECK(ints[0] == 3 && ints[2] == 2 && addrs[0] == 40 && addrs[2] == 12 && types[0] == MPI_SHORT,
        "hindexed contents");
  CHECK_MPI(MPI_Type_free(&t));

  CHECK_MPI(MPI_Type_create_indexed_block(3, 2, dp, MPI_INT, &t));
  decode(t, MPI_COMBINER_INDEXED_BLOCK, 5, 0, 1, ints, addrs, types, "indexed_block");
  CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 5 && ints[4] == 10, "indexed_block contents");
  CHECK_MPI(MPI_Type_free(&t));

  CHECK_MPI(MPI_Type_create_hindexed_block(3, 2, hdp, MPI_INT, &t));
  decode(t, MPI_COMBINER_HINDEXED_BLOCK, 2, 3, 1, ints, addrs, types, "hindexed_block");
  CHECK(ints[0] == 3 && ints[1] == 2 && addrs[1] == 0 && addrs[2] == 12, "hindexed_block contents");
  CHECK_MPI(MPI_Type_free(&t));

  /* A struct of a predefined and a derived type. */
  CHECK_MPI(MPI_Type_vector(2, 1, 3, MPI_INT, &inner));
  int sbl[3] = {2, 1, 3};
  MPI_Aint sdp[3] = {0, 16, 48};
  MPI_Datatype sty[3] = {MPI_INT, inner, MPI_CHAR};
  CHECK_MPI(MPI_Type_create_struct(3, sbl, sdp, sty, &t));
  CHECK_MPI(MPI_Type_free(&inner));
  decode(t, MPI_COMBINER_STRUCT, 4, 3, 3, ints, addrs, types, "struct");
  CHECK(ints[0] == 3 && ints[1] == 2 && ints[3] == 3 && addrs[1] == 16 && addrs[2] == 48 &&
            types[0] == MPI_INT && types[2] == MPI_CHAR,
        "struct contents");
  decode(types[1], MPI_COMBINER_VECTOR, 3, 0, 1, ints, addrs, types + 3, "struct's vector");
  free_if_derived(&types[1]);
  CHECK_MPI(MPI_Type_free(&t));

  int sizes[3] = {4, 5, 3}, sub[3] = {2, 3, 2}, starts[3] = {1, 2, 0};
  for (int order = 0; order < 2; order++) {
    const int o = order ? MPI_ORDER_FORTRAN : MPI_ORDER_C;
    CHECK_MPI(MPI_Type_create_subarray(3, sizes, sub, starts, o, MPI_INT, &t));
    decode(t, MPI_COMBINER_SUBARRAY, 11, 0, 1, ints, addrs, types, "subarray");
    CHECK(ints[0] == 3 && ints[1] == 4 && ints[4] == 2 && ints[7] == 1 && ints[8] == 2 &&
              ints[10] == o,
          "subarray contents");
    CHECK_MPI(MPI_Type_free(&t));
  }

  int gs[2] = {7, 5}, ds[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK},
      da[2] = {2, MPI_DISTRIBUTE_DFLT_DARG}, ps[2] = {3, 2};
  for (int r = 0; r < 6; r++) {
    CHECK_MPI(MPI_Type_create_darray(6, r, 2, gs, ds, da, ps, MPI_ORDER_C, MPI_INT, &t));
    decode(t, MPI_COMBINER_DARRAY, 12, 0, 1, ints, addrs, types, "darray");
    CHECK(ints[0] == 6 && ints[1] == r && ints[2] == 2 && ints[3] == 7 &&
              ints[5] == MPI_DISTRIBUTE_CYCLIC && ints[7] == 2 &&
              ints[8] == MPI_DISTRIBUTE_DFLT_DARG && ints[9] == 3 && ints[11] == MPI_ORDER_C,
          "darray contents");
    CHECK_MPI(MPI_Type_free(&t));
  }

  CHECK_MPI(MPI_Type_create_resized(MPI_INT, -4, 12, &t));
  decode(t, MPI_COMBINER_RESIZED, 0, 2, 1, ints, addrs, types, "resized");
  CHECK(addrs[0] == -4 && addrs[1] == 12 && types[0] == MPI_INT, "resized contents");
  CHECK_MPI(MPI_Type_free(&t));

  /* Dup of a predefined and of a derived type. */
  CHECK_MPI(MPI_Type_dup(MPI_DOUBLE, &t));
  decode(t, MPI_COMBINER_DUP, 0, 0, 1, ints, addrs, types, "dup of MPI_DOUBLE");
  CHECK(types[0] == MPI_DOUBLE, "dup contents");
  CHECK_MPI(MPI_Type_free(&t));
  CHECK_MPI(MPI_Type_contiguous(3, MPI_INT, &inner));
  CHECK_MPI(MPI_Type_dup(inner, &t));
  decode(t, MPI_COMBINER_DUP, 0, 0, 1, ints, addrs, types, "dup of contiguous");
  decode(types[0], MPI_COMBINER_CONTIGUOUS, 1, 0, 1, ints, addrs, types + 1, "dup's contiguous");
  CHECK_MPI(MPI_Type_free(&types[0]));
  CHECK_MPI(MPI_Type_free(&t));
  CHECK_MPI(MPI_Type_free(&inner));
}

/* ---- distributed arrays ---- */

/* Whether the process at coord of p owns index i of n. */
static int owns(int i, int n, int distrib, int darg, int p, int coord) {
  if (distrib == MPI_DISTRIBUTE_NONE) return 1;
  if (distrib == MPI_DISTRIBUTE_BLOCK) {
    const int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (n + p - 1) / p : darg;
    return i / b == coord;
  }
  const int k = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
  return (i / k) % p == coord;
}

/* The storage offsets (in elements) that rank r owns, in storage order:
 * the type map of its darray type. Returns how many. */
static int expected(int nprocs, int r, int ndims, const int *gs, const int *ds, const int *da,
                    const int *ps, int order, int *out) {
  int coords[3], left = r, below = nprocs, total = 1, n = 0;
  for (int d = 0; d < ndims; d++) {
    below /= ps[d];
    coords[d] = left / below;
    left %= below;
    total *= gs[d];
  }
  for (int off = 0; off < total; off++) {
    int rest = off, mine = 1;
    for (int k = 0; k < ndims; k++) { /* fastest dimension first */
      const int d = order == MPI_ORDER_C ? ndims - 1 - k : k;
      mine &= owns(rest % gs[d], gs[d], ds[d], da[d], ps[d], coords[d]);
      rest /= gs[d];
    }
    if (mine) out[n++] = off;
  }
  return n;
}

/* The offsets a darray type picks out of an array holding its offsets. */
static int picked(MPI_Datatype t, int total, int *out) {
  int *a = malloc(total * sizeof *a), n = -1;
  for (int i = 0; i < total; i++) a[i] = i;
  MPI_Status st;
  CHECK_MPI(MPI_Sendrecv(a, 1, t, 0, 0, out, total, MPI_INT, 0, 0, MPI_COMM_SELF, &st));
  CHECK_MPI(MPI_Get_count(&st, MPI_INT, &n));
  free(a);
  return n;
}

static void check_darray(int nprocs, int r, int ndims, const int *gs, const int *ds, const int *da,
                         const int *ps, int order, const int *hand, int nhand, const char *what) {
  MPI_Datatype t;
  CHECK_MPI(MPI_Type_create_darray(nprocs, r, ndims, gs, ds, da, ps, order, MPI_INT, &t));
  CHECK_MPI(MPI_Type_commit(&t));
  int total = 1;
  for (int d = 0; d < ndims; d++) total *= gs[d];
  int want[256], got[256], s = -1;
  const int n = expected(nprocs, r, ndims, gs, ds, da, ps, order, want);
  MPI_Aint lb = -1, ext = -1;
  CHECK_MPI(MPI_Type_size(t, &s));
  CHECK_MPI(MPI_Type_get_extent(t, &lb, &ext));
  CHECK(s == n * (int)sizeof(int) && lb == 0 && ext == total * (MPI_Aint)sizeof(int),
        "%s rank %d: size %d lb %ld extent %ld, want %d elements of %d", what, r, s, (long)lb,
        (long)ext, n, total);
  const int m = picked(t, total, got);
  CHECK(m == n, "%s rank %d: %d elements, want %d", what, r, m, n);
  for (int i = 0; i < n; i++) CHECK(got[i] == want[i], "%s rank %d element %d", what, r, i);
  if (hand != NULL) {
    CHECK(nhand == n, "%s rank %d: %d elements by hand, %d computed", what, r, nhand, n);
    for (int i = 0; i < n; i++)
      CHECK(got[i] == hand[i], "%s rank %d element %d: %d, by hand %d", what, r, i, got[i],
            hand[i]);
  }
  CHECK_MPI(MPI_Type_free(&t));
}

static void test_darray_layouts(void) {
  const int B = MPI_DISTRIBUTE_BLOCK, C = MPI_DISTRIBUTE_CYCLIC, N = MPI_DISTRIBUTE_NONE,
            D = MPI_DISTRIBUTE_DFLT_DARG, CO = MPI_ORDER_C, FO = MPI_ORDER_FORTRAN;
  /* 1-D, 10 elements over 3 processes. */
  int g1[1] = {10}, p1[1] = {3}, d1[1];
  static const int block[3][4] = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}};
  static const int cyc[3][4] = {{0, 3, 6, 9}, {1, 4, 7}, {2, 5, 8}};
  static const int cyc2[3][4] = {{0, 1, 6, 7}, {2, 3, 8, 9}, {4, 5}};
  static const int blk5[3][5] = {{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}, {0}};
  const int nblock[3] = {4, 4, 2}, ncyc[3] = {4, 3, 3}, ncyc2[3] = {4, 4, 2}, nblk5[3] = {5, 5, 0};
  for (int r = 0; r < 3; r++) {
    int dist[1] = {B};
    d1[0] = D;
    check_darray(3, r, 1, g1, dist, d1, p1, CO, block[r], nblock[r], "block");
    check_darray(3, r, 1, g1, dist, d1, p1, FO, block[r], nblock[r], "block (Fortran)");
    d1[0] = 5;
    check_darray(3, r, 1, g1, dist, d1, p1, CO, blk5[r], nblk5[r], "block(5)");
    dist[0] = C;
    d1[0] = D;
    check_darray(3, r, 1, g1, dist, d1, p1, CO, cyc[r], ncyc[r], "cyclic");
    d1[0] = 2;
    check_darray(3, r, 1, g1, dist, d1, p1, FO, cyc2[r], ncyc2[r], "cyclic(2)");
  }
  int none[1] = {N}, one[1] = {1}, dflt[1] = {D};
  static const int all10[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  check_darray(1, 0, 1, g1, none, dflt, one, CO, all10, 10, "none");

  /* 2-D: a 4x6 array over a 2x3 grid, rows in blocks, columns cyclic.
   * Rank 4 is at (1, 1): rows 2-3, columns 1 and 4. */
  int g2[2] = {4, 6}, p2[2] = {2, 3}, dist2[2] = {B, C}, da2[2] = {D, D};
  static const int c_r4[4] = {13, 16, 19, 22}; /* r * 6 + c */
  static const int f_r4[4] = {6, 7, 18, 19};   /* r + c * 4, rows fastest */
  check_darray(6, 4, 2, g2, dist2, da2, p2, CO, c_r4, 4, "2-D block x cyclic (C)");
  check_darray(6, 4, 2, g2, dist2, da2, p2, FO, f_r4, 4, "2-D block x cyclic (Fortran)");
  /* Every rank, every mix of distributions and both orders, and 3-D. */
  const int dists[4][2] = {{B, C}, {C, C}, {C, B}, {N, B}},
            dargs[4][2] = {{D, 2}, {3, 2}, {1, D}, {D, 3}};
  int g3[2] = {7, 9};
  for (int k = 0; k < 4; k++) {
    int ps[2] = {k == 3 ? 1 : 2, k == 3 ? 6 : 3};
    for (int o = 0; o < 2; o++)
      for (int r = 0; r < 6; r++)
        check_darray(6, r, 2, g3, dists[k], dargs[k], ps, o ? FO : CO, NULL, 0, "2-D");
  }
  int g4[3] = {5, 4, 6}, d4[3] = {C, B, C}, a4[3] = {2, D, D}, p4[3] = {2, 1, 2};
  for (int o = 0; o < 2; o++)
    for (int r = 0; r < 4; r++) check_darray(4, r, 3, g4, d4, a4, p4, o ? FO : CO, NULL, 0, "3-D");

#ifdef ROCL_MPI
  /* Wrong arguments (erroneous; the reference MPIs need not detect them,
   * and each misses one of these): a grid that is not the group, NONE over
   * several processes, blocks too small to cover the array. */
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_Datatype t;
  int two[1] = {2}, blk[1] = {B}, three[1] = {3};
  CHECK(MPI_Type_create_darray(3, 0, 1, g1, blk, dflt, two, CO, MPI_INT, &t) != MPI_SUCCESS,
        "darray: a grid of 2 for 3 processes");
  CHECK(MPI_Type_create_darray(2, 0, 1, g1, none, dflt, two, CO, MPI_INT, &t) != MPI_SUCCESS,
        "darray: MPI_DISTRIBUTE_NONE over 2 processes");
  CHECK(MPI_Type_create_darray(3, 0, 1, g1, blk, three, three, CO, MPI_INT, &t) != MPI_SUCCESS,
        "darray: blocks of 3 over 3 processes for 10 elements");
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
#endif
}

/* Rank 0 holds a global array of doubles (cyclic(2) rows x block columns
 * over a grid of all ranks, C order), sends each rank its part with that
 * rank's darray type and gathers the parts back into a fresh array. */
static void test_darray_transfer(void) {
  int dims[2] = {0, 0};
  CHECK_MPI(MPI_Dims_create(size, 2, dims));
  int gs[2] = {3 * dims[0] + 1, 2 * dims[1] + 3},
      ds[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK}, da[2] = {2, MPI_DISTRIBUTE_DFLT_DARG};
  const int total = gs[0] * gs[1];
  double *global = malloc(total * sizeof *global), *back = malloc(total * sizeof *back),
         *mine = malloc(total * sizeof *mine);
  for (int i = 0; i < total; i++) {
    global[i] = 0.5 + i;
    back[i] = -1;
  }
  int want[1024];
  const int n = expected(size, rank, 2, gs, ds, da, dims, MPI_ORDER_C, want);
  if (rank == 0) {
    MPI_Request *rq = malloc(size * sizeof *rq);
    MPI_Datatype *t = malloc(size * sizeof *t);
    for (int r = 0; r < size; r++) {
      CHECK_MPI(
          MPI_Type_create_darray(size, r, 2, gs, ds, da, dims, MPI_ORDER_C, MPI_DOUBLE, &t[r]));
      CHECK_MPI(MPI_Type_commit(&t[r]));
      CHECK_MPI(MPI_Isend(global, 1, t[r], r, 50, MPI_COMM_WORLD, &rq[r]));
    }
    CHECK_MPI(MPI_Recv(mine, total, MPI_DOUBLE, 0, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Waitall(size, rq, MPI_STATUSES_IGNORE));
    for (int r = 0; r < size; r++)
      CHECK_MPI(MPI_Irecv(back, 1, t[r], r, 51, MPI_COMM_WORLD, &rq[r]));
    CHECK_MPI(MPI_Send(mine, n, MPI_DOUBLE, 0, 51, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Waitall(size, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < total; i++)
      CHECK(back[i] == global[i], "darray gather: element %d is %g", i, back[i]);
    for (int r = 0; r < size; r++) CHECK_MPI(MPI_Type_free(&t[r]));
    free(t);
    free(rq);
  } else {
    MPI_Status st;
    int got = -1;
    CHECK_MPI(MPI_Recv(mine, total, MPI_DOUBLE, 0, 50, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_DOUBLE, &got));
    CHECK(got == n, "darray part of %d elements, want %d", got, n);
    CHECK_MPI(MPI_Send(mine, n, MPI_DOUBLE, 0, 51, MPI_COMM_WORLD));
  }
  for (int i = 0; i < n; i++)
    CHECK(mine[i] == 0.5 + want[i], "darray part element %d: %g, want %g", i, mine[i],
          0.5 + want[i]);
  free(global);
  free(back);
  free(mine);
}

/* ---- attributes ---- */

static int copies, deletes;
static int extra_state = 42;

static int copy_fn(MPI_Datatype t, int key, void *extra, void *in, void *out, int *flag) {
  (void)t;
  (void)key;
  CHECK(extra == &extra_state, "copy callback: extra state %p", extra);
  copies++;
  *(void **)out = (char *)in + 1;
  *flag = 1;
  return MPI_SUCCESS;
}

static int delete_fn(MPI_Datatype t, int key, void *value, void *extra) {
  (void)t;
  (void)key;
  (void)value;
  CHECK(extra == &extra_state, "delete callback: extra state %p", extra);
  deletes++;
  return MPI_SUCCESS;
}

static void test_attributes(void) {
  static char values[8];
  int key, nocopy, dupkey, flag = -1;
  void *v = NULL;
  CHECK_MPI(MPI_Type_create_keyval(copy_fn, delete_fn, &key, &extra_state));
  CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &nocopy, NULL));
  CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &dupkey, NULL));
  MPI_Datatype t, d, dd;
  CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &t));
  CHECK_MPI(MPI_Type_get_attr(t, key, &v, &flag));
  CHECK(flag == 0, "no attribute set yet: flag %d", flag);
  CHECK_MPI(MPI_Type_set_attr(t, key, &values[0]));
  CHECK_MPI(MPI_Type_set_attr(t, nocopy, &values[4]));
  CHECK_MPI(MPI_Type_set_attr(t, dupkey, &values[6]));
  CHECK_MPI(MPI_Type_get_attr(t, key, &v, &flag));
  CHECK(flag == 1 && v == &values[0], "get_attr: flag %d", flag);

  CHECK_MPI(MPI_Type_dup(t, &d));
  CHECK(copies == 1 && deletes == 0, "after Type_dup: %d copies, %d deletes", copies, deletes);
  CHECK_MPI(MPI_Type_get_attr(d, key, &v, &flag));
  CHECK(flag == 1 && v == &values[1], "the copy callback's value in the dup");
  CHECK_MPI(MPI_Type_get_attr(d, nocopy, &v, &flag));
  CHECK(flag == 0, "MPI_TYPE_NULL_COPY_FN: not in the dup");
  CHECK_MPI(MPI_Type_get_attr(d, dupkey, &v, &flag));
  CHECK(flag == 1 && v == &values[6], "MPI_TYPE_DUP_FN: the same value in the dup");
  CHECK_MPI(MPI_Type_dup(d, &dd));
  CHECK(copies == 2, "dup of the dup: %d copies", copies);
  CHECK_MPI(MPI_Type_get_attr(dd, key, &v, &flag));
  CHECK(flag == 1 && v == &values[2], "the copy of the copy");

  /* Freed in reverse order: Open MPI runs the delete callbacks when the
   * type object goes, which a type built from it (a dup) holds. */
  CHECK_MPI(MPI_Type_free(&dd));
  CHECK(deletes == 1, "after freeing the dup of the dup: %d deletes", deletes);
  CHECK_MPI(MPI_Type_free(&d));
  CHECK(deletes == 2, "after freeing the dup: %d deletes", deletes);
  CHECK_MPI(MPI_Type_set_attr(t, key, &values[3])); /* replaces: deletes the old value */
  CHECK(deletes == 3, "after replacing: %d deletes", deletes);
  CHECK_MPI(MPI_Type_get_attr(t, key, &v, &flag));
  CHECK(flag == 1 && v == &values[3], "the replaced value");
  CHECK_MPI(MPI_Type_delete_attr(t, key));
  CHECK(deletes == 4, "after Type_delete_attr: %d deletes", deletes);
  CHECK_MPI(MPI_Type_get_attr(t, key, &v, &flag));
  CHECK(flag == 0, "deleted attribute still there");
  /* Attributes on the type do not follow it into types built from it. */
  MPI_Datatype v2;
  CHECK_MPI(MPI_Type_set_attr(t, key, &values[5]));
  CHECK_MPI(MPI_Type_vector(2, 1, 2, t, &v2));
  CHECK(copies == 2, "a constructor copied attributes");
  CHECK_MPI(MPI_Type_get_attr(v2, key, &v, &flag));
  CHECK(flag == 0, "a vector has its old type's attribute");
  CHECK_MPI(MPI_Type_free(&v2));
  /* The keyval freed while t holds an attribute under it: the attribute
   * stays until t is freed, and its delete callback runs then. */
  CHECK_MPI(MPI_Type_free_keyval(&key));
  CHECK(key == MPI_KEYVAL_INVALID, "Type_free_keyval did not reset the key");
  CHECK_MPI(MPI_Type_free(&t));
  CHECK(deletes == 5 && copies == 2, "at the end: %d copies, %d deletes", copies, deletes);
  CHECK_MPI(MPI_Type_free_keyval(&nocopy));
  CHECK_MPI(MPI_Type_free_keyval(&dupkey));

  /* A communicator's keyval is not a datatype's. */
  int ckey;
  CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ckey, NULL));
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  CHECK(MPI_Type_set_attr(MPI_INT, ckey, &values[0]) != MPI_SUCCESS,
        "Type_set_attr with a communicator keyval succeeded");
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
  CHECK_MPI(MPI_Comm_free_keyval(&ckey));
}

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  rank = world_rank();
  size = world_size();
  next = (rank + 1) % size;
  prev = (rank + size - 1) % size;
  test_named();
  test_contents();
  test_darray_layouts();
  test_darray_transfer();
  test_attributes();
  test_done("type_inquiry");
  return 0;
}
