// mpi_impl.hpp - the objects behind rocl's MPI handles and the helpers the
// translation shares.
//
// The mapping (docs/mpi.md): every rank of a communicator owns one rocl
// resource for it, so the communicator's matching state (expected and
// unexpected queues) is that resource's generic::Communicator, with its own
// lock: threads working on different communicators never share one. The MPI
// header (context, source, destination, tag) is rocl's (destination
// resource, source resource gid, tag, domain): the domain keeps a
// communicator's point-to-point traffic and its collectives apart, so
// wildcards never cross; rocl acknowledges the match of a synchronous send
// (ROCL_FLAG_ACK) in a domain of its own (kSyncAck).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "mpi.h"
#include "offload.hpp"
#include "rocl/rocl.h"

namespace rmpi {

enum Domain : std::uint32_t {
  kPointToPoint = 0,
  kCollective = 1,
  kSyncAck = kPointToPoint | ROCL_ACK_DOMAIN,
};
// Message flag of a synchronous send: rocl acknowledges its match.
inline constexpr unsigned kSyncFlag = ROCL_FLAG_ACK;
inline constexpr int kTagUb = 0x3fffffff;

// One piece of a datatype's element: `len` bytes at `disp` from the
// element's start, in type-map order.
struct Block {
  MPI_Aint disp;
  std::size_t len;
};

// An element of MPI_FLOAT_INT and the other pair types (MAXLOC, MINLOC).
template <class V, class I>
struct Pair {
  V v;
  I i;
};

// A predefined op's function on n basic elements (inout = in op inout), and
// a type's chooser of them by op (nullptr where MPI does not define it).
using Fn = void (*)(const void *in, void *inout, std::size_t n);
using Chooser = Fn (*)(int op);

bool in_place(const void *p);

// Error reporting (env.cpp): formats "who: what", keeps it for
// MPI_Error_string, applies comm's error handler (fatal: print and exit).
int fail(MPI_Comm comm, int error_class, const char *who, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
// MPI class for a rocl error code, with rocl_last_error() as the sentence.
int fail_rocl(MPI_Comm comm, int rocl_code, const char *who);
bool initialized();

// What a derived type was made of (MPI_Type_get_contents): its constructor
// and the arguments it was given. The datatypes among them are held
// (retain_type), so they outlive the handles the user frees.
struct TypeContents {
  int combiner;
  std::vector<int> ints;
  std::vector<MPI_Aint> addrs;
  std::vector<MPI_Datatype> types;
  TypeContents(int c, std::vector<int> i, std::vector<MPI_Aint> a, std::vector<MPI_Datatype> t);
  ~TypeContents();
  TypeContents(const TypeContents &) = delete;
  TypeContents &operator=(const TypeContents &) = delete;
};

// A graph or distributed graph topology of a communicator (graph_topo.cpp).
struct GraphTopology {
  int kind = MPI_UNDEFINED;  // MPI_GRAPH, MPI_DIST_GRAPH, or MPI_UNDEFINED for none
  // MPI_GRAPH: the whole graph, as Graph_create was given it.
  std::vector<int> index, edges;
  // MPI_DIST_GRAPH: this rank's in- and out-neighbours in the order they
  // were given (or learnt), and their weights when weighted.
  std::vector<int> sources, source_weights, destinations, dest_weights;
  bool weighted = false;
};

}  // namespace rmpi

struct rocl_mpi_errhandler {
  bool fatal;
};

struct rocl_mpi_comm {
  static constexpr std::uint32_t kMagic = 0x636f6d6d;
  std::uint32_t magic = 0;
  int rank = 0;
  int size = 0;
  rocl_gid_t self = ROCL_NULL_GID;  // this rank's resource for the communicator
  std::vector<rocl_gid_t> gids;     // rank -> resource
  std::vector<int> world;           // rank -> rank in MPI_COMM_WORLD (Comm_compare)
  std::unordered_map<rocl_gid_t, int> rank_of;
  MPI_Errhandler errhandler = MPI_ERRORS_ARE_FATAL;
  std::string name;             // MPI_Comm_set_name's
  std::map<int, void *> attrs;  // cached attributes by keyval (attr.cpp)
  // A Cartesian topology (topo.cpp): dims empty for none; or a graph or
  // distributed graph one (graph_topo.cpp). Comm_dup copies them.
  std::vector<int> cart_dims, cart_periods;
  rmpi::GraphTopology graph;
  // An intercommunicator's own group (intercomm.cpp); nullptr for an
  // intracommunicator. The rank table above is then the remote group's.
  rocl_mpi_comm *inter_local = nullptr;
  // Where its non-blocking collectives run (offload.hpp), once it had one.
  std::unique_ptr<rmpi::Offload> offload;
  // The handle's reference plus one per active request: Comm_free with a
  // receive pending deletes the resource when the receive completes
  // (retain_comm, release_comm).
  std::atomic<int> refs{1};
  // The rank of the resource gid, given the source rank the receive named
  // (MPI_ANY_SOURCE for none): a named source needs no lookup.
  int source_rank(rocl_gid_t gid, int asked) const {
    if (asked >= 0 && asked < size && gids[asked] == gid) return asked;
    return source_rank_of(gid);
  }
  int source_rank_of(rocl_gid_t gid) const;  // by lookup
};

// A reference count that a copied object starts afresh (at 1).
struct RefCount {
  std::atomic<int> n{1};
  RefCount() = default;
  RefCount(const RefCount &) {}
  RefCount &operator=(const RefCount &) { return *this; }
};

struct rocl_mpi_datatype {
  static constexpr std::uint32_t kMagic = 0x74797065;
  std::uint32_t magic = kMagic;
  std::size_t size = 0;    // MPI_Type_size: the data's bytes
  std::size_t packed = 0;  // bytes per element in a message (pair types keep their padding)
  MPI_Aint lb = 0, extent = 0;
  std::vector<rmpi::Block> blocks;
  bool dense = true;                // count elements are count * packed bytes from blocks[0].disp
  rmpi::Chooser reducer = nullptr;  // of its basic elements, if all of one type
  std::size_t basic_count = 0;      // basic elements per element
  bool predefined = false;
  bool committed = false;
  std::string name;             // MPI_Type_set_name's (predefined: their standard one)
  std::map<int, void *> attrs;  // cached attributes by keyval (attr.cpp)
  // Its constructor's (type_contents.cpp); none for a predefined type.
  std::shared_ptr<const rmpi::TypeContents> contents;
  // The handle's reference plus one per request using the type: a type
  // freed while a receive into it is pending lives until the request goes.
  RefCount refs;
  MPI_Aint first() const { return blocks.empty() ? 0 : blocks[0].disp; }
};

struct rocl_mpi_op {
  static constexpr std::uint32_t kMagic = 0x6f707073;
  std::uint32_t magic = kMagic;
  int builtin = -1;  // index of a predefined op, or -1
  MPI_User_function *user = nullptr;
  bool commute = true;
};

namespace rmpi {

// Validation with MPI's error classes: 0 if fine, else fail()'s code.
int check_comm(MPI_Comm comm, const char *who);
int check_type(MPI_Comm comm, MPI_Datatype t, const char *who);
// A datatype handle, committed or not (inquiries, names, attributes).
int check_any_type(MPI_Datatype t, const char *who);
int check_count(MPI_Comm comm, int count, const char *who);
int check_rank(MPI_Comm comm, int rank, bool any_ok, const char *who);
int check_tag(MPI_Comm comm, int tag, bool any_ok, const char *who);

// Datatypes (datatype.cpp).
void pack(const void *buf, int count, MPI_Datatype t, void *out);
void unpack(const void *in, std::size_t bytes, void *buf, int count, MPI_Datatype t);
// (buf, count, t) as contiguous bytes: the user memory itself when t is
// dense, else a staging copy (load: packed from buf now; store(): back).
class Contiguous {
 public:
  Contiguous(const void *buf, int count, MPI_Datatype t, bool load);
  char *data() { return data_; }
  std::size_t bytes() const { return bytes_; }
  void store(std::size_t bytes);

