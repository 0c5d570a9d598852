// directory.hpp - the resource directory (RoCL paper, section 3) as seen by
// the core: register / remove / query resources described by attribute lists.
//
// Contract of every Directory and QueryCursor: thread safe; calls may block
// (a node server makes them network round trips). Failures return a negative
// ROCL_E* code and record a sentence with fail() (status/status.hpp).
//
// ---- Global ids ----------------------------------------------------------------
//
//   bits 63..48  id of the directory server that issued the gid, 1..0x7fff
//                (so every gid is > 0 as an int64_t, and ROCL_ANY_GID, whose
//                server bits are 0xffff, is never issued)
//   bits 47..0   serial, starting at 1 for each server
//
// Each server owns the whole serial range of its id from start-up (the
// paper's "subset of global identifiers obtained at start-up"): issuing a gid
// never needs another server. ROCL_NULL_GID (0) is never issued.
//
// Compact gids (ROCL_GID_BITS=31, for programs written to the RoCL paper's
// `int` gids, rocl/rocl_paper.h): a server so set issues
//   bits 30..24  its id, 1..127
//   bits 23..0   serial, from 1
// so every gid is below 2^31. A gid is compact iff it is below 2^31; a wide
// one is at least 2^48 (its server bits are >= 1): either decodes without
// knowing how its server was set up.
//
// ---- The "context" attribute ---------------------------------------------------
//
// Every registered resource carries the attribute "context": the gid of the
// context that registered it, 8 bytes in native byte order. A context is
// registered with context == ROCL_NULL_GID: its "context" attribute is then
// its own gid. The name is reserved: registering a list that has it fails.
//
// ---- The removal epoch ----------------------------------------------------------
//
// A directory may count removals: a 64-bit counter that grows (release)
// whenever resources leave it (remove, remove_context, a node server's
// client connection closing), after they left and before the call that
// removed them returns. Whoever caches what the directory said (the route
// cache, RoCL section 4.1) keeps the value read before asking; while the
// counter still has that value nothing has left the directory since, so the
// answer still holds. One load, no call: removal_epoch() is not virtual and
// points at memory (the node server's page is shared with its clients).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "directory/attr_list.hpp"
#include "rocl/rocl.h"

namespace rocl::impl {

inline constexpr unsigned kGidServerShift = 48;
inline constexpr std::uint64_t kGidSerialMask = (std::uint64_t{1} << kGidServerShift) - 1;
inline constexpr std::uint16_t kMaxServerId = 0x7fff;
inline constexpr std::uint64_t kMaxGidSerial = kGidSerialMask;

inline constexpr unsigned kCompactServerShift = 24;
inline constexpr std::uint64_t kCompactSerialMask = (std::uint64_t{1} << kCompactServerShift) - 1;
inline constexpr std::uint16_t kMaxCompactServerId = 127;
inline constexpr std::uint64_t kCompactLimit = std::uint64_t{1} << 31;

// How wide the gids a server issues are (above).
enum class GidWidth { kWide, kCompact };
// ROCL_GID_BITS's value: "31" compact; "", "63" wide. False for another.
bool parse_gid_bits(const char *text, GidWidth *out);
// The largest server id of a width.
constexpr std::uint16_t max_server_id(GidWidth w) {
  return w == GidWidth::kCompact ? kMaxCompactServerId : kMaxServerId;
}

constexpr rocl_gid_t make_gid(std::uint16_t server, std::uint64_t serial) {
  return (static_cast<rocl_gid_t>(server) << kGidServerShift) | (serial & kGidSerialMask);
}
constexpr rocl_gid_t make_compact_gid(std::uint16_t server, std::uint64_t serial) {
  return (static_cast<rocl_gid_t>(server) << kCompactServerShift) | (serial & kCompactSerialMask);
}
constexpr bool is_compact(rocl_gid_t gid) {
  return gid < kCompactLimit;
}
constexpr std::uint16_t gid_server(rocl_gid_t gid) {
  return static_cast<std::uint16_t>(is_compact(gid) ? gid >> kCompactServerShift
                                                    : gid >> kGidServerShift);
}
constexpr std::uint64_t gid_serial(rocl_gid_t gid) {
  return is_compact(gid) ? gid & kCompactSerialMask : gid & kGidSerialMask;
}
// "gid 0xN (server S, serial K)", for error sentences (local_directory.cpp):
// in hex, as the API's other sentences name gids.
std::string describe_gid(rocl_gid_t gid);

// Name of the attribute the directory adds to every resource.
inline constexpr std::string_view kContextAttr = "context";

// A multi-answer query in progress (rocl_query_start/next/stop).
class QueryCursor {
 public:
  virtual ~QueryCursor() = default;
  // Fills the unspecified attributes (answer slots) of attrs from the next
  // matching resource (increasing gid) and returns its gid (> 0); or
  // ROCL_EEND when there is none, ROCL_ENOSPC if an answer does not fit
  // (attrs is unchanged and the cursor does NOT advance: a retry with more
  // space gets the same resource). Resources deleted before the call are
  // skipped. Resources registered meanwhile with a gid larger than the last
  // one returned: the in-process cursor sees them; the node server's
  // (remote_directory.cpp, batched) sees those registered before it fetched
  // the batch that ended the query.
  virtual std::int64_t next(AttrList &attrs) = 0;
};

class Directory {
 public:
  virtual ~Directory() = default;

