// graph_topo.cpp - graph and distributed graph topologies (MPI 3.1
// sections 7.5.3 to 7.5.5, Graph_map of 7.5.8) and the neighbour lists the
// neighbourhood collectives follow (neighbor.cpp). Like the Cartesian grid
// (topo.cpp), a topology is bookkeeping on a communicator that
// MPI_Comm_split makes without reordering: rank i of the graph is rank i of
// the old communicator, which the standard allows (reorder is a hint).
#include <algorithm>
#include <cstring>
#include <vector>

#include "mpi_impl.hpp"

int rocl_mpi_unweighted, rocl_mpi_weights_empty;  // only their addresses matter

namespace {

using rmpi::fail;

int check_kind(MPI_Comm comm, int kind, const char *who) {
  if (int rc = rmpi::check_comm(comm, who)) return rc;
  if (comm->graph.kind != kind) {
    return fail(comm, MPI_ERR_TOPOLOGY, who, "the communicator has no %s topology",
                kind == MPI_GRAPH ? "graph" : "distributed graph");
  }
  return MPI_SUCCESS;
}

// Each of the n ranks at list is one of comm's (what names a neighbour).
int check_ranks(MPI_Comm comm, const int *list, int n, const char *what, const char *who) {
  for (int i = 0; i < n; ++i) {
    if (list[i] < 0 || list[i] >= comm->size) {
      return fail(comm, MPI_ERR_ARG, who, "%s[%d] = %d is not a rank of the communicator (size %d)",
                  what, i, list[i], comm->size);
    }
  }
  return MPI_SUCCESS;
}

// The n weights at w (none when the graph is unweighted): non-negative,
// and an array when there are any to give.
int read_weights(MPI_Comm comm, const int *w, int n, bool weighted, const char *what,
                 const char *who, std::vector<int> *out) {
  out->clear();
  if (!weighted || n == 0) return MPI_SUCCESS;
  if (w == MPI_WEIGHTS_EMPTY || w == nullptr) {
    return fail(comm, MPI_ERR_ARG, who, "%s has no weights for %d edges", what, n);
  }
  for (int i = 0; i < n; ++i) {
    if (w[i] < 0) return fail(comm, MPI_ERR_ARG, who, "%s[%d] = %d is negative", what, i, w[i]);
  }
  out->assign(w, w + n);
  return MPI_SUCCESS;
}

// The communicator of the topology: comm_old's first `members` ranks in
// their order, the others MPI_COMM_NULL; no attributes are copied.
int make_comm(MPI_Comm comm_old, int members, MPI_Comm *out) {
  const bool in = comm_old->rank < members;
  return MPI_Comm_split(comm_old, in ? 0 : MPI_UNDEFINED, comm_old->rank, out);
}

// Copies what fits of from into out[0..max), as the inquiries' max
// arguments give the lengths of the caller's arrays.
void copy_out(const std::vector<int> &from, int max, int *out) {
  const std::size_t n = std::min(from.size(), std::size_t(std::max(max, 0)));
  if (n != 0) std::memcpy(out, from.data(), n * sizeof(int));
}

// One edge of MPI_Dist_graph_create as it travels to its two ends.
struct Edge {
  int source, destination, weight;
};

// Sends each edge to its source and its destination (all-to-all of counts,
// then of edges): what comes back are this rank's edges, in the order of
// the ranks that gave them, each in the order it was given.
int deliver_edges(MPI_Comm comm, const std::vector<Edge> &given, std::vector<Edge> *mine) {
  const auto n = std::size_t(comm->size);
  std::vector<std::vector<Edge>> to(n);
  for (const Edge &e : given) {
    to[std::size_t(e.source)].push_back(e);
    if (e.destination != e.source) to[std::size_t(e.destination)].push_back(e);
  }
  constexpr int kInts = sizeof(Edge) / sizeof(int);
  std::vector<int> send_counts(n), send_displs(n), recv_counts(n), recv_displs(n);
  std::vector<Edge> flat;
  for (std::size_t j = 0; j < n; ++j) {
    send_displs[j] = int(flat.size()) * kInts;
    send_counts[j] = int(to[j].size()) * kInts;
    flat.insert(flat.end(), to[j].begin(), to[j].end());
  }
  if (int rc = MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm))
    return rc;
  int total = 0;
  for (std::size_t j = 0; j < n; ++j) {
    recv_displs[j] = total;
    total += recv_counts[j];
  }
  mine->assign(std::size_t(total / kInts), Edge{});
  return MPI_Alltoallv(flat.data(), send_counts.data(), send_displs.data(), MPI_INT, mine->data(),
                       recv_counts.data(), recv_displs.data(), MPI_INT, comm);
}

int cart_neighbors(MPI_Comm comm, rmpi::Neighbors *out) {
  out->cartesian = true;
  for (int d = 0; d < int(comm->cart_dims.size()); ++d) {
    int below = MPI_PROC_NULL, above = MPI_PROC_NULL;
    if (int rc = MPI_Cart_shift(comm, d, 1, &below, &above)) return rc;
    for (std::vector<int> *v : {&out->sources, &out->destinations}) {
      v->push_back(below);
      v->push_back(above);
    }
  }
  return MPI_SUCCESS;
}

}  // namespace

