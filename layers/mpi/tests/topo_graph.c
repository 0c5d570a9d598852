/* topo_graph: graph and distributed graph topologies, neighbourhood
 * collectives.
 * Graph_create (a ring with a self loop, so 1 and 2 ranks have a neighbour
 * twice; a graph smaller than the communicator), Graphdims_get, Graph_get,
 * Graph_neighbors(_count) of every node, Graph_map and Cart_map, Topo_test;
 * Dist_graph_create_adjacent weighted, unweighted and with
 * MPI_WEIGHTS_EMPTY (a star), Dist_graph_create weighted and unweighted
 * (edges given by other ranks: compared as sets, as their order is the
 * implementation's), Dist_graph_neighbors(_count); Comm_dup keeps each
 * topology. Every neighbourhood collective (allgather(v), alltoall(v,w)),
 * blocking and not, on each graph and on Cartesian grids (periodic and not,
 * 1-D and 2-D, so MPI_PROC_NULL neighbours and a neighbour met on both
 * sides), with data that names the sender and its block: block k lands
 * where the standard says (a Cartesian sender's block s in its
 * neighbour's block s^1; the k-th edge between two ranks of a graph meets
 * the k-th), MPI_PROC_NULL blocks untouched, displacements honoured;
 * large messages to a neighbour met twice. Errors both reference MPIs
 * report: no topology or the wrong one (MPI_ERR_TOPOLOGY), a graph larger
 * than the communicator and negative degrees (MPI_ERR_ARG), a node that is
 * not one (MPI_ERR_RANK), a negative count (MPI_ERR_COUNT), a null type
 * (MPI_ERR_TYPE). */
#include "mpi_check.h"

/* Open MPI's MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are small integers cast
 * to pointers, which GCC takes for arrays of no bytes. */
#if defined(OPEN_MPI) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overread"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

/* Known bugs of the reference MPIs in neighbourhood collectives; each
 * check they would fail is skipped there (ref_bug_skips).
 * Open MPI 4.1's non-blocking alltoalls (coll/libnbc) swap the blocks of a
 * Cartesian neighbour met on both sides of a dimension
 * (open-mpi/ompi#14416); the blocking ones are right. */
#if defined(OPEN_MPI)
#define REF_BUG_INEIGHBOR_CART_PAIRS 1
#endif
/* MPICH 4.0.2 posts a graph's receives in reverse order, so the blocks of
 * two edges between the same ranks swap (pmodels/mpich#7945); its alltoall
 * does so on a Cartesian grid too, which is right only while one dimension
 * at most has a neighbour met on both sides; alltoallv and alltoallw swap
 * the blocks of such a neighbour; where a rank has no in- or out-neighbour its non-blocking
 * collectives fail in MPI_Wait ("Invalid communicator") and its blocking
 * alltoallw hangs. */
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000
#define REF_BUG_NEIGHBOR_GRAPH_MULTI_EDGES 1
#define REF_BUG_NEIGHBOR_CART_PAIRS 1
#define REF_BUG_NEIGHBOR_ZERO_DEGREE 1
#endif

#define MAXNB 16

static int rank, size;

/* A communicator's neighbourhood as the test expects it: src/dst in
 * buffer order (MPI_PROC_NULL allowed), and for receive block k the
 * block of the sender that lands there (-1 for MPI_PROC_NULL). */
typedef struct {
  MPI_Comm comm;
  const char *name;
  int indeg, outdeg;
  int src[MAXNB], dst[MAXNB], from_block[MAXNB];
  int cart_pairs;  /* dimensions with a neighbour met on both sides */
  int graph_multi; /* some rank of the graph meets another twice */
  int zero_degree; /* some rank of the graph has no in- or out-neighbour */
} Nbhd;

static int count_before(const int *list, int k, int value) {
  int m = 0;
  for (int i = 0; i < k; i++) m += list[i] == value;
  return m;
}

/* For a graph: the m-th edge from s to me meets the m-th receive I post
 * from s, so every rank's destinations are gathered to find the block. */