  // Registers a resource described by attrs (every attribute must have a
  // value; filled answer slots count as values). `context` is the gid of the
  // registering context, or ROCL_NULL_GID to register a context itself (see
  // above). Returns the new gid (> 0), ROCL_EINVAL (unspecified attribute,
  // reserved name "context"), ROCL_EBADGID (context is not a registered
  // context), ROCL_ENOSPC (the server's gid range is used up).
  virtual std::int64_t register_resource(const AttrList &attrs, rocl_gid_t context) = 0;

  // Removes one resource. ROCL_OK or ROCL_EBADGID. Removing a context's own
  // resource does not remove the context's other resources (remove_context).
  virtual int remove(rocl_gid_t gid) = 0;

  // Single-answer query, per rocl.h rocl_query: *gid != ROCL_NULL_GID looks
  // that resource up; otherwise the lowest-gid resource having every
  // attribute added with a value to attrs (same name, same bytes; a list with
  // none matches every resource). Then attrs' answer slots are filled
  // (AttrList::fill_from) and *gid is set. ROCL_OK, ROCL_ENOTFOUND,
  // ROCL_ENOSPC (attrs and *gid unchanged), ROCL_EINVAL (gid == nullptr).
  virtual int query(rocl_gid_t *gid, AttrList &attrs) = 0;

  // Starts a multi-answer query whose pattern is the attributes of `pattern`
  // added with a value (copied: pattern may change or die afterwards).
  // nullptr + fail() on error.
  virtual std::unique_ptr<QueryCursor> query_start(const AttrList &pattern) = 0;

  // Removes every resource whose "context" attribute is `context`, the
  // context's own resource included (cleanup when a context goes away).
  // Returns how many were removed (>= 0), or ROCL_EINVAL for ROCL_NULL_GID.
  virtual int remove_context(rocl_gid_t context) = 0;

  // Starts a process on the host of the directory server that issued gid
  // `where` (ROCL_NULL_GID: this host) through that host's server
  // (spawn_table.hpp), request being an encoded SpawnRequest
  // (spawn_request.hpp); waits until its context is registered, or for at
  // most limit_ms (<= 0: no limit). Returns the context's gid (> 0) or the
  // failure with the server's sentence. Only a node server spawns: the
  // in-process directory fails with ROCL_EPEER.
  virtual std::int64_t spawn(rocl_gid_t where, const AttrList &request, int limit_ms);

  // True once every later call can only fail with ROCL_EPEER: a node
  // server whose connection is lost (the server died, or broke the
  // protocol). The in-process directory is never lost.
  virtual bool lost() const noexcept { return false; }

  // The removal counter (above), valid as long as this Directory; nullptr
  // when this directory has none (a node server that could not share one):
  // then cached answers can only be found stale by using them.
  const std::atomic<std::uint64_t> *removal_epoch() const noexcept { return removal_epoch_; }

 protected:
  // Set once, by the implementation's constructor (or connect).
  void set_removal_epoch(const std::atomic<std::uint64_t> *epoch) noexcept {
    removal_epoch_ = epoch;
  }

 private:
  const std::atomic<std::uint64_t> *removal_epoch_ = nullptr;
};

// The in-process directory (local_directory.hpp): one server issuing gids of
// server id server_id (1..max_server_id(width)) and that width. nullptr +
// fail(ROCL_EINVAL) for an id outside that range.
std::unique_ptr<Directory> make_local_directory(std::uint16_t server_id,
                                                GidWidth width = GidWidth::kWide);

}  // namespace rocl::impl
