// win.hpp - one-sided communication (MPI 3.1 chapter 11): the object behind
// MPI_Win and the interface through which an origin reaches a target's
// window memory.
//
// Two ways to reach it (docs/mpi.md, "One-sided"):
//  - direct: every rank of the window is on one host and the window's
//    memory is one shared-memory segment mapped by all (MPI_Win_allocate,
//    MPI_Win_allocate_shared): a put is a copy into the target's memory,
//    locks and the accumulate guard are atomic words in the segment;
//  - messages: the window's memory is the user's own (MPI_Win_create,
//    MPI_Win_create_dynamic) or its ranks span hosts: every operation is a
//    rocl message to the target process's RMA agent, a thread that applies
//    it to the memory and answers flushes, locks and reads. One thread per
//    process applies every message window's operations, which makes
//    accumulates atomic without locks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mpi_impl.hpp"

namespace rmpi {

// Where a target's data lies, as a list of (displacement, length) blocks
// per element and the element's extent: a datatype's (a view of its
// blocks, which outlive the operation), or its description as it reached
// the target's agent.
struct Layout {
  std::span<const Block> blocks;
  MPI_Aint extent = 0;
  std::size_t packed = 0;  // bytes per element
  static Layout of(MPI_Datatype t);
  // The lowest and one past the highest byte of `count` elements, relative
  // to where the first element starts.
  MPI_Aint low(int count) const;
  MPI_Aint high(int count) const;
};
// Copies between a target's memory (count elements of layout at `at`) and
// packed bytes.
void read_elements(const char *at, int count, const Layout &l, char *packed);
void write_elements(char *at, int count, const Layout &l, const char *packed);
// The target's elements = in op the target's elements, for a predefined
// op (builtin, reductions.hpp; kReplace and kNoOp included) on elements
// of the predefined type basic; `old` (may be nullptr) gets their packed
// values from before.
void accumulate_elements(char *at, int count, const Layout &l, int builtin, MPI_Datatype basic,
                         const char *in, char *old);

// What an origin may do to one target's window. Each call is given packed
// origin bytes (puts, accumulates) or where to leave packed results
// (gets); offset is the byte offset of the target data in the target's
// window (for a dynamic window, the absolute address).
class Access {
 public:
  virtual ~Access() = default;
  virtual int put(int target, MPI_Aint offset, int count, const Layout &l, const char *data) = 0;
  // Copies the target's data into result (packed) by the next flush of
  // that target; `done` (if any) runs then, to unpack it.
  struct Result {
    char *into;                  // packed bytes, at least count * l.packed
    std::shared_ptr<void> keep;  // what must live until done
    std::function<void()> done;  // after the bytes arrived
  };
  virtual int get(int target, MPI_Aint offset, int count, const Layout &l, Result r) = 0;
  // builtin: the op's index (reductions.hpp; kReplace, kNoOp included);
  // basic: the predefined type of the elements; r.into nullptr: no fetch.
  virtual int accumulate(int target, MPI_Aint offset, int count, const Layout &l, int builtin,
                         MPI_Datatype basic, const char *data, Result r) = 0;
  // The target's element becomes `data` if it equals `compare`; r gets its
  // value from before.
  virtual int compare_and_swap(int target, MPI_Aint offset, MPI_Datatype t, const char *data,
                               const char *compare, Result r) = 0;
  virtual int lock(int target, bool exclusive) = 0;
  // Completes every operation started on target (as flush does), then
  // releases the lock.
  virtual int unlock(int target) = 0;
  // Every operation started on target has reached its memory and every
  // result is in place.
  virtual int flush(int target) = 0;
  virtual int flush_all() = 0;
  // This rank as a target: what other ranks' operations wrote into its
  // window before they synchronised with it is visible to this thread
  // (the owner's side of a fence, wait, test or sync). For messages, a
  // round trip to its own agent, which applied them.
  virtual int sync_local() = 0;
  // Dynamic windows: memory the target made accessible (messages only).
  virtual int attach(void *base, MPI_Aint size) = 0;
  virtual int detach(const void *base) = 0;
};

// One lock and the accumulate guard of one target in shared memory.
enum LockType { kLockNone = 0, kLockShared = 1, kLockExclusive = 2 };

}  // namespace rmpi

struct rocl_mpi_win {
  static constexpr std::uint32_t kMagic = 0x77696e64;
  std::uint32_t magic = kMagic;
  MPI_Comm comm = MPI_COMM_NULL;  // a private dup: barriers, PSCW messages, errors
  int flavor = 0;                 // MPI_WIN_FLAVOR_*
  int model = MPI_WIN_UNIFIED;    // one copy of the memory, public and private
  void *base = nullptr;           // this rank's window memory
  MPI_Aint size = 0;
  int disp_unit = 1;
  bool owns_base = false;   // MPI_Win_allocate's memory across hosts (malloc)
  char *segment = nullptr;  // direct windows: the mapped segment
  std::size_t segment_bytes = 0;
  std::vector<MPI_Aint> sizes;  // per rank: window bytes (checked by the origin)
  std::vector<int> disp_units;
  std::vector<char *> shared;  // per rank: its memory in this process (direct windows)
  std::unique_ptr<rmpi::Access> access;
  bool dynamic = false;
  std::string name;
  std::map<int, void *> attrs;  // cached attributes by keyval (attr.cpp)
  // Epochs, to report misuse (MPI_ERR_RMA_SYNC) instead of undefined results.
  std::vector<int> locked;    // per target: LockType held by this rank
  int lock_all = 0;           // MPI_Win_lock_all active
  bool fence_open = false;    // a fence started an access epoch
  std::vector<int> started;   // MPI_Win_start's targets (window ranks)
  std::vector<int> posted;    // MPI_Win_post's origins, until MPI_Win_wait
  std::size_t completed = 0;  // of posted: origins whose complete came (Win_test)
  bool epoch_to(int target) const {
    return fence_open || lock_all != 0 || locked[target] != rmpi::kLockNone ||
           std::find(started.begin(), started.end(), target) != started.end();
  }
};

namespace rmpi {

int check_win(MPI_Win win, const char *who);
// The direct engine over a segment every rank mapped, and the message
// engine (with this rank's exposure registered at its process's agent).
std::unique_ptr<Access> direct_access(MPI_Win win, char *locks);
std::unique_ptr<Access> message_access(MPI_Win win, int *error);
// Fetch_and_op of one predefined element at offset of target's memory
// in a direct window, under the target's accumulate guard; false (nothing
// done) if op is not defined on t.
bool direct_fetch_and_op(MPI_Win win, int target, MPI_Aint offset, MPI_Datatype t, int builtin,
                         const void *in, void *old);
// Bytes at the front of a direct window's segment for each rank's lock
// and accumulate guard.
std::size_t direct_header_bytes(int ranks);
// Attributes under user keyvals (attr.cpp): deleted by MPI_Win_free.
int delete_attributes(MPI_Win win, const char *who);
int get_user_attribute(MPI_Win win, int keyval, void *attribute_val, int *flag);
// Stops the agent's thread (MPI_Finalize).
void end_rma_agent();
// The predefined type a datatype is made of (accumulates), or nullptr.
MPI_Datatype basic_of(MPI_Datatype t);
int basic_index(MPI_Datatype basic);
MPI_Datatype basic_at(int index);

}  // namespace rmpi