static void match_graph_blocks(Nbhd *nb) {
  int csize;
  CHECK_MPI(MPI_Comm_size(nb->comm, &csize));
  int mine[MAXNB + 1], *all = malloc(sizeof(int) * (MAXNB + 1) * csize);
  mine[0] = nb->outdeg;
  for (int j = 0; j < MAXNB; j++) mine[j + 1] = j < nb->outdeg ? nb->dst[j] : -1;
  CHECK_MPI(MPI_Allgather(mine, MAXNB + 1, MPI_INT, all, MAXNB + 1, MPI_INT, nb->comm));
  for (int k = 0; k < nb->indeg; k++) {
    const int s = nb->src[k], m = count_before(nb->src, k, s);
    const int *theirs = all + (MAXNB + 1) * s;
    nb->from_block[k] = -1;
    for (int p = 0, seen = 0; p < theirs[0]; p++) {
      if (theirs[p + 1] != rank) continue;
      if (seen++ == m) {
        nb->from_block[k] = p;
        break;
      }
    }
    CHECK(nb->from_block[k] >= 0, "%s: rank %d has no edge %d to me", nb->name, s, m);
  }
  free(all);
}

static void graph_nbhd(Nbhd *nb, MPI_Comm comm, const char *name) {
  memset(nb, 0, sizeof *nb);
  nb->comm = comm, nb->name = name;
  int status;
  CHECK_MPI(MPI_Topo_test(comm, &status));
  if (status == MPI_GRAPH) {
    CHECK_MPI(MPI_Graph_neighbors_count(comm, rank, &nb->indeg));
    CHECK(nb->indeg <= MAXNB, "%s: %d neighbours", name, nb->indeg);
    CHECK_MPI(MPI_Graph_neighbors(comm, rank, nb->indeg, nb->src));
    nb->outdeg = nb->indeg;
    memcpy(nb->dst, nb->src, sizeof nb->src);
  } else {
    int weighted;
    CHECK(status == MPI_DIST_GRAPH, "%s: Topo_test %d", name, status);
    CHECK_MPI(MPI_Dist_graph_neighbors_count(comm, &nb->indeg, &nb->outdeg, &weighted));
    CHECK(nb->indeg <= MAXNB && nb->outdeg <= MAXNB, "%s: degrees", name);
    CHECK_MPI(MPI_Dist_graph_neighbors(comm, nb->indeg, nb->src, MPI_UNWEIGHTED, nb->outdeg,
                                       nb->dst, MPI_UNWEIGHTED));
  }
  match_graph_blocks(nb);
  int mine[2] = {nb->indeg == 0 || nb->outdeg == 0, 0}, any[2];
  for (int k = 0; k < nb->indeg; k++) mine[1] |= count_before(nb->src, k, nb->src[k]) > 0;
  CHECK_MPI(MPI_Allreduce(mine, any, 2, MPI_INT, MPI_MAX, comm));
  nb->zero_degree = any[0], nb->graph_multi = any[1];
}

static void cart_nbhd(Nbhd *nb, MPI_Comm comm, const char *name) {
  memset(nb, 0, sizeof *nb);
  nb->comm = comm, nb->name = name;
  int nd, dims[4], periods[4], coords[4];
  CHECK_MPI(MPI_Cartdim_get(comm, &nd));
  CHECK_MPI(MPI_Cart_get(comm, 4, dims, periods, coords));
  for (int d = 0; d < nd; d++) {
    int below, above;
    CHECK_MPI(MPI_Cart_shift(comm, d, 1, &below, &above));
    nb->src[2 * d] = nb->dst[2 * d] = below;
    nb->src[2 * d + 1] = nb->dst[2 * d + 1] = above;
    /* What a neighbour sends up comes from below: its block 2d+1 lands in
     * my block 2d, its block 2d in my block 2d+1. */
    nb->from_block[2 * d] = below == MPI_PROC_NULL ? -1 : 2 * d + 1;
    nb->from_block[2 * d + 1] = above == MPI_PROC_NULL ? -1 : 2 * d;
    if (periods[d] && dims[d] <= 2) nb->cart_pairs++;
  }
  nb->indeg = nb->outdeg = 2 * nd;
}

static int nb_rank(const Nbhd *nb) {
  int r;
  CHECK_MPI(MPI_Comm_rank(nb->comm, &r));
  return r;
}

static void wait_or_not(int rc, MPI_Request *rq, int nonblocking) {
  CHECK(rc == MPI_SUCCESS, "neighbourhood collective returned %d", rc);
  if (nonblocking) CHECK_MPI(MPI_Wait(rq, MPI_STATUS_IGNORE));
}

