/* topo: Cartesian topologies and attribute caching.
 * Dims_create (balanced, fixed entries kept), Cart_create (periodic and
 * not; ranks beyond the grid get MPI_COMM_NULL), Cart_rank/coords (round
 * trip, wrap-around), Cart_shift (MPI_PROC_NULL at open edges), a halo
 * exchange along each dimension, Cart_get, Cartdim_get, Cart_sub (rows and
 * columns), Topo_test; keyvals: set/get/delete, the copy callback on
 * Comm_dup (MPI_COMM_DUP_FN and a counting one), the delete callback on
 * Comm_free, Comm_idup, attributes on MPI_COMM_SELF deleted at
 * MPI_Finalize. */
#include "mpi_check.h"

static int rank, size;

static void test_dims_create(void) {
  int d2[2] = {0, 0};
  CHECK_MPI(MPI_Dims_create(12, 2, d2));
  CHECK(d2[0] == 4 && d2[1] == 3, "Dims_create(12, 2) = %d x %d", d2[0], d2[1]);
  int d3[3] = {0, 0, 0};
  CHECK_MPI(MPI_Dims_create(8, 3, d3));
  CHECK(d3[0] == 2 && d3[1] == 2 && d3[2] == 2, "Dims_create(8, 3)");
  int fixed[3] = {0, 3, 0};
  CHECK_MPI(MPI_Dims_create(24, 3, fixed));
  CHECK(fixed[1] == 3 && fixed[0] * fixed[2] == 8 && fixed[0] >= fixed[2],
        "Dims_create with a fixed entry: %d %d %d", fixed[0], fixed[1], fixed[2]);
  int one[1] = {0};
  CHECK_MPI(MPI_Dims_create(7, 1, one));
  CHECK(one[0] == 7, "Dims_create(7, 1)");
}

static void test_cart(void) {
  int dims[2] = {0, 0}, periods[2] = {1, 0};
  CHECK_MPI(MPI_Dims_create(size, 2, dims));
  MPI_Comm cart;
  CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
  CHECK(cart != MPI_COMM_NULL, "every rank is in a grid of the whole size");
  int status = -1;
  CHECK_MPI(MPI_Topo_test(cart, &status));
  CHECK(status == MPI_CART, "Topo_test %d", status);
  CHECK_MPI(MPI_Topo_test(MPI_COMM_WORLD, &status));
  CHECK(status == MPI_UNDEFINED, "WORLD has no topology");
  int r = -1, coords[2], back = -1, nd = -1;
  CHECK_MPI(MPI_Comm_rank(cart, &r));
  CHECK_MPI(MPI_Cart_coords(cart, r, 2, coords));
  CHECK(coords[0] == r / dims[1] && coords[1] == r % dims[1], "row-major coordinates");
  CHECK_MPI(MPI_Cart_rank(cart, coords, &back));
  CHECK(back == r, "Cart_rank(Cart_coords(r)) = %d", back);
  CHECK_MPI(MPI_Cartdim_get(cart, &nd));
  CHECK(nd == 2, "Cartdim_get %d", nd);
  int gd[2], gp[2], gc[2];
  CHECK_MPI(MPI_Cart_get(cart, 2, gd, gp, gc));
  CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 && gp[1] == 0 && gc[0] == coords[0] &&
            gc[1] == coords[1],
        "Cart_get");
  /* Wrap-around in the periodic dimension. */
  int wrapped[2] = {coords[0] + dims[0], coords[1]};
  CHECK_MPI(MPI_Cart_rank(cart, wrapped, &back));
  CHECK(back == r, "periodic wrap: %d", back);
  /* Shifts: dimension 0 wraps, dimension 1 has open edges. */
  int src = -5, dst = -5;
  CHECK_MPI(MPI_Cart_shift(cart, 0, 1, &src, &dst));
  int up[2] = {(coords[0] + 1) % dims[0], coords[1]},
      down[2] = {(coords[0] + dims[0] - 1) % dims[0], coords[1]};
  int want_dst, want_src;
  MPI_Cart_rank(cart, up, &want_dst);
  MPI_Cart_rank(cart, down, &want_src);
  CHECK(dst == want_dst && src == want_src, "shift dim 0: %d %d", src, dst);
  CHECK_MPI(MPI_Cart_shift(cart, 1, 1, &src, &dst));
  CHECK(dst == (coords[1] + 1 < dims[1] ? r + 1 : MPI_PROC_NULL) &&
            src == (coords[1] > 0 ? r - 1 : MPI_PROC_NULL),
        "shift dim 1 (open): %d %d", src, dst);
  /* A halo exchange along dimension 1: each sends its rank right, gets
   * its left neighbour's (or nothing at the edge). */
  int got = -1;
  CHECK_MPI(
      MPI_Sendrecv(&r, 1, MPI_INT, dst, 7, &got, 1, MPI_INT, src, 7, cart, MPI_STATUS_IGNORE));
  CHECK(got == (src == MPI_PROC_NULL ? -1 : src), "halo got %d from %d", got, src);
  /* Rows and columns. */
  int keep_row[2] = {0, 1}, keep_col[2] = {1, 0};
  MPI_Comm row, col;
  CHECK_MPI(MPI_Cart_sub(cart, keep_row, &row));
  CHECK_MPI(MPI_Cart_sub(cart, keep_col, &col));
  int rs = -1, cs = -1, rr = -1, cr = -1;
  CHECK_MPI(MPI_Comm_size(row, &rs));
  CHECK_MPI(MPI_Comm_size(col, &cs));
  CHECK_MPI(MPI_Comm_rank(row, &rr));
  CHECK_MPI(MPI_Comm_rank(col, &cr));
  CHECK(rs == dims[1] && cs == dims[0] && rr == coords[1] && cr == coords[0],
        "Cart_sub: row %d/%d col %d/%d", rr, rs, cr, cs);
  int sum = 0;
  CHECK_MPI(MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, row));
  int want = 0;
  for (int k = 0; k < dims[1]; k++) want += coords[0] * dims[1] + k;
  CHECK(sum == want, "sum over a row %d want %d", sum, want);
  CHECK_MPI(MPI_Cartdim_get(row, &nd));
  CHECK(nd == 1, "a row is one-dimensional: %d", nd);
  CHECK_MPI(MPI_Comm_free(&row));
  CHECK_MPI(MPI_Comm_free(&col));
  CHECK_MPI(MPI_Comm_free(&cart));

  /* A grid smaller than the communicator: the others get MPI_COMM_NULL. */
  if (size >= 2) {
    int small[1] = {size - 1}, per[1] = {0};
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, small, per, 0, &cart));
    CHECK((rank == size - 1) == (cart == MPI_COMM_NULL), "rank %d beyond the grid", rank);
    if (cart != MPI_COMM_NULL) CHECK_MPI(MPI_Comm_free(&cart));
  }
}

