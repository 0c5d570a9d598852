// domain_entries.cpp - domains and their members as directory entries; the
// values that must be unique (a domain's context and name, a member's index
// and local name) are claims (directory/entry_claims.hpp).
#include "domain/domain_entries.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "directory/entry_claims.hpp"
#include "status/status.hpp"

namespace rocl::impl {

namespace {

constexpr std::string_view kDomainType = "rocl-domain";
constexpr std::string_view kMemberType = "rocl-domain-member";
constexpr std::size_t kNumberSlot = 24;
constexpr std::size_t kNameSlot = 256;
// A claim that cannot settle in this long means a directory that is not
// answering as it should: give up with a sentence instead of spinning.
constexpr auto kClaimLimit = std::chrono::seconds(30);
// Two entries for one value are a claim in progress, withdrawn within its
// claimant's next round trip; a look waits this long for it to settle.
constexpr auto kSettleLimit = std::chrono::seconds(2);

unsigned long long ull(rocl_gid_t g) {
  return static_cast<unsigned long long>(g);
}

std::optional<std::uint64_t> number(const AttrList &list, std::string_view name) {
  std::size_t len = 0;
  const std::byte *v = list.get(name, &len);
  if (v == nullptr) return std::nullopt;
  const char *text = reinterpret_cast<const char *>(v);
  std::uint64_t out = 0;
  const auto [end, ec] = std::from_chars(text, text + len, out);
  if (ec != std::errc() || end != text + len) return std::nullopt;
  return out;
}

std::string text(const AttrList &list, std::string_view name) {
  std::size_t len = 0;
  const std::byte *v = list.get(name, &len);
  return v != nullptr ? std::string(reinterpret_cast<const char *>(v), len) : std::string();
}

AttrList domain_pattern() {
  AttrList p(512);
  p.add("type", kDomainType);
  return p;
}

AttrList member_pattern(rocl_gid_t domain) {
  AttrList p(1024);
  p.add("type", kMemberType);
  p.add("rocl.domain", decimal(domain));
  return p;
}

AttrList with(AttrList pattern, std::string_view name, std::string_view value) {
  pattern.add(name, value);
  return pattern;
}

// Every entry matching pattern, each with the slots of `asked` filled:
// visit(gid, answers). ROCL_OK or the directory's failure.
int each_match(Directory &directory, const AttrList &pattern, const AttrList &asked,
               const std::function<void(rocl_gid_t, const AttrList &)> &visit) {
  std::unique_ptr<QueryCursor> cursor = directory.query_start(pattern);
  if (cursor == nullptr) return ROCL_EINTERNAL;
  AttrList answers = asked;
  for (;;) {
    answers.clear_answers();
    const std::int64_t g = cursor->next(answers);
    if (g == ROCL_EEND) return ROCL_OK;
    if (g < 0) return static_cast<int>(g);
    visit(static_cast<rocl_gid_t>(g), answers);
  }
}

AttrList member_slots() {
  AttrList a(1024);
  a.add_unspecified("rocl.index", kNumberSlot);
  a.add_unspecified("rocl.member", kNumberSlot);
  a.add_unspecified("rocl.local", kNameSlot);
  return a;
}

MemberRecord member_from(rocl_gid_t entry, const AttrList &answers) {
  MemberRecord m;
  m.entry = entry;
  m.index = static_cast<int>(number(answers, "rocl.index").value_or(0x7fffffff));
  m.member = number(answers, "rocl.member").value_or(ROCL_NULL_GID);
  m.local = text(answers, "rocl.local");
  return m;
}

// The lowest index no entry holds (entries of claims in progress count:
// their claimants may keep them).
int lowest_free_index(const std::vector<MemberRecord> &all) {
  std::set<int> taken;
  for (const MemberRecord &m : all) taken.insert(m.index);
  int index = 0;
  while (taken.contains(index)) ++index;
  return index;
}

// A context to try first: random, so that domains created one after
// another do not reuse a context a deleted domain's late messages still
// travel in.
std::uint32_t first_candidate() {
  thread_local std::minstd_rand draw(
      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count() ^
                            std::hash<std::thread::id>{}(std::this_thread::get_id())));
  return ROCL_COR_CONTEXT_FIRST + draw() % (ROCL_COR_CONTEXT_LAST - ROCL_COR_CONTEXT_FIRST + 1);
}

// The first context from `start` on (wrapping round the range) that no
// domain holds, or 0 if all are held.
std::uint32_t free_context(std::uint32_t start, const std::vector<std::uint32_t> &used) {
  const std::set<std::uint32_t> taken(used.begin(), used.end());
  constexpr std::uint32_t kCount = ROCL_COR_CONTEXT_LAST - ROCL_COR_CONTEXT_FIRST + 1;
  for (std::uint32_t k = 0; k < kCount; ++k) {
    const std::uint32_t c = ROCL_COR_CONTEXT_FIRST + (start - ROCL_COR_CONTEXT_FIRST + k) % kCount;
    if (!taken.contains(c)) return c;
  }
  return 0;
}

}  // namespace