static void check_allgather(const Nbhd *nb, int nonblocking) {
  const int me = nb_rank(nb);
  int mine[2] = {me, 1000 + me}, got[2 * MAXNB], gotv[3 * MAXNB], counts[MAXNB], displs[MAXNB];
  MPI_Request rq;
  for (int i = 0; i < 2 * MAXNB; i++) got[i] = -1;
  for (int i = 0; i < 3 * MAXNB; i++) gotv[i] = -1;
  for (int k = 0; k < nb->indeg; k++) counts[k] = 2, displs[k] = 3 * (nb->indeg - 1 - k);
  if (nonblocking) {
    wait_or_not(MPI_Ineighbor_allgather(mine, 2, MPI_INT, got, 2, MPI_INT, nb->comm, &rq), &rq, 1);
    wait_or_not(
        MPI_Ineighbor_allgatherv(mine, 2, MPI_INT, gotv, counts, displs, MPI_INT, nb->comm, &rq),
        &rq, 1);
  } else {
    CHECK_MPI(MPI_Neighbor_allgather(mine, 2, MPI_INT, got, 2, MPI_INT, nb->comm));
    CHECK_MPI(MPI_Neighbor_allgatherv(mine, 2, MPI_INT, gotv, counts, displs, MPI_INT, nb->comm));
  }
  for (int k = 0; k < nb->indeg; k++) {
    const int s = nb->src[k], *v = gotv + displs[k];
    const int want0 = s == MPI_PROC_NULL ? -1 : s, want1 = s == MPI_PROC_NULL ? -1 : 1000 + s;
    CHECK(got[2 * k] == want0 && got[2 * k + 1] == want1, "%s: %sallgather block %d: %d %d",
          nb->name, nonblocking ? "I" : "", k, got[2 * k], got[2 * k + 1]);
    CHECK(v[0] == want0 && v[1] == want1 && v[2] == -1, "%s: %sallgatherv block %d: %d %d %d",
          nb->name, nonblocking ? "I" : "", k, v[0], v[1], v[2]);
  }
}

static void check_alltoall(const Nbhd *nb, int nonblocking) {
  const int me = nb_rank(nb);
  int out[2 * MAXNB], got[2 * MAXNB];
  MPI_Request rq;
  for (int j = 0; j < nb->outdeg; j++) out[2 * j] = 100 * me + j, out[2 * j + 1] = -(100 * me + j);
  for (int i = 0; i < 2 * MAXNB; i++) got[i] = -1;
  if (nonblocking) {
    wait_or_not(MPI_Ineighbor_alltoall(out, 2, MPI_INT, got, 2, MPI_INT, nb->comm, &rq), &rq, 1);
  } else {
    CHECK_MPI(MPI_Neighbor_alltoall(out, 2, MPI_INT, got, 2, MPI_INT, nb->comm));
  }
  for (int k = 0; k < nb->indeg; k++) {
    const int v = nb->src[k] == MPI_PROC_NULL ? -1 : 100 * nb->src[k] + nb->from_block[k];
    CHECK(got[2 * k] == v && got[2 * k + 1] == (v == -1 ? -1 : -v),
          "%s: %salltoall block %d from %d: %d, want %d", nb->name, nonblocking ? "I" : "", k,
          nb->src[k], got[2 * k], v);
  }
}

/* Block p of a sender has p % 3 + 1 ints, 1000 * sender + 10 * p + i;
 * blocks are laid out in reverse order with a gap of one int. */
static int vcount(int p) {
  return p < 0 ? 1 : p % 3 + 1;
}

static void layout(int n, const int *block_of, int *counts, int *displs) {
  int at = 0;
  for (int k = n - 1; k >= 0; k--) {
    counts[k] = vcount(block_of[k]);
    displs[k] = at;
    at += counts[k] + 1;
  }
}

