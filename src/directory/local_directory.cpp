// local_directory.cpp - the in-process directory (see local_directory.hpp).
#include "directory/local_directory.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "status/status.hpp"

namespace rocl::impl {

std::string describe_gid(rocl_gid_t gid) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "gid %#llx (server %u, serial %llu)",
                static_cast<unsigned long long>(gid), static_cast<unsigned>(gid_server(gid)),
                static_cast<unsigned long long>(gid_serial(gid)));
  return buf;
}

std::int64_t Directory::spawn(rocl_gid_t, const AttrList &, int) {
  return fail(ROCL_EPEER,
              "rocl_spawn: this process has no node directory server to spawn through (run it "
              "under roclrun, or with ROCL_DIRECTORY naming a rocld started with --spawn)");
}

namespace {

// Index key of an attribute: name, NUL, value bytes (names have no NUL).
std::string index_key(std::string_view name, const std::byte *value, std::size_t len) {
  std::string key;
  key.reserve(name.size() + 1 + len);
  key.append(name);
  key.push_back('\0');
  key.append(reinterpret_cast<const char *>(value), len);
  return key;
}

std::string context_key(rocl_gid_t context) {
  return index_key(kContextAttr, reinterpret_cast<const std::byte *>(&context), sizeof context);
}

// The attributes added with a value, as index keys, and their names for messages.
struct Pattern {
  std::vector<std::string> keys;
  std::string names;
};

Pattern make_pattern(const AttrList &attrs) {
  Pattern p;
  for (const AttrList::Attr &a : attrs) {
    if (a.slot) {
      continue;
    }
    p.keys.push_back(index_key(a.name, a.value, a.len));
    if (p.names.size() < 160) {
      p.names += p.names.empty() ? "" : ", ";
      p.names += a.name;
    } else if (p.names.back() != '.') {
      p.names += ", ...";
    }
  }
  return p;
}

// Re-records the last failure (from AttrList::fill_from) with a prefix.
int prefixed_fail(int code, const char *what, rocl_gid_t gid) {
  const std::string why = last_error();
  return fail(code, "%s: resource %s: %s", what, describe_gid(gid).c_str(), why.c_str());
}

// Where a server id's serials start in this process. A server that
// restarts (a host's rocld killed and started again) must not hand out
// the gids of its earlier life, which other processes may still hold or
// have cached: wide ranges start at the microseconds since 2026, so a
// later start begins beyond every serial an earlier one could have issued
// at one registration per microsecond (a registration is a round trip of
// several). That uses up 2^48 serials in 2034 at the earliest; from half
// the range on, the start stays at its middle. Compact ranges (2^24
// serials) are too small for it and start at 1 (docs/api.md).
std::uint64_t first_serial(std::uint64_t most) {
  if (most < (std::uint64_t{1} << 40)) return 1;
  const auto since = std::chrono::system_clock::now().time_since_epoch();
  const std::int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(since).count();
  constexpr std::int64_t k2026 = 1767225600LL * 1000000;  // Unix time of the start of 2026, in us
  const std::uint64_t start = us > k2026 ? static_cast<std::uint64_t>(us - k2026) : 0;
  return 1 + std::min(start, most / 2);
}

// Issues the next serial of server id `server`, or 0 when its range is used
// up. The counters are process-wide: a directory created later with the same
// id (a new context after rocl_exit, say) continues where the earlier one
// stopped, so no gid is ever issued twice in a process. Never destroyed, so
// usable during static destruction.
std::uint64_t take_serial(std::uint16_t server, std::uint64_t most) {
  static auto *mu = new std::mutex;
  static auto *next = new std::unordered_map<std::uint16_t, std::uint64_t>;
  std::lock_guard lock(*mu);
  std::uint64_t &n = (*next)[server];
  if (n == 0) {
    n = first_serial(most);
  }
  if (n > most) {
    return 0;
  }
  return n++;
}

struct Resource {
  rocl_gid_t context;  // == the resource's own gid for a context
  AttrList attrs;      // the registered attributes + "context"
};

}  // namespace

struct LocalDirectory::State {
  State(std::uint16_t id, GidWidth w) : server_id(id), width(w) {}