std::string decimal(std::uint64_t value) {
  return std::to_string(value);
}

int DomainEntries::used_contexts(const char *who, std::vector<std::uint32_t> *out) {
  AttrList asked(128);
  asked.add_unspecified("rocl.context", kNumberSlot);
  out->clear();
  const int rc =
      each_match(ctx_.directory(), domain_pattern(), asked, [&](rocl_gid_t, const AttrList &a) {
        if (auto c = number(a, "rocl.context")) {
          out->push_back(static_cast<std::uint32_t>(*c));
        }
      });
  if (rc != ROCL_OK) return fail(rc, "%s: the directory failed listing domains", who);
  return ROCL_OK;
}

int DomainEntries::create(const char *who, rocl_gid_t parent, std::string_view name,
                          rocl_gid_t *domain) {
  const EntryStore store{[this](const AttrList &a) { return ctx_.register_resource(a); },
                         [this](rocl_gid_t g) { return ctx_.delete_resource(g); }};
  const AttrList name_key =
      with(with(domain_pattern(), "rocl.parent", decimal(parent)), "rocl.name", name);
  const auto give_up = std::chrono::steady_clock::now() + kClaimLimit;
  std::uint32_t start = first_candidate();
  while (std::chrono::steady_clock::now() < give_up) {
    std::vector<std::uint32_t> used;
    if (int rc = used_contexts(who, &used); rc != ROCL_OK) return rc;
    const std::uint32_t context = free_context(start, used);
    if (context == 0) {
      return fail(ROCL_ENOSPC, "%s: every message context of CoR domains (%#x..%#x) is taken", who,
                  ROCL_COR_CONTEXT_FIRST, ROCL_COR_CONTEXT_LAST);
    }
    std::vector<rocl_gid_t> named_before;
    if (!name.empty()) entries_matching(ctx_.directory(), name_key, &named_before);
    AttrList entry = with(domain_pattern(), "rocl.context", decimal(context));
    entry.add("rocl.parent", decimal(parent));
    std::vector<AttrList> keys{with(domain_pattern(), "rocl.context", decimal(context))};
    if (!name.empty()) {
      entry.add("rocl.name", name);
      keys.push_back(name_key);
    }
    const ClaimOutcome c = claim_entry(ctx_.directory(), store, entry, keys);
    if (c.gid > 0) {
      *domain = static_cast<rocl_gid_t>(c.gid);
      return ROCL_OK;
    }
    if (c.gid < 0) return static_cast<int>(c.gid);
    if (!name.empty() && share_a_gid(named_before, c.rivals[1])) {
      return fail(ROCL_EEXIST, "%s: a domain named '%.*s' exists already under parent %#llx", who,
                  static_cast<int>(name.size()), name.data(), ull(parent));
    }
    start = context + 1;  // another creator took it, or races for it
    pause_before_reclaim();
  }
  return fail(ROCL_ETIMEDOUT, "%s: no message context could be claimed within %lld s", who,
              static_cast<long long>(kClaimLimit.count()));
}