static void check_alltoallv(const Nbhd *nb, int nonblocking, int w) {
  const int me = nb_rank(nb);
  int sc[MAXNB], sd[MAXNB], rc[MAXNB], rd[MAXNB], self_block[MAXNB];
  int out[5 * MAXNB], got[5 * MAXNB];
  MPI_Aint sdb[MAXNB], rdb[MAXNB];
  MPI_Datatype st[MAXNB], rt[MAXNB], runs[3];
  MPI_Request rq;
  for (int j = 0; j < nb->outdeg; j++) self_block[j] = j;
  layout(nb->outdeg, self_block, sc, sd);
  layout(nb->indeg, nb->from_block, rc, rd);
  for (int i = 0; i < 5 * MAXNB; i++) out[i] = got[i] = -1;
  for (int j = 0; j < nb->outdeg; j++) {
    for (int i = 0; i < sc[j]; i++) out[sd[j] + i] = 1000 * me + 10 * j + i;
  }
  /* The w form sends each block as one element of a contiguous type of
   * its length and receives ints, at byte displacements. */
  for (int n = 0; n < 3; n++) {
    CHECK_MPI(MPI_Type_contiguous(n + 1, MPI_INT, &runs[n]));
    CHECK_MPI(MPI_Type_commit(&runs[n]));
  }
  int sc1[MAXNB];
  for (int j = 0; j < nb->outdeg; j++) {
    st[j] = runs[sc[j] - 1], sc1[j] = 1, sdb[j] = (MPI_Aint)(sd[j] * sizeof(int));
  }
  for (int k = 0; k < nb->indeg; k++) rt[k] = MPI_INT, rdb[k] = (MPI_Aint)(rd[k] * sizeof(int));
  const char *what = w ? "alltoallw" : "alltoallv";
  if (w && nonblocking) {
    wait_or_not(MPI_Ineighbor_alltoallw(out, sc1, sdb, st, got, rc, rdb, rt, nb->comm, &rq), &rq,
                1);
  } else if (w) {
    CHECK_MPI(MPI_Neighbor_alltoallw(out, sc1, sdb, st, got, rc, rdb, rt, nb->comm));
  } else if (nonblocking) {
    wait_or_not(MPI_Ineighbor_alltoallv(out, sc, sd, MPI_INT, got, rc, rd, MPI_INT, nb->comm, &rq),
                &rq, 1);
  } else {
    CHECK_MPI(MPI_Neighbor_alltoallv(out, sc, sd, MPI_INT, got, rc, rd, MPI_INT, nb->comm));
  }
  for (int k = 0; k < nb->indeg; k++) {
    const int s = nb->src[k], p = nb->from_block[k];
    for (int i = 0; i <= rc[k]; i++) {
      const int want = s == MPI_PROC_NULL || i == rc[k] ? -1 : 1000 * s + 10 * p + i;
      CHECK(got[rd[k] + i] == want, "%s: %s%s block %d int %d: %d, want %d", nb->name,
            nonblocking ? "I" : "", what, k, i, got[rd[k] + i], want);
    }
  }
  for (int n = 0; n < 3; n++) CHECK_MPI(MPI_Type_free(&runs[n]));
}

enum { ALLGATHER, ALLTOALL, ALLTOALLV, ALLTOALLW };

static int ref_bug_skips(const Nbhd *nb, int nonblocking, int kind) {
  int skip = 0;
  (void)nb, (void)nonblocking, (void)kind;
#ifdef REF_BUG_INEIGHBOR_CART_PAIRS
  skip |= nonblocking && nb->cart_pairs && kind != ALLGATHER;
#endif
#ifdef REF_BUG_NEIGHBOR_GRAPH_MULTI_EDGES
  skip |= nb->graph_multi && kind != ALLGATHER;
#endif
#ifdef REF_BUG_NEIGHBOR_CART_PAIRS
  skip |= (nb->cart_pairs > 1 && kind == ALLTOALL) ||
          (nb->cart_pairs > 0 && (kind == ALLTOALLV || kind == ALLTOALLW));
#endif
#ifdef REF_BUG_NEIGHBOR_ZERO_DEGREE
  skip |= nb->zero_degree && (nonblocking || kind == ALLTOALLW);
#endif
  return skip;
}

/* Every neighbourhood collective, blocking and not. */
static void check_collectives(const Nbhd *nb) {
  for (int nonblocking = 0; nonblocking < 2; nonblocking++) {
    if (!ref_bug_skips(nb, nonblocking, ALLGATHER)) check_allgather(nb, nonblocking);
    if (!ref_bug_skips(nb, nonblocking, ALLTOALL)) check_alltoall(nb, nonblocking);
    if (!ref_bug_skips(nb, nonblocking, ALLTOALLV)) check_alltoallv(nb, nonblocking, 0);
    if (!ref_bug_skips(nb, nonblocking, ALLTOALLW)) check_alltoallv(nb, nonblocking, 1);
  }
}

/* Ring neighbours: even nodes list [prev, next], odd ones [next, prev],
 * node 0 also itself (so 1 node has itself thrice, 2 nodes each other
 * twice). */
static int ring_node(int i, int n, int *out) {
  const int prev = (i + n - 1) % n, next = (i + 1) % n;
  int k = 0;
  out[k++] = i % 2 == 0 ? prev : next;
  out[k++] = i % 2 == 0 ? next : prev;
  if (i == 0) out[k++] = 0;
  return k;
}