namespace rmpi {

int neighbors_of(MPI_Comm comm, const char *who, Neighbors *out) {
  if (int rc = check_comm(comm, who)) return rc;
  *out = Neighbors{};
  if (!comm->cart_dims.empty()) return cart_neighbors(comm, out);
  const GraphTopology &g = comm->graph;
  if (g.kind == MPI_GRAPH) {
    const int first = comm->rank == 0 ? 0 : g.index[std::size_t(comm->rank) - 1];
    out->sources.assign(g.edges.begin() + first,
                        g.edges.begin() + g.index[std::size_t(comm->rank)]);
    out->destinations = out->sources;
    return MPI_SUCCESS;
  }
  if (g.kind == MPI_DIST_GRAPH) {
    out->sources = g.sources;
    out->destinations = g.destinations;
    return MPI_SUCCESS;
  }
  return fail(comm, MPI_ERR_TOPOLOGY, who,
              "the communicator has no topology (Cartesian, graph or distributed graph)");
}

}  // namespace rmpi

extern "C" {

// index[i] is the number of edges of nodes 0..i; edges lists each node's
// neighbours in turn. Ranks from nnodes on get MPI_COMM_NULL.
int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[], int,
                     MPI_Comm *comm_graph) {
  const char *who = "MPI_Graph_create";
  if (int rc = rmpi::check_comm(comm_old, who)) return rc;
  if (int rc = rmpi::check_intra(comm_old, who)) return rc;
  if (nnodes < 0 || nnodes > comm_old->size) {
    return fail(comm_old, MPI_ERR_ARG, who, "%d nodes on a communicator of %d", nnodes,
                comm_old->size);
  }
  for (int i = 0; i < nnodes; ++i) {
    if (index[i] < (i == 0 ? 0 : index[i - 1])) {
      return fail(comm_old, MPI_ERR_ARG, who, "index[%d] = %d is below the previous entry", i,
                  index[i]);
    }
  }
  const int nedges = nnodes == 0 ? 0 : index[nnodes - 1];
  for (int e = 0; e < nedges; ++e) {
    if (edges[e] < 0 || edges[e] >= nnodes) {
      return fail(comm_old, MPI_ERR_ARG, who, "edges[%d] = %d is not a node (%d nodes)", e,
                  edges[e], nnodes);
    }
  }
  if (int rc = make_comm(comm_old, nnodes, comm_graph)) return rc;
  if (*comm_graph == MPI_COMM_NULL) return MPI_SUCCESS;
  rmpi::GraphTopology &g = (*comm_graph)->graph;
  g.kind = MPI_GRAPH;
  g.index.assign(index, index + nnodes);
  g.edges.assign(edges, edges + nedges);
  return MPI_SUCCESS;
}

int MPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges) {
  if (int rc = check_kind(comm, MPI_GRAPH, "MPI_Graphdims_get")) return rc;
  *nnodes = int(comm->graph.index.size());
  *nedges = int(comm->graph.edges.size());
  return MPI_SUCCESS;
}

int MPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[]) {
  if (int rc = check_kind(comm, MPI_GRAPH, "MPI_Graph_get")) return rc;
  copy_out(comm->graph.index, maxindex, index);
  copy_out(comm->graph.edges, maxedges, edges);
  return MPI_SUCCESS;
}

int MPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors) {
  const char *who = "MPI_Graph_neighbors_count";
  if (int rc = check_kind(comm, MPI_GRAPH, who)) return rc;
  if (rank < 0 || rank >= comm->size) {
    return fail(comm, MPI_ERR_RANK, who, "rank %d is not a node (%d nodes)", rank, comm->size);
  }
  const std::vector<int> &index = comm->graph.index;
  *nneighbors = index[std::size_t(rank)] - (rank == 0 ? 0 : index[std::size_t(rank) - 1]);
  return MPI_SUCCESS;
}

int MPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[]) {
  int n = 0;
  if (int rc = MPI_Graph_neighbors_count(comm, rank, &n)) return rc;
  const int first = rank == 0 ? 0 : comm->graph.index[std::size_t(rank) - 1];
  const int copied = std::min(n, std::max(maxneighbors, 0));
  std::copy_n(comm->graph.edges.begin() + first, copied, neighbors);
  return MPI_SUCCESS;
}

