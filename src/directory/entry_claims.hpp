// entry_claims.hpp - claims that hold across directory servers: a value (an
// index in a group, a name in a scope, a message context) belongs to whoever
// registered the only entry that carries it. No server arbitrates: a
// claimant registers its entry, then looks for other entries carrying the
// same value; if there is one it withdraws. Of two racing claims the later
// registration's look sees the earlier entry, so at most one keeps the value
// (both may withdraw: they pause at random and try again). This holds as far
// as the directory's multi-answer queries reach every server of the job.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "directory/attr_list.hpp"
#include "directory/directory.hpp"

namespace rocl::impl {

// Where claimed entries are registered and removed: the caller says how (a
// context's resources, or bare directory entries of a context).
struct EntryStore {
  std::function<std::int64_t(const AttrList &)> add;
  std::function<int(rocl_gid_t)> remove;
};

// What one claim came to. gid > 0: the entry, kept (every key was its own).
// gid == 0: withdrawn, rivals[k] holding the other entries that carry key k
// (empty where key k was free). gid < 0: a failure code with its sentence.
struct ClaimOutcome {
  std::int64_t gid = 0;
  std::vector<std::vector<rocl_gid_t>> rivals;
};

// Registers `entry` through store, then queries each of `keys` (patterns
// that entry matches, one per claimed value); keeps the entry if each key
// matches it alone, else removes it. Blocks on the directory's round trips.
ClaimOutcome claim_entry(Directory &directory, const EntryStore &store, const AttrList &entry,
                         std::span<const AttrList> keys);

// The gids of every entry matching pattern (its attributes with a value),
// in increasing order, into *out. ROCL_OK or the directory's failure.
int entries_matching(Directory &directory, const AttrList &pattern, std::vector<rocl_gid_t> *out);

// True if some gid is in both lists (claims' rival lists, which are short).
bool share_a_gid(const std::vector<rocl_gid_t> &a, const std::vector<rocl_gid_t> &b);

// Sleeps 0.1 to 2.1 ms, drawn at random per thread: claimants that withdrew
// together would otherwise collide again.
void pause_before_reclaim();

}  // namespace rocl::impl