static void test_graph(void) {
  int index[8], edges[24], nedges = 0;
  for (int i = 0; i < size; i++) {
    nedges += ring_node(i, size, edges + nedges);
    index[i] = nedges;
  }
  MPI_Comm g;
  CHECK_MPI(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g));
  CHECK(g != MPI_COMM_NULL, "every rank is a node");
  int status, r, nn, ne;
  CHECK_MPI(MPI_Topo_test(g, &status));
  CHECK(status == MPI_GRAPH, "Topo_test %d", status);
  CHECK_MPI(MPI_Comm_rank(g, &r));
  CHECK(r == rank, "no reordering: rank %d", r);
  CHECK_MPI(MPI_Graphdims_get(g, &nn, &ne));
  CHECK(nn == size && ne == nedges, "Graphdims_get %d %d", nn, ne);
  int gi[8], ge[24];
  CHECK_MPI(MPI_Graph_get(g, size, nedges, gi, ge));
  for (int i = 0; i < size; i++) CHECK(gi[i] == index[i], "Graph_get index[%d]", i);
  for (int e = 0; e < nedges; e++) CHECK(ge[e] == edges[e], "Graph_get edges[%d]", e);
  for (int i = 0; i < size; i++) {
    int want[3], n = ring_node(i, size, want), got[3] = {-1, -1, -1}, count = -1;
    CHECK_MPI(MPI_Graph_neighbors_count(g, i, &count));
    CHECK(count == n, "Graph_neighbors_count(%d) = %d", i, count);
    CHECK_MPI(MPI_Graph_neighbors(g, i, n, got));
    for (int k = 0; k < n; k++) CHECK(got[k] == want[k], "Graph_neighbors(%d)[%d]", i, k);
  }
  Nbhd nb;
  graph_nbhd(&nb, g, "graph ring");
  check_collectives(&nb);

  /* A dup keeps the graph. */
  MPI_Comm d;
  CHECK_MPI(MPI_Comm_dup(g, &d));
  CHECK_MPI(MPI_Topo_test(d, &status));
  CHECK(status == MPI_GRAPH, "a dup's Topo_test %d", status);
  CHECK_MPI(MPI_Graphdims_get(d, &nn, &ne));
  CHECK(nn == size && ne == nedges, "a dup's Graphdims_get %d %d", nn, ne);
  graph_nbhd(&nb, d, "graph ring dup");
  check_collectives(&nb);
  CHECK_MPI(MPI_Comm_free(&d));
  CHECK_MPI(MPI_Comm_free(&g));

  /* Graph_map with room for every rank: distinct ranks of the graph. */
  int newrank = -5, mask = 0, all = 0;
  CHECK_MPI(MPI_Graph_map(MPI_COMM_WORLD, size, index, edges, &newrank));
  CHECK(newrank >= 0 && newrank < size, "Graph_map %d", newrank);
  mask = 1 << newrank;
  CHECK_MPI(MPI_Allreduce(&mask, &all, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD));
  CHECK(all == (1 << size) - 1, "Graph_map ranks are distinct: %x", all);
  int dims[2] = {0, 0}, periods[2] = {0, 1};
  CHECK_MPI(MPI_Dims_create(size, 2, dims));
  CHECK_MPI(MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, &newrank));
  CHECK(newrank >= 0 && newrank < size, "Cart_map %d", newrank);
  mask = 1 << newrank;
  CHECK_MPI(MPI_Allreduce(&mask, &all, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD));
  CHECK(all == (1 << size) - 1, "Cart_map ranks are distinct: %x", all);

  /* A graph of fewer nodes than ranks: the last rank is left out. A
   * chain 0-1-...-(n-2). */
  if (size >= 2) {
    const int n = size - 1;
    int ci[4], ce[8], m = 0;
    for (int i = 0; i < n; i++) {
      if (i > 0) ce[m++] = i - 1;
      if (i + 1 < n) ce[m++] = i + 1;
      ci[i] = m;
    }
    CHECK_MPI(MPI_Graph_create(MPI_COMM_WORLD, n, ci, ce, 0, &g));
    CHECK((rank == size - 1) == (g == MPI_COMM_NULL), "rank %d beyond the graph", rank);
    if (g != MPI_COMM_NULL) {
      graph_nbhd(&nb, g, "graph chain");
      CHECK(nb.indeg == (rank > 0) + (rank + 1 < n), "chain degree %d", nb.indeg);
      check_collectives(&nb);
      CHECK_MPI(MPI_Comm_free(&g));
    }
  }
}

/* The adjacent constructor, weighted: sources [prev, me], destinations
 * [me, next] (1 rank: itself twice each way). */
