// pvm_impl.hpp - what the files of rocl's PVM share: the task (the
// enrolled process or TPVM thread), its message buffers, tid translation,
// the directory look-ups and error reporting.
#pragma once

#include <pvm3.h>
#include <rocl/rocl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <rocl/rocl.hpp>
#include <string>
#include <vector>

#include "message_buffer.hpp"

namespace rpvm {

// ---- errors (errors.cpp) ---------------------------------------------------

// Records code as pvm_errno and, with PvmAutoErr on, prints PVM's line for
// it naming the call; returns code so that callers write `return fail(...)`.
int fail(int code, const char *call);
// The PVM code for a rocl failure of a call that addressed a task.
int from_rocl(int rocl_code);

// ---- message domains --------------------------------------------------------

// PVM contexts are rocl domains: context c travels in domain c. Contexts
// handed out by pvm_newcontext stay below kSystemDomains; the domains from
// there up carry the messages of collective calls, apart from the user's.
constexpr std::uint32_t kSystemDomains = 0x400000;
constexpr std::uint32_t kReduceDomain = kSystemDomains + 1;
constexpr std::uint32_t kGatherDomain = kSystemDomains + 2;
constexpr std::uint32_t kScatterDomain = kSystemDomains + 3;
constexpr std::uint32_t kBarrierDomain = kSystemDomains + 4;
constexpr std::uint32_t kSpawnDomain = kSystemDomains + 5;  // children's first words

// ---- tids (tids.cpp) ---------------------------------------------------------

// A gid as a PVM tid: itself when it fits 31 bits (ROCL_GID_BITS=31),
// else its server's low 7 bits and its serial's low 24 bits.
int tid_of(rocl_gid_t gid);
// The gid of the resource where the task (or TPVM thread) tid receives,
// from a cache or its directory entry {type=pvm-task, pvm.tid=tid}
// (pvm.gid); nullopt if no task has that tid.
std::optional<rocl_gid_t> gid_of(int tid);
// Tells the cache a pair learnt elsewhere (a spawn's answer).
void remember_tid(int tid, rocl_gid_t gid);
// A pvm_newcontext value (1 .. kSystemDomains-1) from the gid of the
// resource that reserves it.
int context_of(rocl_gid_t gid);

// ---- the task's buffers (buffer.cpp; one buffer: message_buffer.hpp) ----------

// A task's buffers by PVM id, and which are active for packing and
// unpacking.
class BufferTable {
 public:
  int make(int encoding);
  int adopt(std::unique_ptr<MessageBuffer> buffer);
  // PvmNoSuchBuf if id is not a buffer; clears the active ids it held.
  int free(int id);
  MessageBuffer *find(int id);
  int active_send = 0, active_receive = 0;

