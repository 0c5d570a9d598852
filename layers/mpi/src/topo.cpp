// topo.cpp - Cartesian topologies (MPI 3.1 sections 7.5.1-7.5.5): a
// communicator with a grid of dims (row-major: the last dimension varies
// fastest) and which dimensions wrap. The grid is bookkeeping on the
// communicator; Cart_create and Cart_sub are MPI_Comm_split (no
// reordering: rank i of the grid is rank i of the old communicator).
#include <algorithm>
#include <vector>

#include "mpi_impl.hpp"

namespace {

using rmpi::fail;

int check_cart(MPI_Comm comm, const char *who) {
  if (int rc = rmpi::check_comm(comm, who)) return rc;
  if (comm->cart_dims.empty()) {
    return fail(comm, MPI_ERR_TOPOLOGY, who, "the communicator has no Cartesian topology");
  }
  return MPI_SUCCESS;
}

void coords_of(MPI_Comm comm, int rank, int *coords) {
  for (int d = int(comm->cart_dims.size()) - 1; d >= 0; --d) {
    coords[d] = rank % comm->cart_dims[std::size_t(d)];
    rank /= comm->cart_dims[std::size_t(d)];
  }
}

}  // namespace

extern "C" {

// Fills the zero entries of dims so that the product is nnodes and the
// dimensions are as close to each other as possible, in non-increasing
// order (the standard's balanced decomposition).
int MPI_Dims_create(int nnodes, int ndims, int dims[]) {
  if (nnodes < 1 || ndims < 0) {
    return fail(nullptr, MPI_ERR_ARG, "MPI_Dims_create", "%d nodes in %d dimensions", nnodes,
                ndims);
  }
  int fixed = 1, free_dims = 0;
  for (int d = 0; d < ndims; ++d) {
    if (dims[d] < 0) return fail(nullptr, MPI_ERR_DIMS, "MPI_Dims_create", "dims[%d] < 0", d);
    if (dims[d] > 0) {
      fixed *= dims[d];
    } else {
      ++free_dims;
    }
  }
  if (nnodes % fixed != 0) {
    return fail(nullptr, MPI_ERR_DIMS, "MPI_Dims_create",
                "%d nodes cannot be split with the fixed dimensions' product %d", nnodes, fixed);
  }
  if (free_dims == 0) return MPI_SUCCESS;
  // The prime factors of what is left, largest first, each given to the
  // free dimension that is smallest so far.
  int left = nnodes / fixed;
  std::vector<int> factors;
  for (int p = 2; p * p <= left; ++p) {
    while (left % p == 0) {
      factors.push_back(p);
      left /= p;
    }
  }
  if (left > 1) factors.push_back(left);
  std::sort(factors.rbegin(), factors.rend());
  std::vector<int> free(std::size_t(free_dims), 1);
  for (int f : factors) *std::min_element(free.begin(), free.end()) *= f;
  std::sort(free.rbegin(), free.rend());
  for (int d = 0, k = 0; d < ndims; ++d) {
    if (dims[d] == 0) dims[d] = free[std::size_t(k++)];
  }
  return MPI_SUCCESS;
}

int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int,
                    MPI_Comm *comm_cart) {
  if (int rc = rmpi::check_comm(comm_old, "MPI_Cart_create")) return rc;
  if (ndims < 0) return fail(comm_old, MPI_ERR_DIMS, "MPI_Cart_create", "%d dimensions", ndims);
  long long cells = 1;
  for (int d = 0; d < ndims; ++d) {
    if (dims[d] < 1) {
      return fail(comm_old, MPI_ERR_DIMS, "MPI_Cart_create", "dims[%d] = %d", d, dims[d]);
    }
    cells *= dims[d];
  }
  if (cells > comm_old->size) {
    return fail(comm_old, MPI_ERR_DIMS, "MPI_Cart_create",
                "a grid of %lld cells on a communicator of %d", cells, comm_old->size);
  }
  const bool in = comm_old->rank < cells;
  if (int rc = MPI_Comm_split(comm_old, in ? 0 : MPI_UNDEFINED, comm_old->rank, comm_cart)) {
    return rc;
  }
  if (!in) return MPI_SUCCESS;
  (*comm_cart)->cart_dims.assign(dims, dims + ndims);
  (*comm_cart)->cart_periods.clear();
  for (int d = 0; d < ndims; ++d) (*comm_cart)->cart_periods.push_back(periods[d] ? 1 : 0);
  if (ndims == 0) (*comm_cart)->cart_dims.push_back(1), (*comm_cart)->cart_periods.push_back(0);
  return MPI_SUCCESS;
}

int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank) {
  if (int rc = check_cart(comm, "MPI_Cart_rank")) return rc;
  int r = 0;
  for (std::size_t d = 0; d < comm->cart_dims.size(); ++d) {
    const int n = comm->cart_dims[d];
    int c = coords[d];
    if (comm->cart_periods[d]) {
      c = ((c % n) + n) % n;
    } else if (c < 0 || c >= n) {
      return fail(comm, MPI_ERR_ARG, "MPI_Cart_rank",
                  "coordinate %d of dimension %zu is outside 0..%d (not periodic)", c, d, n - 1);
    }
    r = r * n + c;
  }
  *rank = r;
  return MPI_SUCCESS;
}