 private:
  void *buf_;
  int count_;
  MPI_Datatype type_;
  std::size_t bytes_;
  char *data_;
  std::vector<char> staging_;
};

void retain_type(MPI_Datatype t);
void release_type(MPI_Datatype t);
// Records how t was made (type_contents.cpp), holding the types.
void record(MPI_Datatype t, int combiner, std::vector<int> ints, std::vector<MPI_Aint> addrs,
            std::vector<MPI_Datatype> types);
// The elements of an array of old (sizes per dimension) whose indexes
// are picked per dimension (each list ascending), in the array's storage
// order (MPI_ORDER_C: the last dimension fastest), resized to the whole
// array: subarrays and distributed arrays (darray.cpp).
MPI_Datatype array_type(MPI_Datatype old, const std::vector<int> &sizes,
                        const std::vector<std::vector<int>> &picked, int order);

// Reductions (op.cpp): inout = in op inout, element-wise over packed data.
int reduce_local(MPI_Comm comm, MPI_Op op, MPI_Datatype t, const void *in, void *inout, int count,
                 const char *who);
int check_op(MPI_Comm comm, MPI_Op op, MPI_Datatype t, const char *who);
const char *op_name(int builtin);

// Plain transfers of contiguous bytes in a domain (p2p.cpp), for the
// collectives and communicator creation: never wildcards.
int send_bytes(MPI_Comm comm, int to, int tag, Domain d, const void *p, std::size_t n);
// Sends n bytes at p to rank `to` in domain d: lent (rocl_isendx_lend)
// where lent may be set, which rocl then sets to the request to wait for
// (left NULL if it copied), else copied. Returns rocl's code.
int send_contiguous(MPI_Comm comm, int to, int tag, Domain d, unsigned flags, const void *p,
                    std::size_t n, rocl_request_t *lent);
// send_bytes for a rank that is receiving (or will without waiting for
// this rank): large data is lent, the receiver copying it once straight
// from p, and the call returns when it has.
int send_to_receiver(MPI_Comm comm, int to, int tag, Domain d, const void *p, std::size_t n);
// Sends n bytes of mine to partner and receives its n into theirs.
int exchange_bytes(MPI_Comm comm, int partner, int tag, Domain d, const void *mine, void *theirs,
                   std::size_t n);
int recv_bytes(MPI_Comm comm, int from, int tag, Domain d, void *p, std::size_t n);
// The resource of a new communicator (comm.cpp) and its end.
rocl_gid_t register_comm_resource(const char *kind, int rank);
// Intercommunicators (intercomm.cpp): one group as it travels between
// leaders (its members' new resources and world ranks, in rank order),
// gathered over the local group; an intercommunicator made of a private
// dup of the local group, this process's resource and the remote group;
// the collectives that work on them, and the check the others make.
struct GroupMember {
  rocl_gid_t gid;
  int world;
};
int gather_group(MPI_Comm local, rocl_gid_t mine, std::vector<GroupMember> *out);
MPI_Comm make_intercomm(MPI_Comm local_dup, rocl_gid_t self,
                        const std::vector<GroupMember> &remote);
int check_intra(MPI_Comm comm, const char *who);
int inter_barrier(MPI_Comm comm);
int inter_bcast(void *buffer, int count, MPI_Datatype t, int root, MPI_Comm comm);
int inter_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op,
                    MPI_Comm comm);
// Comm_dup and Comm_split of an intercommunicator (intercomm.cpp).
int inter_dup(MPI_Comm comm, MPI_Comm *newcomm);
int inter_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
// The other collectives on intercommunicators (inter_coll.cpp), reached
// from coll.cpp's entry points once those checked the communicator; a
// rooted one takes MPI_ROOT, MPI_PROC_NULL or a remote rank as root, and
// MPI_IN_PLACE is refused (MPI_ERR_BUFFER) where a buffer is read.
int refuse_in_place(MPI_Comm comm, const void *buf, const char *who);
int inter_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op, int root,
                 MPI_Comm comm);