 private:
  std::map<int, std::unique_ptr<MessageBuffer>> buffers_;
  int next_id_ = 1;
};

// ---- the task (task.cpp) ------------------------------------------------------

struct GroupMembership {
  rocl_gid_t entry = ROCL_NULL_GID;  // its {type=pvm-group-member} resource
  rocl_gid_t claim = ROCL_NULL_GID;  // its {type=pvm-group-claim} resource
  int instance = 0;
};

// Deletes a membership's entries from the directory (groups.cpp).
void leave(const GroupMembership &membership);

// An enrolled task: its resource (where its messages arrive), its
// directory entry, identity, options and buffers. Every field but the
// identity is used under `lock`.
struct Task {
  rocl_gid_t gid = ROCL_NULL_GID;
  rocl_gid_t entry = ROCL_NULL_GID;  // {type=pvm-task, pvm.tid, pvm.gid, ...}
  int tid = 0;
  int parent_tid = 0;
  std::mutex lock;
  BufferTable buffers;
  int context = PvmBaseContext;
  int route = PvmAllowDirect;
  std::atomic<int> auto_error{1};  // read by fail() without the lock
  int show_tids = 1;
  int probe_buffer = 0;       // the last pvm_probe's answer
  bool catch_output = false;  // pvm_catchout: children keep their output
  std::map<std::string, GroupMembership> groups;
  std::vector<rocl_gid_t> contexts;  // resources that reserve pvm_newcontext's
};

// The calling thread's task, enrolling the process on first use; nullptr
// with *code set (PvmSysErr: rocl cannot start) if it cannot enrol.
Task *task(int *code);
// The task if enrolled, else nullptr (for pvm_perror's tid).
Task *task_if_enrolled();
// A context's host, as the directory names it ("host" of the context; ""
// if unknown), and this context's (the system's name if unknown).
std::string host_of(rocl_gid_t context);
std::string my_host_name();
// Registers t's directory entry for its resource t.gid and sets t.tid;
// kind is "process" or "thread". PvmOk or PvmSysErr.
int publish_task(Task &t, const char *kind);
// Removes t's entries (task, groups, contexts) from the directory.
void unpublish_task(Task &t);
// Makes t the calling thread's task (a TPVM thread), or nullptr: none.
void set_thread_task(Task *t);
// pvm_exit's work: leaves the directory and the rocl context.
int leave(Task *t);
// The task tid's directory entry, with its pvm.* attributes filled in.
std::optional<rocl::Found> task_entry(int tid);
// Environment variables of a spawned task (pvm_spawn sets them).
constexpr const char *kParentTidVariable = "ROCL_PVM_PARENT_TID";
constexpr const char *kContextVariable = "ROCL_PVM_CONTEXT";
constexpr const char *kOutputVariable = "ROCL_PVM_OUTPUT";  // "log" or "parent"
// Where and with which tag a spawned task reports its tid (RoCL 5.1's
// hand-shake): the spawner's resource and a tag of that spawn.
constexpr const char *kReportToVariable = "ROCL_PVM_REPORT_TO";
constexpr const char *kReportTagVariable = "ROCL_PVM_REPORT_TAG";

// Runs body(task) for a call, under the task's lock unless the call
// blocks (then body locks what it touches); a negative result is reported
// with fail().
template <class Body>
int call_locked(const char *call, Body body) {
  int code = PvmOk;
  Task *t = task(&code);
  if (t == nullptr) return fail(code, call);
  std::unique_lock guard(t->lock);
  const int rc = body(*t);
  guard.unlock();
  return rc < 0 ? fail(rc, call) : rc;
}
template <class Body>
int call_unlocked(const char *call, Body body) {
  int code = PvmOk;
  Task *t = task(&code);
  if (t == nullptr) return fail(code, call);
  const int rc = body(*t);
  return rc < 0 ? fail(rc, call) : rc;
}

// ---- directory helpers (directory.cpp) ---------------------------------------

std::string decimal(long long value);
// The first resource matching pattern; nullopt if none or on error.
std::optional<rocl::Found> find_first(const rocl::Attributes &pattern);
// Every resource matching pattern (empty on error).
std::vector<rocl::Found> find_all(const rocl::Attributes &pattern);
int attribute_int(const rocl::Found &found, const char *name, int otherwise = 0);
// Waits until at least count resources match pattern (timeout_ms < 0: no
// limit); every match, or nothing if the time ran out.
std::vector<rocl::Found> wait_for_entries(const rocl::Attributes &pattern, std::size_t count,
                                          int timeout_ms);
// Whether the resource mine (just registered) is the only one matching
// claimed. A claim (a group instance, a message box index) is won by the
// claimant that finds no other claim after registering its own: of two
// claims, at least the later one sees the earlier, on one directory
// server or several; both see each other when they race, and both retry
// after pause_before_retry (random, so that one goes first).
bool sole_claim(const rocl::Attributes &claimed, rocl_gid_t mine);
void pause_before_retry();
// Registers a resource (rocl_register): its gid, or a negative rocl code.
std::int64_t register_entry(const rocl::Attributes &attributes);

// ---- sending (messaging.cpp) ----------------------------------------------------

// Sends buffer to the task tid in domain with tag; a PVM code.
int send_buffer(Task &self, const MessageBuffer &buffer, int tid, int tag, std::uint32_t domain);
// Receives into a new buffer, made active (the old active one freed);
// timeout_ms as rocl's. Returns the buffer id, 0 if none came in time,
// or a PVM code.
int receive_buffer(Task &self, int tid, int tag, std::uint32_t domain, int timeout_ms,
                   const char *call);

// ---- packing (packing.cpp) ------------------------------------------------------

// count items of size bytes, stride items apart, into the active send
// buffer (out of the active receive buffer); PVM codes, reported as call.
int pack_items(const char *call, const void *items, int count, int stride, std::size_t size);
int unpack_items(const char *call, void *items, int count, int stride, std::size_t size);
int pack_string(const char *call, const char *s);
int unpack_string(const char *call, char *s);

// ---- groups (groups.cpp) -----------------------------------------------------------

rocl::Attributes group_pattern(const char *group);
// Each instance's member tid, by instance.
std::map<int, int> group_members(const char *group);
// The instance of tid in group, or PvmNotInGroup / PvmNoGroup.
int instance_of(const char *group, int tid);
// The tid of instance inst, or PvmNoInst / PvmNoGroup.
int tid_of_instance(const char *group, int inst);
// PvmNoGroup if group has no member, else when_group_exists.
int group_code_for_missing(const char *group, int when_group_exists);

// ---- data types (collectives.cpp) ------------------------------------------------

// Bytes of one item of a PVM_* data type; 0 for PVM_STR or an unknown one.
std::size_t type_size(int datatype);

// ---- notifications (notify.cpp) ----------------------------------------------------

// Stops the thread that watches for the exits pvm_notify asked about.
void stop_watching();

}  // namespace rpvm