// The rank this process would have in a graph of nnodes that Graph_create
// made from comm: its own if the graph has room for it (no reordering).
int MPI_Graph_map(MPI_Comm comm, int nnodes, const int[], const int[], int *newrank) {
  if (int rc = rmpi::check_comm(comm, "MPI_Graph_map")) return rc;
  if (int rc = rmpi::check_intra(comm, "MPI_Graph_map")) return rc;
  if (nnodes < 0 || nnodes > comm->size) {
    return fail(comm, MPI_ERR_ARG, "MPI_Graph_map", "%d nodes on a communicator of %d", nnodes,
                comm->size);
  }
  *newrank = comm->rank < nnodes ? comm->rank : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

// Each rank names its own in- and out-neighbours; nothing is exchanged.
int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                   const int sourceweights[], int outdegree,
                                   const int destinations[], const int destweights[], MPI_Info, int,
                                   MPI_Comm *comm_dist_graph) {
  const char *who = "MPI_Dist_graph_create_adjacent";
  if (int rc = rmpi::check_comm(comm_old, who)) return rc;
  if (int rc = rmpi::check_intra(comm_old, who)) return rc;
  if (indegree < 0 || outdegree < 0) {
    return fail(comm_old, MPI_ERR_ARG, who, "indegree %d, outdegree %d", indegree, outdegree);
  }
  if (int rc = check_ranks(comm_old, sources, indegree, "sources", who)) return rc;
  if (int rc = check_ranks(comm_old, destinations, outdegree, "destinations", who)) return rc;
  rmpi::GraphTopology g;
  g.kind = MPI_DIST_GRAPH;
  g.weighted = sourceweights != MPI_UNWEIGHTED && destweights != MPI_UNWEIGHTED;
  if (int rc = read_weights(comm_old, sourceweights, indegree, g.weighted, "sourceweights", who,
                            &g.source_weights))
    return rc;
  if (int rc = read_weights(comm_old, destweights, outdegree, g.weighted, "destweights", who,
                            &g.dest_weights))
    return rc;
  if (indegree != 0) g.sources.assign(sources, sources + indegree);
  if (outdegree != 0) g.destinations.assign(destinations, destinations + outdegree);
  if (int rc = make_comm(comm_old, comm_old->size, comm_dist_graph)) return rc;
  (*comm_dist_graph)->graph = std::move(g);
  return MPI_SUCCESS;
}

// Each rank gives any edges (sources[i] -> each of its degrees[i]
// destinations); every edge travels to both its ends, which keep it in
// the order of the ranks that gave them (the standard leaves it open).
int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[],
                          const int destinations[], const int weights[], MPI_Info, int,
                          MPI_Comm *comm_dist_graph) {
  const char *who = "MPI_Dist_graph_create";
  if (int rc = rmpi::check_comm(comm_old, who)) return rc;
  if (int rc = rmpi::check_intra(comm_old, who)) return rc;
  if (n < 0) return fail(comm_old, MPI_ERR_ARG, who, "n = %d sources", n);
  if (int rc = check_ranks(comm_old, sources, n, "sources", who)) return rc;
  int edges = 0;
  for (int i = 0; i < n; ++i) {
    if (degrees[i] < 0) return fail(comm_old, MPI_ERR_ARG, who, "degrees[%d] = %d", i, degrees[i]);
    edges += degrees[i];
  }
  if (int rc = check_ranks(comm_old, destinations, edges, "destinations", who)) return rc;
  const bool weighted = weights != MPI_UNWEIGHTED;
  std::vector<int> w;
  if (int rc = read_weights(comm_old, weights, edges, weighted, "weights", who, &w)) return rc;
  std::vector<Edge> given;
  for (int i = 0, e = 0; i < n; ++i) {
    for (int k = 0; k < degrees[i]; ++k, ++e) {
      given.push_back({sources[i], destinations[e], weighted ? w[std::size_t(e)] : 1});
    }
  }
  std::vector<Edge> mine;
  if (int rc = deliver_edges(comm_old, given, &mine)) return rc;
  rmpi::GraphTopology g;
  g.kind = MPI_DIST_GRAPH;
  g.weighted = weighted;
  for (const Edge &e : mine) {
    if (e.source == comm_old->rank) {
      g.destinations.push_back(e.destination);
      if (weighted) g.dest_weights.push_back(e.weight);
    }
    if (e.destination == comm_old->rank) {
      g.sources.push_back(e.source);
      if (weighted) g.source_weights.push_back(e.weight);
    }
  }
  if (int rc = make_comm(comm_old, comm_old->size, comm_dist_graph)) return rc;
  (*comm_dist_graph)->graph = std::move(g);
  return MPI_SUCCESS;
}

int MPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree, int *weighted) {
  if (int rc = check_kind(comm, MPI_DIST_GRAPH, "MPI_Dist_graph_neighbors_count")) return rc;
  *indegree = int(comm->graph.sources.size());
  *outdegree = int(comm->graph.destinations.size());
  *weighted = comm->graph.weighted ? 1 : 0;
  return MPI_SUCCESS;
}

int MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[],
                             int maxoutdegree, int destinations[], int destweights[]) {
  if (int rc = check_kind(comm, MPI_DIST_GRAPH, "MPI_Dist_graph_neighbors")) return rc;
  const rmpi::GraphTopology &g = comm->graph;
  copy_out(g.sources, maxindegree, sources);
  copy_out(g.destinations, maxoutdegree, destinations);
  auto wanted = [](const int *w) { return w != MPI_UNWEIGHTED && w != MPI_WEIGHTS_EMPTY; };
  if (g.weighted && wanted(sourceweights)) copy_out(g.source_weights, maxindegree, sourceweights);
  if (g.weighted && wanted(destweights)) copy_out(g.dest_weights, maxoutdegree, destweights);
  return MPI_SUCCESS;
}

}  // extern "C"