int inter_gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                  MPI_Comm comm);
int inter_scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                   MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                   int root, MPI_Comm comm);
int inter_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, const char *who);
int inter_alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                    const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                    const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm);
// recvcounts: one per rank of the LOCAL group.
int inter_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype t,
                         MPI_Op op, MPI_Comm comm, const char *who);
// MPI_Comm_spawn's children (spawn.cpp): their spawn's id ("" for a
// process not spawned), which names their world apart from the parents';
// and, in MPI_Init, the intercommunicator to the parents.
std::string spawn_id();
int join_parents();
// MPI_APPNUM: a spawned process's command index in MPI_Comm_spawn_multiple.
int appnum();
// A new communicator of these resources (rank -> gid) and world ranks.
MPI_Comm new_comm(int rank, std::vector<rocl_gid_t> gids, std::vector<int> world,
                  MPI_Errhandler errhandler);
// A reference to comm for an active request, and its end (the handle's
// own ends in MPI_Comm_free): the last one deletes comm.
void retain_comm(MPI_Comm comm);
void release_comm(MPI_Comm comm);
// Attributes (attr.cpp): copied by a dup through their keys' copy
// callbacks, deleted through their delete callbacks (Comm_free, Finalize).
int copy_attributes(MPI_Comm from, MPI_Comm to);
int delete_attributes(MPI_Comm comm, const char *who);
// The same for datatypes (MPI_Type_dup, MPI_Type_free).
int copy_attributes(MPI_Datatype from, MPI_Datatype to);
int delete_attributes(MPI_Datatype t, const char *who);
bool is_user_key(int keyval);
// MPI_Comm_get_attr of a user key (a datatype's key is an error).
int get_user_attribute(MPI_Comm comm, int keyval, void *attribute_val, int *flag);
// A request that completes when job does: a non-blocking collective's.
MPI_Request job_request(MPI_Comm comm, std::shared_ptr<Job> job);
// A request that is complete already (request.cpp): MPI_Imrecv's, whose
// message was taken by the matched probe.
MPI_Request completed_request(MPI_Comm comm, const MPI_Status &status, int error);
// Whether the thread level is below MPI_THREAD_MULTIPLE (env.cpp).
bool one_caller_at_a_time();
// Collective helpers (coll.cpp): every rank's n bytes, in rank order; and
// acc (count packed elements) reduced over the ranks in rank order, the
// result at rank 0 (the other ranks' acc is scratch afterwards).
int allgather_bytes(MPI_Comm comm, const void *mine, std::size_t n, void *all);
int reduce_packed(MPI_Comm comm, std::vector<char> &acc, int count, MPI_Datatype t, MPI_Op op,
                  const char *who);