static void test_dist_adjacent(void) {
  const int prev = (rank + size - 1) % size, next = (rank + 1) % size;
  int src[2] = {prev, rank}, sw[2] = {10 * prev + 1, 10 * rank + 2};
  int dst[2] = {rank, next}, dw[2] = {10 * rank + 2, 10 * rank + 1};
  MPI_Comm d;
  CHECK_MPI(
      MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 2, dst, dw, MPI_INFO_NULL, 0, &d));
  int status, in, out, weighted, r;
  CHECK_MPI(MPI_Topo_test(d, &status));
  CHECK(status == MPI_DIST_GRAPH, "Topo_test %d", status);
  CHECK_MPI(MPI_Comm_rank(d, &r));
  CHECK(r == rank, "no reordering: rank %d", r);
  CHECK_MPI(MPI_Dist_graph_neighbors_count(d, &in, &out, &weighted));
  CHECK(in == 2 && out == 2 && weighted, "Dist_graph_neighbors_count %d %d %d", in, out, weighted);
  int gs[2], gsw[2], gd[2], gdw[2];
  CHECK_MPI(MPI_Dist_graph_neighbors(d, 2, gs, gsw, 2, gd, gdw));
  for (int k = 0; k < 2; k++) {
    CHECK(gs[k] == src[k] && gsw[k] == sw[k], "source %d: %d (%d)", k, gs[k], gsw[k]);
    CHECK(gd[k] == dst[k] && gdw[k] == dw[k], "destination %d: %d (%d)", k, gd[k], gdw[k]);
  }
  Nbhd nb;
  graph_nbhd(&nb, d, "dist adjacent");
  check_collectives(&nb);
  MPI_Comm dd;
  CHECK_MPI(MPI_Comm_dup(d, &dd));
  CHECK_MPI(MPI_Dist_graph_neighbors_count(dd, &in, &out, &weighted));
  CHECK(in == 2 && out == 2 && weighted, "a dup's Dist_graph_neighbors_count");
  CHECK_MPI(MPI_Dist_graph_neighbors(dd, 2, gs, gsw, 2, gd, gdw));
  CHECK(gs[0] == prev && gsw[1] == sw[1] && gd[1] == next && gdw[0] == dw[0], "a dup's graph");
  CHECK_MPI(MPI_Comm_free(&dd));
  CHECK_MPI(MPI_Comm_free(&d));

  /* Unweighted: a ring the other way round. */
  CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &next, MPI_UNWEIGHTED, 1, &prev,
                                           MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &d));
  CHECK_MPI(MPI_Dist_graph_neighbors_count(d, &in, &out, &weighted));
  CHECK(in == 1 && out == 1 && !weighted, "unweighted counts %d %d %d", in, out, weighted);
  graph_nbhd(&nb, d, "dist ring unweighted");
  CHECK(nb.src[0] == next && nb.dst[0] == prev, "unweighted neighbours");
  check_collectives(&nb);
  CHECK_MPI(MPI_Comm_free(&d));

  /* A star: rank 0 hears every other rank (highest first), which sends
   * to it only; degrees of 0 give MPI_WEIGHTS_EMPTY. */
  int leaves[4], lw[4], zero[1] = {0}, seven[1] = {7};
  for (int k = 0; k < size - 1; k++) leaves[k] = size - 1 - k, lw[k] = 50 + k;
  if (rank == 0) {
    CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, size - 1, leaves, lw, 0, zero,
                                             MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &d));
  } else {
    CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, zero, MPI_WEIGHTS_EMPTY, 1, zero,
                                             seven, MPI_INFO_NULL, 0, &d));
  }
  CHECK_MPI(MPI_Dist_graph_neighbors_count(d, &in, &out, &weighted));
  CHECK(in == (rank == 0 ? size - 1 : 0) && out == (rank == 0 ? 0 : 1) && weighted,
        "star counts %d %d %d", in, out, weighted);
  int ss[4] = {-1, -1, -1, -1}, ssw[4] = {-1, -1, -1, -1}, sd[1] = {-1}, sdw[1] = {-1};
  CHECK_MPI(MPI_Dist_graph_neighbors(d, in, ss, ssw, out, sd, sdw));
  for (int k = 0; k < in; k++) CHECK(ss[k] == leaves[k] && ssw[k] == lw[k], "star source %d", k);
  if (rank != 0) CHECK(sd[0] == 0 && sdw[0] == 7, "star destination %d (%d)", sd[0], sdw[0]);
  graph_nbhd(&nb, d, "dist star");
  check_collectives(&nb);
  CHECK_MPI(MPI_Comm_free(&d));
}