  // Smallest gid > after whose resource matches p (mu held, shared or not).
  std::optional<rocl_gid_t> first_match_after(const Pattern &p, rocl_gid_t after) const {
    if (p.keys.empty()) {
      auto it = resources.upper_bound(after);
      if (it == resources.end()) {
        return std::nullopt;
      }
      return it->first;
    }
    std::vector<const std::set<rocl_gid_t> *> sets;
    sets.reserve(p.keys.size());
    for (const std::string &key : p.keys) {
      auto f = index.find(key);
      if (f == index.end()) {
        return std::nullopt;  // no resource has this attribute
      }
      sets.push_back(&f->second);
    }
    const std::set<rocl_gid_t> *smallest =
        *std::min_element(sets.begin(), sets.end(),
                          [](const auto *a, const auto *b) { return a->size() < b->size(); });
    for (auto it = smallest->upper_bound(after); it != smallest->end(); ++it) {
      const bool all = std::all_of(sets.begin(), sets.end(), [&](const auto *s) {
        return s == smallest || s->contains(*it);
      });
      if (all) {
        return *it;
      }
    }
    return std::nullopt;
  }

  // Removes the resource and its index entries (mu held exclusively).
  void erase(std::map<rocl_gid_t, Resource>::iterator it) {
    const rocl_gid_t gid = it->first;
    for (const AttrList::Attr &a : it->second.attrs) {
      auto f = index.find(index_key(a.name, a.value, a.len));
      if (f != index.end()) {
        f->second.erase(gid);
        if (f->second.empty()) {
          index.erase(f);
        }
      }
    }
    resources.erase(it);
  }

  mutable std::shared_mutex mu;
  const std::uint16_t server_id;
  const GidWidth width;
  std::atomic<std::uint64_t> removals{0};  // the removal epoch
  std::map<rocl_gid_t, Resource> resources;
  std::unordered_map<std::string, std::set<rocl_gid_t>> index;
};

namespace {

class LocalCursor final : public QueryCursor {
 public:
  LocalCursor(std::shared_ptr<LocalDirectory::State> state, Pattern pattern)
      : state_(std::move(state)), pattern_(std::move(pattern)) {}

  std::int64_t next(AttrList &attrs) override {
    std::lock_guard cursor_lock(mu_);
    std::shared_lock lock(state_->mu);
    const std::optional<rocl_gid_t> gid = state_->first_match_after(pattern_, last_);
    if (!gid) {
      return fail(ROCL_EEND, "rocl_query_next: no more resources match (%zu answers given)",
                  answers_);
    }
    const Resource &res = state_->resources.at(*gid);
    if (attrs.fill_from(res.attrs) != ROCL_OK) {
      return prefixed_fail(ROCL_ENOSPC, "rocl_query_next", *gid);  // does not advance
    }
    last_ = *gid;
    answers_ += 1;
    return static_cast<std::int64_t>(*gid);
  }

 private:
  std::shared_ptr<LocalDirectory::State> state_;
  const Pattern pattern_;
  std::mutex mu_;            // next() calls on one cursor are serialised
  rocl_gid_t last_ = 0;      // the last gid returned
  std::size_t answers_ = 0;  // for messages
};

}  // namespace

LocalDirectory::LocalDirectory(std::uint16_t server_id, GidWidth width)
    : state_(std::make_shared<State>(server_id, width)) {
  set_removal_epoch(&state_->removals);
}

LocalDirectory::~LocalDirectory() {
  // Cursors still alive keep the state: they see an empty directory.
  std::unique_lock lock(state_->mu);
  state_->resources.clear();
  state_->index.clear();
}

std::uint16_t LocalDirectory::server_id() const {
  return state_->server_id;
}

std::size_t LocalDirectory::size() const {
  std::shared_lock lock(state_->mu);
  return state_->resources.size();
}