static int copies, deletes;
static int count_copy(MPI_Comm c, int key, void *extra, void *in, void *out, int *flag) {
  (void)c, (void)key, (void)extra;
  copies++;
  *(void **)out = (char *)in + 1;
  *flag = 1;
  return MPI_SUCCESS;
}
static int count_delete(MPI_Comm c, int key, void *value, void *extra) {
  (void)c, (void)key, (void)value;
  deletes++;
  (*(int *)extra)++;
  return MPI_SUCCESS;
}

static int self_deleted_at_finalize;
static int self_delete(MPI_Comm c, int key, void *value, void *extra) {
  (void)c, (void)key, (void)value, (void)extra;
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (!finalized) self_deleted_at_finalize = 1; /* MPI is still usable */
  return MPI_SUCCESS;
}

static void test_attributes(void) {
  static char base[4];
  int extra_deletes = 0;
  int key = MPI_KEYVAL_INVALID, key2 = MPI_KEYVAL_INVALID;
  CHECK_MPI(MPI_Comm_create_keyval(count_copy, count_delete, &key, &extra_deletes));
  CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &key2, NULL));
  MPI_Comm c;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
  void *v = NULL;
  int flag = -1;
  CHECK_MPI(MPI_Comm_get_attr(c, key, &v, &flag));
  CHECK(!flag, "an attribute before any was set");
  CHECK_MPI(MPI_Comm_set_attr(c, key, base));
  CHECK_MPI(MPI_Comm_set_attr(c, key2, base + 2));
  CHECK_MPI(MPI_Comm_get_attr(c, key, &v, &flag));
  CHECK(flag && v == base, "get_attr");
  /* Dup runs the copy callbacks. */
  MPI_Comm d;
  CHECK_MPI(MPI_Comm_dup(c, &d));
  CHECK(copies == 1, "copy callback ran %d times", copies);
  CHECK_MPI(MPI_Comm_get_attr(d, key, &v, &flag));
  CHECK(flag && v == base + 1, "the copied attribute");
  CHECK_MPI(MPI_Comm_get_attr(d, key2, &v, &flag));
  CHECK(flag && v == base + 2, "MPI_COMM_DUP_FN copied");
  /* Replacing runs the delete callback for the old value. */
  CHECK_MPI(MPI_Comm_set_attr(c, key, base + 3));
  CHECK(deletes == 1, "replacing deleted %d", deletes);
  CHECK_MPI(MPI_Comm_delete_attr(c, key));
  CHECK(deletes == 2, "delete_attr deleted %d", deletes);
  CHECK_MPI(MPI_Comm_get_attr(c, key, &v, &flag));
  CHECK(!flag, "a deleted attribute is gone");
  /* Freeing a communicator deletes its attributes. */
  CHECK_MPI(MPI_Comm_free(&d));
  CHECK(deletes == 3 && extra_deletes == 3, "Comm_free deleted %d", deletes);
  CHECK_MPI(MPI_Comm_free(&c));
  CHECK_MPI(MPI_Comm_free_keyval(&key));
  CHECK(key == MPI_KEYVAL_INVALID, "free_keyval resets the key");
  CHECK_MPI(MPI_Comm_free_keyval(&key2));
  /* Comm_idup. */
  MPI_Request rq;
  CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &c, &rq));
  CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  int s = -1;
  CHECK_MPI(MPI_Comm_size(c, &s));
  CHECK(s == size, "idup size %d", s);
  CHECK_MPI(MPI_Barrier(c));
  CHECK_MPI(MPI_Comm_free(&c));
  /* An attribute on MPI_COMM_SELF: deleted at MPI_Finalize, before MPI ends. */
  int self_key;
  CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &self_key, NULL));
  CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, self_key, base));
}

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  test_dims_create();
  test_cart();
  test_attributes();
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0) printf("topo: OK\n");
  fflush(stdout);
  CHECK_MPI(MPI_Finalize());
  if (!self_deleted_at_finalize) {
    fprintf(stderr,
            "rank %d: FAILED at %s:%d: MPI_COMM_SELF's attribute not deleted in "
            "MPI_Finalize\n",
            rank, __FILE__, __LINE__);
    return 1;
  }
  return 0;
}