static int compare_pairs(const void *a, const void *b) {
  const int *x = a, *y = b;
  return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* (rank, weight) pairs, sorted, against what is wanted. */
static void check_edge_set(const char *what, int n, const int *ranks, const int *weights,
                           int want_n, int want[][2]) {
  CHECK(n == want_n, "%s: %d edges, want %d", what, n, want_n);
  int got[MAXNB][2];
  for (int k = 0; k < n; k++) got[k][0] = ranks[k], got[k][1] = weights ? weights[k] : 0;
  qsort(got, (size_t)n, sizeof got[0], compare_pairs);
  qsort(want, (size_t)n, sizeof want[0], compare_pairs);
  for (int k = 0; k < n; k++) {
    CHECK(got[k][0] == want[k][0] && got[k][1] == want[k][1], "%s %d: %d (%d), want %d (%d)", what,
          k, got[k][0], got[k][1], want[k][0], want[k][1]);
  }
}

/* The general constructor: every node i has the edges i -> i+1 (weight
 * 1000 + i), given by rank i-1, and i -> i (weight 2000 + i), given by
 * itself. Unweighted: rank 0 gives every edge i -> i+1, the others none. */
static void test_dist_general(void) {
  const int prev = (rank + size - 1) % size, next = (rank + 1) % size;
  const int given_src[2] = {next, rank}, degrees[2] = {1, 1};
  const int given_dst[2] = {(rank + 2) % size, rank}, weights[2] = {1000 + next, 2000 + rank};
  MPI_Comm d;
  CHECK_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, 2, given_src, degrees, given_dst, weights,
                                  MPI_INFO_NULL, 0, &d));
  int status, in, out, weighted;
  CHECK_MPI(MPI_Topo_test(d, &status));
  CHECK(status == MPI_DIST_GRAPH, "Topo_test %d", status);
  CHECK_MPI(MPI_Dist_graph_neighbors_count(d, &in, &out, &weighted));
  CHECK(in == 2 && out == 2 && weighted, "general counts %d %d %d", in, out, weighted);
  int s[MAXNB], sw[MAXNB], t[MAXNB], tw[MAXNB];
  CHECK_MPI(MPI_Dist_graph_neighbors(d, in, s, sw, out, t, tw));
  int want_in[2][2] = {{prev, 1000 + prev}, {rank, 2000 + rank}};
  int want_out[2][2] = {{next, 1000 + rank}, {rank, 2000 + rank}};
  check_edge_set("general sources", in, s, sw, 2, want_in);
  check_edge_set("general destinations", out, t, tw, 2, want_out);
  Nbhd nb;
  graph_nbhd(&nb, d, "dist general");
  check_collectives(&nb);
  CHECK_MPI(MPI_Comm_free(&d));

  int all_src[4], ones[4], all_dst[4];
  for (int i = 0; i < size; i++) all_src[i] = i, ones[i] = 1, all_dst[i] = (i + 1) % size;
  CHECK_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, rank == 0 ? size : 0, all_src, ones, all_dst,
                                  MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &d));
  CHECK_MPI(MPI_Dist_graph_neighbors_count(d, &in, &out, &weighted));
  CHECK(in == 1 && out == 1 && !weighted, "general unweighted counts %d %d %d", in, out, weighted);
  CHECK_MPI(MPI_Dist_graph_neighbors(d, 1, s, MPI_UNWEIGHTED, 1, t, MPI_UNWEIGHTED));
  CHECK(s[0] == prev && t[0] == next, "general unweighted: %d %d", s[0], t[0]);
  graph_nbhd(&nb, d, "dist general unweighted");
  check_collectives(&nb);
  CHECK_MPI(MPI_Comm_free(&d));
}

static void test_cart(int ndims, const int *periods, const char *name) {
  int dims[2] = {0, 0};
  CHECK_MPI(MPI_Dims_create(size, ndims, dims));
  MPI_Comm c;
  CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &c));
  Nbhd nb;
  cart_nbhd(&nb, c, name);
  check_collectives(&nb);
  MPI_Comm d;
  CHECK_MPI(MPI_Comm_dup(c, &d));
  cart_nbhd(&nb, d, name);
  check_collectives(&nb);
  CHECK_MPI(MPI_Comm_free(&d));
  CHECK_MPI(MPI_Comm_free(&c));
}

/* Large blocks to a neighbour met on both sides (a ring of 1 or 2) or
 * two different ones: each lands in its own block. */
static void test_cart_large(void) {
  enum { N = 40000 };
  int periods[1] = {1}, dims[1] = {size};
  MPI_Comm c;
  CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c));
  int below, above;
  CHECK_MPI(MPI_Cart_shift(c, 0, 1, &below, &above));
  int *out = malloc(2 * N * sizeof *out), *got = malloc(2 * N * sizeof *got);
  for (int i = 0; i < 2 * N; i++) out[i] = rank * 3 * N + i, got[i] = -1;
  CHECK_MPI(MPI_Neighbor_alltoall(out, N, MPI_INT, got, N, MPI_INT, c));
  for (int i = 0; i < N; i++) {
    /* Block 0 comes from below, its block 1; block 1 from above, its 0. */
    CHECK(got[i] == below * 3 * N + N + i, "large block 0 [%d] = %d", i, got[i]);
    CHECK(got[N + i] == above * 3 * N + i, "large block 1 [%d] = %d", i, got[N + i]);
  }
  free(out);
  free(got);
  CHECK_MPI(MPI_Comm_free(&c));
}