// Collective transfers of (buf, count, t) in the kCollective domain
// (coll.cpp): packed if t is not dense, never wildcards.
int send_from(MPI_Comm c, int to, int tag, const void *buf, int count, MPI_Datatype t);
// send_from to a rank that receives without waiting for this one
// (send_to_receiver: large dense data lent, the call returning once taken).
int send_to_receiver(MPI_Comm c, int to, int tag, const void *buf, int count, MPI_Datatype t);
// A send that may lend a dense buffer: its request, if rocl lent it, is
// added to *lent, to be waited for (wait_all_lent) once this rank has
// received what it must; buf must not change until then.
int post_lendable(MPI_Comm c, int to, int tag, const void *buf, int count, MPI_Datatype t,
                  std::vector<rocl_request_t> *lent);
int wait_all_lent(MPI_Comm c, std::vector<rocl_request_t> *lent);
int recv_into(MPI_Comm c, int from, int tag, void *buf, int count, MPI_Datatype t);
// Collective-domain tags above coll.cpp's own: the neighbourhood
// collectives', one per neighbour slot of a Cartesian topology from here.
inline constexpr int kNeighborTag = 64;
// A communicator's neighbours in the order of the neighbourhood
// collectives' buffers (graph_topo.cpp): receives from sources[k] into
// block k, sends block k to destinations[k]; MPI_PROC_NULL (a Cartesian
// grid's open edge) keeps its block but moves nothing. In a Cartesian
// topology block s of a sender lands in block s^1 of its receiver (what
// goes up a dimension comes from below), so a neighbour met twice (a
// periodic dimension of 1 or 2) still gets each block right.
struct Neighbors {
  std::vector<int> sources, destinations;
  bool cartesian = false;
};
int neighbors_of(MPI_Comm comm, const char *who, Neighbors *out);
// Posts run as a non-blocking collective of comm (icoll.cpp): the request
// completes when run has returned on comm's offload thread.
int post_collective(MPI_Comm comm, const char *who, MPI_Request *request,
                    std::function<int(MPI_Comm)> run);
// Point to point (p2p.cpp), shared with the immediate forms.
inline rocl_gid_t source_gid(MPI_Comm comm, int source) {
  return source == MPI_ANY_SOURCE ? ROCL_ANY_GID : comm->gids[source];
}
inline int rocl_tag(int tag) {
  return tag == MPI_ANY_TAG ? ROCL_ANY_TAG : tag;
}
int check_send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
               const char *who);
int check_recv(int count, MPI_Datatype t, int source, int tag, MPI_Comm comm, const char *who);
int check_bsend_room(MPI_Comm comm, int count, MPI_Datatype t, const char *who);
// lent: where a standard or ready send may lend buf (rocl_isendx_lend):
// set to the rocl request to complete if rocl did, left NULL if it copied.
int post_send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
              unsigned flags, const char *who, rocl_request_t *lent = nullptr);
void receive_target(void *buf, int count, MPI_Datatype t, void *none, void **into,
                    std::size_t *cap);
// Fills what an MPI status says about a received rocl message.
void set_status(MPI_Status *s, int source, int tag, std::size_t bytes);
void set_empty_status(MPI_Status *s);
// After a receive of (cap) bytes from source (a rank or MPI_ANY_SOURCE)
// got st: unpack if staged, fill the status, report truncation. Inline:
// on the path of every received message (MPI_Recv, MPI_Wait).
inline int finish_recv(MPI_Comm comm, int source, const rocl_status_t &st, void *buf, int count,
                       MPI_Datatype t, MPI_Status *status, const char *who) {
  const int from = comm->source_rank(st.origin, source);
  const std::size_t cap = t->packed * std::size_t(count);
  if (!t->dense) {
    unpack(st.ptr, std::min(cap, st.len), buf, count, t);
    rocl_bfret(st.ptr);
  }
  const bool cut = st.len > cap;
  set_status(status, from, st.tag, std::min(cap, st.len));
  if (cut) {
    return fail(
        comm, MPI_ERR_TRUNCATE, who,
        "a message of %zu bytes from rank %d (tag %d) does not fit the %zu bytes of the receive",
        st.len, from, st.tag, cap);
  }
  return MPI_SUCCESS;
}

}  // namespace rmpi
