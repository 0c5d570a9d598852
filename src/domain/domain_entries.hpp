// domain_entries.hpp - CoR domains as directory entries (docs/architecture.md,
// "CoR domains"). A domain is a resource of its creator's context
//   {type=rocl-domain, rocl.context=C, rocl.parent=P[, rocl.name=N]}
// whose message context C (in ROCL_COR_CONTEXT_FIRST..LAST) and name N
// (within parent P, 0 for none) are claims (directory/entry_claims.hpp). A
// member is an entry of the joining context
//   {type=rocl-domain-member, rocl.domain=D, rocl.index=I, rocl.member=G[, rocl.local=L]}
// whose index I and local name L (within D) are claims too. Numbers are
// decimal text, so that rocl-dir shows and matches them from a shell.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.hpp"
#include "directory/attr_list.hpp"

namespace rocl::impl {

struct DomainRecord {
  rocl_gid_t gid = ROCL_NULL_GID;
  rocl_gid_t parent = ROCL_NULL_GID;
  std::uint32_t context = 0;
  rocl_gid_t owner = ROCL_NULL_GID;  // the context that created it
  std::string name;
};

struct MemberRecord {
  rocl_gid_t entry = ROCL_NULL_GID;
  int index = -1;
  rocl_gid_t member = ROCL_NULL_GID;
  std::string local;
};

// The domain and member entries of one context's directory. Thread safe
// (the directory is); every call blocks on directory round trips. Failures
// return a negative code with a sentence naming `who` (the API call).
class DomainEntries {
 public:
  explicit DomainEntries(Context &ctx) noexcept : ctx_(ctx) {}

  // A new domain under parent (ROCL_NULL_GID: top level) named name ("":
  // unnamed, found by gid only). ROCL_EEXIST if parent has a domain of
  // that name, ROCL_ENOSPC if every context of the range is taken.
  int create(const char *who, rocl_gid_t parent, std::string_view name, rocl_gid_t *domain);
  // The domain named name under parent: ROCL_ENOTFOUND if none.
  int find(const char *who, std::string_view name, rocl_gid_t parent, DomainRecord *out);
  // The domain whose gid is domain: ROCL_EBADGID if that is not one.
  int read(const char *who, rocl_gid_t domain, DomainRecord *out);
  // Some domain whose parent is domain, or ROCL_ENOTFOUND.
  int any_child(const char *who, rocl_gid_t domain, rocl_gid_t *child);

  // Claims the lowest free index (and the local name, unless empty) in
  // domain for member. ROCL_EEXIST if another member holds local.
  int join(const char *who, rocl_gid_t domain, rocl_gid_t member, std::string_view local,
           MemberRecord *out);
  // Every member, by increasing index (claims in progress settled first).
  int members(const char *who, rocl_gid_t domain, std::vector<MemberRecord> *out);
  // The member whose `attr` is value (rocl.index, rocl.local, rocl.member):
  // ROCL_ENOTFOUND if none.
  int member_where(const char *who, rocl_gid_t domain, std::string_view attr,
                   std::string_view value, MemberRecord *out);
  // Removes a member entry of this context.
  int remove_member(rocl_gid_t entry);
  // The context that registered gid (its "context" attribute).
  int owner_of(const char *who, rocl_gid_t gid, rocl_gid_t *context);

 private:
  int list_members(const char *who, rocl_gid_t domain, std::vector<MemberRecord> *out);
  int used_contexts(const char *who, std::vector<std::uint32_t> *out);

  Context &ctx_;
};

// Decimal text of a number, as the entries hold them.
std::string decimal(std::uint64_t value);

}  // namespace rocl::impl