#define CHECK_CLASS(call, want)                                             \
  do {                                                                      \
    int rc_ = (call), cls_ = MPI_SUCCESS;                                   \
    if (rc_ != MPI_SUCCESS) MPI_Error_class(rc_, &cls_);                    \
    CHECK(cls_ == (want), "%s gave class %d, want %s", #call, cls_, #want); \
  } while (0)

static void test_errors(void) {
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int n, m, w, x[MAXNB] = {0}, y[MAXNB];
  CHECK_CLASS(MPI_Graph_neighbors_count(MPI_COMM_WORLD, 0, &n), MPI_ERR_TOPOLOGY);
  CHECK_CLASS(MPI_Graphdims_get(MPI_COMM_WORLD, &n, &m), MPI_ERR_TOPOLOGY);
  CHECK_CLASS(MPI_Dist_graph_neighbors_count(MPI_COMM_WORLD, &n, &m, &w), MPI_ERR_TOPOLOGY);
  CHECK_CLASS(MPI_Neighbor_alltoall(x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD),
              MPI_ERR_TOPOLOGY);
  int index[4] = {0, 0, 0, 0}, edges[1] = {0};
  MPI_Comm g = MPI_COMM_NULL, d = MPI_COMM_NULL;
  CHECK_CLASS(MPI_Graph_create(MPI_COMM_WORLD, size + 1, index, edges, 0, &g), MPI_ERR_ARG);
  CHECK_CLASS(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, -1, x, MPI_UNWEIGHTED, 0, x,
                                             MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &d),
              MPI_ERR_ARG);
  CHECK_CLASS(
      MPI_Dist_graph_create(MPI_COMM_WORLD, -1, x, x, x, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &d),
      MPI_ERR_ARG);
  /* A graph of isolated nodes and a distributed graph of none. */
  CHECK_MPI(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g));
  CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, x, MPI_UNWEIGHTED, 0, x,
                                           MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &d));
  CHECK_MPI(MPI_Comm_set_errhandler(g, MPI_ERRORS_RETURN));
  CHECK_MPI(MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN));
  CHECK_CLASS(MPI_Graph_neighbors_count(g, -1, &n), MPI_ERR_RANK);
  CHECK_CLASS(MPI_Cartdim_get(g, &n), MPI_ERR_TOPOLOGY);
  CHECK_CLASS(MPI_Dist_graph_neighbors_count(g, &n, &m, &w), MPI_ERR_TOPOLOGY);
  CHECK_CLASS(MPI_Graph_neighbors_count(d, 0, &n), MPI_ERR_TOPOLOGY);
  CHECK_CLASS(MPI_Neighbor_allgather(x, -1, MPI_INT, y, 1, MPI_INT, g), MPI_ERR_COUNT);
  CHECK_CLASS(MPI_Neighbor_allgather(x, 1, MPI_DATATYPE_NULL, y, 1, MPI_INT, g), MPI_ERR_TYPE);
  /* Without neighbours the collectives move nothing. */
  CHECK_MPI(MPI_Neighbor_alltoall(x, 1, MPI_INT, y, 1, MPI_INT, g));
  CHECK_MPI(MPI_Neighbor_allgather(x, 1, MPI_INT, y, 1, MPI_INT, d));
  CHECK_MPI(MPI_Comm_free(&g));
  CHECK_MPI(MPI_Comm_free(&d));
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  rank = world_rank();
  size = world_size();
  CHECK(size <= 4, "at most 4 ranks (%d)", size);
  test_graph();
  test_dist_adjacent();
  test_dist_general();
  const int periodic[2] = {1, 1}, open[2] = {0, 0}, mixed[2] = {1, 0}, mixed2[2] = {0, 1};
  test_cart(1, periodic, "cart 1-D periodic");
  test_cart(1, open, "cart 1-D open");
  test_cart(2, mixed, "cart 2-D periodic x open");
  test_cart(2, mixed2, "cart 2-D open x periodic");
  test_cart(2, periodic, "cart 2-D periodic");
  test_cart_large();
  test_errors();
  test_done("topo_graph");
  return 0;
}