int DomainEntries::find(const char *who, std::string_view name, rocl_gid_t parent,
                        DomainRecord *out) {
  const AttrList pattern =
      with(with(domain_pattern(), "rocl.parent", decimal(parent)), "rocl.name", name);
  const auto give_up = std::chrono::steady_clock::now() + kSettleLimit;
  for (;;) {
    std::vector<rocl_gid_t> found;
    if (int rc = entries_matching(ctx_.directory(), pattern, &found); rc != ROCL_OK) {
      return fail(rc, "%s: the directory failed looking for domain '%.*s'", who,
                  static_cast<int>(name.size()), name.data());
    }
    if (found.empty()) {
      return fail(ROCL_ENOTFOUND, "%s: no domain named '%.*s' under parent %#llx", who,
                  static_cast<int>(name.size()), name.data(), ull(parent));
    }
    if (found.size() == 1) return read(who, found[0], out);
    if (std::chrono::steady_clock::now() > give_up) {
      return fail(ROCL_EBUSY, "%s: %zu domains claim the name '%.*s' and none gave way", who,
                  found.size(), static_cast<int>(name.size()), name.data());
    }
    pause_before_reclaim();
  }
}

int DomainEntries::read(const char *who, rocl_gid_t domain, DomainRecord *out) {
  AttrList asked(1024);
  asked.add_unspecified("type", 32);
  asked.add_unspecified("rocl.context", kNumberSlot);
  asked.add_unspecified("rocl.parent", kNumberSlot);
  asked.add_unspecified("rocl.name", kNameSlot);
  asked.add_unspecified(kContextAttr, sizeof(rocl_gid_t));
  rocl_gid_t gid = domain;
  const int rc = domain != ROCL_NULL_GID ? ctx_.directory().query(&gid, asked) : ROCL_ENOTFOUND;
  if (rc == ROCL_ENOTFOUND || (rc == ROCL_OK && text(asked, "type") != kDomainType)) {
    return fail(ROCL_EBADGID, "%s: gid %#llx is not a domain%s", who, ull(domain),
                rc == ROCL_ENOTFOUND ? " (no such resource: deleted, or its creator exited)" : "");
  }
  if (rc != ROCL_OK)
    return fail(rc, "%s: the directory failed reading domain %#llx", who, ull(domain));
  std::size_t len = 0;
  const std::byte *owner = asked.get(kContextAttr, &len);
  out->gid = domain;
  out->context = static_cast<std::uint32_t>(number(asked, "rocl.context").value_or(0));
  out->parent = number(asked, "rocl.parent").value_or(ROCL_NULL_GID);
  out->name = text(asked, "rocl.name");
  out->owner = ROCL_NULL_GID;
  if (owner != nullptr && len == sizeof out->owner) std::memcpy(&out->owner, owner, len);
  return ROCL_OK;
}

int DomainEntries::any_child(const char *who, rocl_gid_t domain, rocl_gid_t *child) {
  std::vector<rocl_gid_t> found;
  const AttrList pattern = with(domain_pattern(), "rocl.parent", decimal(domain));
  if (int rc = entries_matching(ctx_.directory(), pattern, &found); rc != ROCL_OK) {
    return fail(rc, "%s: the directory failed listing the subdomains of %#llx", who, ull(domain));
  }
  if (found.empty()) return ROCL_ENOTFOUND;
  *child = found.front();
  return ROCL_OK;
}

int DomainEntries::list_members(const char *who, rocl_gid_t domain,
                                std::vector<MemberRecord> *out) {
  out->clear();
  const int rc =
      each_match(ctx_.directory(), member_pattern(domain), member_slots(),
                 [&](rocl_gid_t g, const AttrList &a) { out->push_back(member_from(g, a)); });
  if (rc != ROCL_OK) {
    return fail(rc, "%s: the directory failed listing the members of domain %#llx", who,
                ull(domain));
  }
  return ROCL_OK;
}