int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]) {
  if (int rc = check_cart(comm, "MPI_Cart_coords")) return rc;
  if (rank < 0 || rank >= comm->size || maxdims < int(comm->cart_dims.size())) {
    return fail(comm, MPI_ERR_ARG, "MPI_Cart_coords", "rank %d, maxdims %d", rank, maxdims);
  }
  coords_of(comm, rank, coords);
  return MPI_SUCCESS;
}

int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest) {
  if (int rc = check_cart(comm, "MPI_Cart_shift")) return rc;
  const int nd = int(comm->cart_dims.size());
  if (direction < 0 || direction >= nd) {
    return fail(comm, MPI_ERR_ARG, "MPI_Cart_shift", "direction %d of %d dimensions", direction,
                nd);
  }
  std::vector<int> c(std::size_t(nd), 0);
  coords_of(comm, comm->rank, c.data());
  const int n = comm->cart_dims[std::size_t(direction)];
  const bool wrap = comm->cart_periods[std::size_t(direction)] != 0;
  auto neighbour = [&](int delta) {
    std::vector<int> o = c;
    int &x = o[std::size_t(direction)];
    x += delta;
    if (!wrap && (x < 0 || x >= n)) return int(MPI_PROC_NULL);
    int r = 0;
    MPI_Cart_rank(comm, o.data(), &r);
    return r;
  };
  *rank_dest = neighbour(disp);
  *rank_source = neighbour(-disp);
  return MPI_SUCCESS;
}

int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]) {
  if (int rc = check_cart(comm, "MPI_Cart_get")) return rc;
  const int nd = int(comm->cart_dims.size());
  if (maxdims < nd) {
    return fail(comm, MPI_ERR_ARG, "MPI_Cart_get", "maxdims %d < %d dimensions", maxdims, nd);
  }
  for (int d = 0; d < nd; ++d) {
    dims[d] = comm->cart_dims[std::size_t(d)];
    periods[d] = comm->cart_periods[std::size_t(d)];
  }
  coords_of(comm, comm->rank, coords);
  return MPI_SUCCESS;
}

int MPI_Cartdim_get(MPI_Comm comm, int *ndims) {
  if (int rc = check_cart(comm, "MPI_Cartdim_get")) return rc;
  *ndims = int(comm->cart_dims.size());
  return MPI_SUCCESS;
}

// The ranks that share the coordinates of the dimensions not kept form a
// sub-grid of the kept ones.
int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm) {
  if (int rc = check_cart(comm, "MPI_Cart_sub")) return rc;
  const int nd = int(comm->cart_dims.size());
  std::vector<int> c(std::size_t(nd), 0);
  coords_of(comm, comm->rank, c.data());
  int color = 0, key = 0;
  std::vector<int> dims, periods;
  for (int d = 0; d < nd; ++d) {
    const int n = comm->cart_dims[std::size_t(d)];
    if (remain_dims[d]) {
      key = key * n + c[std::size_t(d)];
      dims.push_back(n);
      periods.push_back(comm->cart_periods[std::size_t(d)]);
    } else {
      color = color * n + c[std::size_t(d)];
    }
  }
  if (int rc = MPI_Comm_split(comm, color, key, newcomm)) return rc;
  if (dims.empty()) dims.push_back(1), periods.push_back(0);
  (*newcomm)->cart_dims = std::move(dims);
  (*newcomm)->cart_periods = std::move(periods);
  return MPI_SUCCESS;
}

// The rank this process would have in a grid of dims that Cart_create
// made from comm: its own if the grid has room for it (no reordering).
int MPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int[], int *newrank) {
  if (int rc = rmpi::check_comm(comm, "MPI_Cart_map")) return rc;
  if (int rc = rmpi::check_intra(comm, "MPI_Cart_map")) return rc;
  if (ndims < 0) return fail(comm, MPI_ERR_DIMS, "MPI_Cart_map", "%d dimensions", ndims);
  long long cells = 1;
  for (int d = 0; d < ndims; ++d) {
    if (dims[d] < 1) return fail(comm, MPI_ERR_DIMS, "MPI_Cart_map", "dims[%d] = %d", d, dims[d]);
    cells *= dims[d];
  }
  if (cells > comm->size) {
    return fail(comm, MPI_ERR_DIMS, "MPI_Cart_map", "a grid of %lld cells on a communicator of %d",
                cells, comm->size);
  }
  *newrank = comm->rank < cells ? comm->rank : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int MPI_Topo_test(MPI_Comm comm, int *status) {
  if (int rc = rmpi::check_comm(comm, "MPI_Topo_test")) return rc;
  *status = comm->cart_dims.empty() ? comm->graph.kind : MPI_CART;
  return MPI_SUCCESS;
}

}  // extern "C"