std::int64_t LocalDirectory::register_resource(const AttrList &attrs, rocl_gid_t context) {
  for (const AttrList::Attr &a : attrs) {
    if (a.name == kContextAttr) {
      return fail(ROCL_EINVAL,
                  "rocl_register: 'context' is a reserved attribute name (the directory adds it)");
    }
    if (!a.specified()) {
      return fail(ROCL_EINVAL,
                  "rocl_register: attribute '%.*s' is unspecified; every value must be given to "
                  "register a resource",
                  static_cast<int>(a.name.size()), a.name.data());
    }
  }
  const std::size_t extra = AttrList::kChargePerAttr + kContextAttr.size() + sizeof(rocl_gid_t);
  if (attrs.charged() + extra > AttrList::kMaxMaxlen) {
    return fail(ROCL_EINVAL, "rocl_register: the attribute list (%zu bytes) is too large",
                attrs.charged());
  }

  // The stored copy: the attributes as plain values, then "context".
  AttrList stored(static_cast<int>(attrs.charged() + extra));
  for (const AttrList::Attr &a : attrs) {
    if (stored.add(a.name, a.value, a.len) != ROCL_OK) {
      const std::string why = last_error();
      return fail(ROCL_EINTERNAL, "rocl_register: copying the attribute list failed: %s",
                  why.c_str());
    }
  }
  const rocl_gid_t placeholder = context;
  if (stored.add(kContextAttr, &placeholder, sizeof placeholder) != ROCL_OK) {
    const std::string why = last_error();
    return fail(ROCL_EINTERNAL, "rocl_register: adding 'context' failed: %s", why.c_str());
  }

  State &s = *state_;
  std::unique_lock lock(s.mu);
  if (context != ROCL_NULL_GID) {
    auto it = s.resources.find(context);
    if (it == s.resources.end()) {
      return fail(ROCL_EBADGID, "rocl_register: context %s is not registered",
                  describe_gid(context).c_str());
    }
    if (it->second.context != context) {
      return fail(ROCL_EBADGID, "rocl_register: %s is a resource, not a context",
                  describe_gid(context).c_str());
    }
  }
  const bool compact = s.width == GidWidth::kCompact;
  const std::uint64_t most = compact ? kCompactSerialMask : kMaxGidSerial;
  const std::uint64_t serial = take_serial(s.server_id, most);
  if (serial == 0) {
    return fail(ROCL_ENOSPC, "rocl_register: directory server %u has issued all %llu gids%s",
                static_cast<unsigned>(s.server_id), static_cast<unsigned long long>(most),
                compact ? " (ROCL_GID_BITS=31)" : "");
  }
  const rocl_gid_t gid =
      compact ? make_compact_gid(s.server_id, serial) : make_gid(s.server_id, serial);
  const rocl_gid_t owner = context != ROCL_NULL_GID ? context : gid;
  std::memcpy(stored.get(kContextAttr), &owner, sizeof owner);

  std::vector<std::string> keys;
  keys.reserve(stored.count());
  for (const AttrList::Attr &a : stored) {
    keys.push_back(index_key(a.name, a.value, a.len));
  }
  // On bad_alloc the DB is left as it was (the serial is lost, which is harmless).
  auto [it, inserted] = s.resources.try_emplace(gid, Resource{owner, std::move(stored)});
  if (!inserted) {
    return fail(ROCL_EINTERNAL, "rocl_register: %s was issued twice", describe_gid(gid).c_str());
  }
  try {
    for (std::string &key : keys) {
      s.index[std::move(key)].insert(gid);
    }
  } catch (...) {
    s.erase(it);
    throw;
  }
  return static_cast<std::int64_t>(gid);
}

int LocalDirectory::remove(rocl_gid_t gid) {
  std::unique_lock lock(state_->mu);
  auto it = state_->resources.find(gid);
  if (it == state_->resources.end()) {
    return fail(ROCL_EBADGID, "rocl_delete: %s is not a registered resource",
                describe_gid(gid).c_str());
  }
  state_->erase(it);
  state_->removals.fetch_add(1, std::memory_order_release);
  return ROCL_OK;
}

