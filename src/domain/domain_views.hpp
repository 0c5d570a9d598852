// domain_views.hpp - what this process remembers of the domains it uses, so
// that rocl_dsend and rocl_drecv do not ask the directory per message: each
// domain's context, and its members by index and by gid. Only answers that
// were found are kept (a join elsewhere never makes one wrong); they hold
// while the directory's removal epoch stays where it was when they were
// asked (directory.hpp): a leave, a deletion or an exit anywhere in the job
// moves it, and the next look-up drops them all and asks again. Without an
// epoch (a node server that could not share its page) they hold until this
// process drops them: its own leaves and deletions, and a send that found
// the member gone.
#pragma once

#include <cstdint>
#include <map>
#include <shared_mutex>
#include <utility>
#include <vector>

#include "domain/domain_entries.hpp"

namespace rocl::impl {

class DomainViews {
 public:
  explicit DomainViews(Context &ctx) noexcept : ctx_(ctx), entries_(ctx) {}

  DomainEntries &entries() noexcept { return entries_; }
  // The domain's message context: ROCL_EBADGID if domain is not one.
  int context_of(const char *who, rocl_gid_t domain, std::uint32_t *context);
  // The gid of the member at index: ROCL_ENOTFOUND if no member has it.
  int member_at(const char *who, rocl_gid_t domain, int index, rocl_gid_t *gid);
  // The index of member gid: ROCL_ENOTFOUND if it is not a member.
  int index_of(const char *who, rocl_gid_t domain, rocl_gid_t gid, int *index);
  // Every member (asked afresh: joins elsewhere do not move the epoch),
  // kept for the look-ups above.
  int members(const char *who, rocl_gid_t domain, std::vector<MemberRecord> *out);
  // Drops everything kept about domain (a leave or deletion here, a send
  // that found a member gone).
  void forget(rocl_gid_t domain);

 private:
  using Slot = std::pair<rocl_gid_t, std::uint64_t>;  // (domain, index or gid)
  std::uint64_t epoch_now() const noexcept;
  // Keeps what was asked at epoch `asked` (dropped if the epoch has moved).
  void keep(std::uint64_t asked, rocl_gid_t domain, const DomainRecord *record,
            const std::vector<MemberRecord> &members);
  template <class Map, class Key, class Value>
  bool kept(const Map &map, const Key &key, Value *out) const;

  Context &ctx_;
  DomainEntries entries_;
  mutable std::shared_mutex mutex_;
  std::uint64_t epoch_ = 0;  // the removal epoch the maps below hold at
  std::map<rocl_gid_t, std::uint32_t> contexts_;
  std::map<Slot, rocl_gid_t> by_index_;
  std::map<Slot, int> by_gid_;
};

}  // namespace rocl::impl