int DomainEntries::join(const char *who, rocl_gid_t domain, rocl_gid_t member,
                        std::string_view local, MemberRecord *out) {
  Directory &dir = ctx_.directory();
  const rocl_gid_t context = ctx_.gid();
  const EntryStore store{
      [&dir, context](const AttrList &a) { return dir.register_resource(a, context); },
      [&dir](rocl_gid_t g) { return dir.remove(g); }};
  const AttrList name_key = with(member_pattern(domain), "rocl.local", local);
  const auto give_up = std::chrono::steady_clock::now() + kClaimLimit;
  while (std::chrono::steady_clock::now() < give_up) {
    std::vector<MemberRecord> all;
    if (int rc = list_members(who, domain, &all); rc != ROCL_OK) return rc;
    const int index = lowest_free_index(all);
    std::vector<rocl_gid_t> named_before;
    if (!local.empty()) entries_matching(dir, name_key, &named_before);
    AttrList entry = with(member_pattern(domain), "rocl.index", decimal(index));
    entry.add("rocl.member", decimal(member));
    std::vector<AttrList> keys{with(member_pattern(domain), "rocl.index", decimal(index))};
    if (!local.empty()) {
      entry.add("rocl.local", local);
      keys.push_back(name_key);
    }
    const ClaimOutcome c = claim_entry(dir, store, entry, keys);
    if (c.gid > 0) {
      *out = MemberRecord{static_cast<rocl_gid_t>(c.gid), index, member, std::string(local)};
      return ROCL_OK;
    }
    if (c.gid < 0) {
      return fail(static_cast<int>(c.gid),
                  "%s: the directory failed claiming index %d of domain %#llx", who, index,
                  ull(domain));
    }
    if (!local.empty() && share_a_gid(named_before, c.rivals[1])) {
      return fail(ROCL_EEXIST, "%s: the local name '%.*s' is taken in domain %#llx", who,
                  static_cast<int>(local.size()), local.data(), ull(domain));
    }
    pause_before_reclaim();
  }
  return fail(ROCL_ETIMEDOUT, "%s: no index of domain %#llx could be claimed within %lld s", who,
              ull(domain), static_cast<long long>(kClaimLimit.count()));
}

int DomainEntries::members(const char *who, rocl_gid_t domain, std::vector<MemberRecord> *out) {
  const auto give_up = std::chrono::steady_clock::now() + kSettleLimit;
  for (;;) {
    if (int rc = list_members(who, domain, out); rc != ROCL_OK) return rc;
    std::sort(out->begin(), out->end(),
              [](const MemberRecord &a, const MemberRecord &b) { return a.index < b.index; });
    const bool settled = std::adjacent_find(out->begin(), out->end(),
                                            [](const MemberRecord &a, const MemberRecord &b) {
                                              return a.index == b.index;
                                            }) == out->end();
    if (settled) return ROCL_OK;
    if (std::chrono::steady_clock::now() > give_up) {
      return fail(ROCL_EBUSY,
                  "%s: two members of domain %#llx claim one index and neither gave way", who,
                  ull(domain));
    }
    pause_before_reclaim();
  }
}

int DomainEntries::member_where(const char *who, rocl_gid_t domain, std::string_view attr,
                                std::string_view value, MemberRecord *out) {
  const AttrList pattern = with(member_pattern(domain), attr, value);
  const auto give_up = std::chrono::steady_clock::now() + kSettleLimit;
  for (;;) {
    std::vector<MemberRecord> found;
    const int rc =
        each_match(ctx_.directory(), pattern, member_slots(),
                   [&](rocl_gid_t g, const AttrList &a) { found.push_back(member_from(g, a)); });
    if (rc != ROCL_OK) {
      return fail(rc, "%s: the directory failed looking in domain %#llx", who, ull(domain));
    }
    if (found.empty()) return ROCL_ENOTFOUND;
    if (found.size() == 1) {
      *out = found[0];
      return ROCL_OK;
    }
    if (std::chrono::steady_clock::now() > give_up) {
      return fail(ROCL_EBUSY, "%s: %zu members of domain %#llx claim %.*s %.*s and none gave way",
                  who, found.size(), ull(domain), static_cast<int>(attr.size()), attr.data(),
                  static_cast<int>(value.size()), value.data());
    }
    pause_before_reclaim();
  }
}

int DomainEntries::remove_member(rocl_gid_t entry) {
  return ctx_.directory().remove(entry);
}

int DomainEntries::owner_of(const char *who, rocl_gid_t gid, rocl_gid_t *context) {
  AttrList asked(128);
  asked.add_unspecified(kContextAttr, sizeof(rocl_gid_t));
  rocl_gid_t g = gid;
  const int rc = gid != ROCL_NULL_GID ? ctx_.directory().query(&g, asked) : ROCL_ENOTFOUND;
  std::size_t len = 0;
  const std::byte *owner = rc == ROCL_OK ? asked.get(kContextAttr, &len) : nullptr;
  if (owner == nullptr || len != sizeof *context) {
    return fail(ROCL_EBADGID, "%s: gid %#llx is not a registered resource", who, ull(gid));
  }
  std::memcpy(context, owner, len);
  return ROCL_OK;
}

}  // namespace rocl::impl