int LocalDirectory::query(rocl_gid_t *gid, AttrList &attrs) {
  if (gid == nullptr) {
    return fail(ROCL_EINVAL, "rocl_query: the gid pointer is NULL");
  }
  State &s = *state_;
  if (*gid != ROCL_NULL_GID) {
    std::shared_lock lock(s.mu);
    auto it = s.resources.find(*gid);
    if (it == s.resources.end()) {
      return fail(ROCL_ENOTFOUND, "rocl_query: no resource has %s", describe_gid(*gid).c_str());
    }
    if (attrs.fill_from(it->second.attrs) != ROCL_OK) {
      return prefixed_fail(ROCL_ENOSPC, "rocl_query", *gid);
    }
    return ROCL_OK;
  }
  const Pattern p = make_pattern(attrs);
  std::shared_lock lock(s.mu);
  const std::optional<rocl_gid_t> found = s.first_match_after(p, ROCL_NULL_GID);
  if (!found) {
    if (p.keys.empty()) {
      return fail(ROCL_ENOTFOUND, "rocl_query: the directory has no resources");
    }
    return fail(ROCL_ENOTFOUND, "rocl_query: no resource has all %zu given attributes (%s)",
                p.keys.size(), p.names.c_str());
  }
  if (attrs.fill_from(s.resources.at(*found).attrs) != ROCL_OK) {
    return prefixed_fail(ROCL_ENOSPC, "rocl_query", *found);
  }
  *gid = *found;
  return ROCL_OK;
}

bool LocalDirectory::scan(const AttrList &pattern, rocl_gid_t after,
                          const std::function<bool(rocl_gid_t, const AttrList &)> &take) const {
  const Pattern p = make_pattern(pattern);
  const State &s = *state_;
  std::shared_lock lock(s.mu);
  if (p.keys.empty()) {
    for (auto it = s.resources.upper_bound(after); it != s.resources.end(); ++it) {
      if (!take(it->first, it->second.attrs)) {
        return true;
      }
    }
    return false;
  }
  std::vector<const std::set<rocl_gid_t> *> sets;
  sets.reserve(p.keys.size());
  for (const std::string &key : p.keys) {
    auto f = s.index.find(key);
    if (f == s.index.end()) {
      return false;  // no resource has this attribute
    }
    sets.push_back(&f->second);
  }
  const std::set<rocl_gid_t> *smallest = *std::min_element(
      sets.begin(), sets.end(), [](const auto *a, const auto *b) { return a->size() < b->size(); });
  for (auto it = smallest->upper_bound(after); it != smallest->end(); ++it) {
    const bool all = std::all_of(sets.begin(), sets.end(), [&](const auto *set) {
      return set == smallest || set->contains(*it);
    });
    if (all && !take(*it, s.resources.at(*it).attrs)) {
      return true;
    }
  }
  return false;
}

std::unique_ptr<QueryCursor> LocalDirectory::query_start(const AttrList &pattern) {
  return std::make_unique<LocalCursor>(state_, make_pattern(pattern));
}

int LocalDirectory::remove_context(rocl_gid_t context) {
  if (context == ROCL_NULL_GID) {
    return fail(ROCL_EINVAL, "remove_context: the context gid is ROCL_NULL_GID");
  }
  State &s = *state_;
  std::unique_lock lock(s.mu);
  auto f = s.index.find(context_key(context));
  if (f == s.index.end()) {
    return 0;
  }
  const std::vector<rocl_gid_t> gids(f->second.begin(), f->second.end());  // erase() edits the set
  for (rocl_gid_t g : gids) {
    auto it = s.resources.find(g);
    if (it != s.resources.end()) {
      s.erase(it);
    }
  }
  s.removals.fetch_add(1, std::memory_order_release);  // gids is not empty
  return static_cast<int>(std::min<std::size_t>(gids.size(), INT_MAX));
}

std::unique_ptr<Directory> make_local_directory(std::uint16_t server_id, GidWidth width) {
  if (server_id == 0 || server_id > max_server_id(width)) {
    fail(ROCL_EINVAL, "make_local_directory: server id %u is outside 1..%u",
         static_cast<unsigned>(server_id), static_cast<unsigned>(max_server_id(width)));
    return nullptr;
  }
  return std::make_unique<LocalDirectory>(server_id, width);
}

bool parse_gid_bits(const char *text, GidWidth *out) {
  const std::string t = text != nullptr ? text : "";
  if (t.empty() || t == "63") {
    *out = GidWidth::kWide;
    return true;
  }
  if (t == "31") {
    *out = GidWidth::kCompact;
    return true;
  }
  return false;
}

}  // namespace rocl::impl
