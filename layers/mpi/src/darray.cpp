// darray.cpp - MPI_Type_create_darray (MPI 3.1 section 4.1.4): the part of
// a global array that one process of a process grid owns under block,
// cyclic(k) or no distribution per dimension. Like MPICH's construction
// (a vector per dimension, its first element moved to the process's
// offset, the result resized to the whole array), but rocl's types are
// flat block lists, so it picks the indexes each dimension gives this
// process and lays them out as a subarray does (array_type): the type map
// comes out in the same order, each dimension's indexes ascending in the
// array's storage order.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "mpi_impl.hpp"

namespace {

using rmpi::fail;

struct Dimension {
  int gsize, distrib, darg, psize, coord;
};

// What is wrong with a dimension, or "" if nothing is.
std::string check(const Dimension &d) {
  char why[160] = "";
  if (d.gsize < 1) {
    std::snprintf(why, sizeof why, "global size %d", d.gsize);
  } else if (d.distrib == MPI_DISTRIBUTE_NONE && d.psize != 1) {
    std::snprintf(why, sizeof why, "MPI_DISTRIBUTE_NONE over %d processes (must be 1)", d.psize);
  } else if (d.distrib != MPI_DISTRIBUTE_NONE && d.distrib != MPI_DISTRIBUTE_BLOCK &&
             d.distrib != MPI_DISTRIBUTE_CYCLIC) {
    std::snprintf(why, sizeof why, "distribution %d is not MPI_DISTRIBUTE_BLOCK, _CYCLIC or _NONE",
                  d.distrib);
  } else if (d.distrib != MPI_DISTRIBUTE_NONE && d.darg != MPI_DISTRIBUTE_DFLT_DARG && d.darg < 1) {
    std::snprintf(why, sizeof why,
                  "distribution argument %d (positive or MPI_DISTRIBUTE_DFLT_DARG)", d.darg);
  } else if (d.distrib == MPI_DISTRIBUTE_BLOCK && d.darg != MPI_DISTRIBUTE_DFLT_DARG &&
             static_cast<long long>(d.darg) * d.psize < d.gsize) {
    std::snprintf(why, sizeof why, "blocks of %d on %d processes do not cover %d elements", d.darg,
                  d.psize, d.gsize);
  }
  return why;
}

// The indexes of the dimension that the process at coord owns, ascending.
std::vector<int> owned(const Dimension &d) {
  std::vector<int> out;
  const bool dflt = d.darg == MPI_DISTRIBUTE_DFLT_DARG;
  if (d.distrib == MPI_DISTRIBUTE_NONE) {
    for (int i = 0; i < d.gsize; ++i) out.push_back(i);
  } else if (d.distrib == MPI_DISTRIBUTE_BLOCK) {
    const long long b = dflt ? (d.gsize + d.psize - 1) / d.psize : d.darg;
    for (long long i = b * d.coord; i < std::min(b * (d.coord + 1), (long long)d.gsize); ++i) {
      out.push_back(int(i));
    }
  } else {  // cyclic(k): blocks of k dealt round the processes
    const long long k = dflt ? 1 : d.darg;
    for (long long start = k * d.coord; start < d.gsize; start += k * d.psize) {
      for (long long i = start; i < std::min(start + k, (long long)d.gsize); ++i) {
        out.push_back(int(i));
      }
    }
  }
  return out;
}

}  // namespace

using namespace rmpi;

extern "C" {

int MPI_Type_create_darray(int size, int rank, int ndims, const int gsizes[], const int distribs[],
                           const int dargs[], const int psizes[], int order, MPI_Datatype oldtype,
                           MPI_Datatype *newtype) {
  const char *who = "MPI_Type_create_darray";
  if (int rc = check_any_type(oldtype, who)) return rc;
  if (size < 1 || rank < 0 || rank >= size || ndims < 1) {
    return fail(nullptr, MPI_ERR_ARG, who, "rank %d of %d processes, %d dimensions", rank, size,
                ndims);
  }
  if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN) {
    return fail(nullptr, MPI_ERR_ARG, who, "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN",
                order);
  }
  long long grid = 1;
  for (int d = 0; d < ndims; ++d) {
    if (psizes[d] < 1) {
      return fail(nullptr, MPI_ERR_ARG, who, "dimension %d: %d processes", d, psizes[d]);
    }
    grid *= psizes[d];
  }
  if (grid != size) {
    return fail(nullptr, MPI_ERR_ARG, who, "a process grid of %lld processes for a group of %d",
                grid, size);
  }
  // The grid's ranks are row-major whatever the array's order (as a
  // Cartesian communicator's).
  std::vector<int> whole(gsizes, gsizes + ndims);
  std::vector<std::vector<int>> picked(static_cast<std::size_t>(ndims));
  for (int d = 0, below = size, r = rank; d < ndims; ++d) {
    below /= psizes[d];
    const Dimension dim{gsizes[d], distribs[d], dargs[d], psizes[d], r / below};
    r %= below;
    if (const std::string why = check(dim); !why.empty()) {
      return fail(nullptr, MPI_ERR_ARG, who, "dimension %d: %s", d, why.c_str());
    }
    picked[std::size_t(d)] = owned(dim);
  }
  *newtype = array_type(oldtype, whole, picked, order);
  std::vector<int> ints{size, rank, ndims};
  for (const int *a : {gsizes, distribs, dargs, psizes}) ints.insert(ints.end(), a, a + ndims);
  ints.push_back(order);
  record(*newtype, MPI_COMBINER_DARRAY, std::move(ints), {}, {oldtype});
  return MPI_SUCCESS;
}

}  // extern "C"
