// domain_views.cpp - the per-process memory of domains (see the header for
// when what it keeps holds).
#include "domain/domain_views.hpp"

#include <mutex>

#include "status/status.hpp"

namespace rocl::impl {

std::uint64_t DomainViews::epoch_now() const noexcept {
  const std::atomic<std::uint64_t> *epoch = ctx_.directory().removal_epoch();
  return epoch != nullptr ? epoch->load(std::memory_order_acquire) : 0;
}

template <class Map, class Key, class Value>
bool DomainViews::kept(const Map &map, const Key &key, Value *out) const {
  std::shared_lock lock(mutex_);
  if (epoch_ != epoch_now()) return false;
  const auto it = map.find(key);
  if (it == map.end()) return false;
  *out = it->second;
  return true;
}

void DomainViews::keep(std::uint64_t asked, rocl_gid_t domain, const DomainRecord *record,
                       const std::vector<MemberRecord> &members) {
  std::unique_lock lock(mutex_);
  if (epoch_ != asked) {
    // Answers from before the last removal are not worth keeping; the maps
    // hold at an older epoch and are dropped for the newer answers.
    if (epoch_now() != asked) return;
    contexts_.clear();
    by_index_.clear();
    by_gid_.clear();
    epoch_ = asked;
  }
  if (record != nullptr) contexts_[domain] = record->context;
  for (const MemberRecord &m : members) {
    by_index_[Slot{domain, static_cast<std::uint64_t>(m.index)}] = m.member;
    by_gid_[Slot{domain, m.member}] = m.index;
  }
}

int DomainViews::context_of(const char *who, rocl_gid_t domain, std::uint32_t *context) {
  if (kept(contexts_, domain, context)) return ROCL_OK;
  const std::uint64_t asked = epoch_now();
  DomainRecord record;
  if (int rc = entries_.read(who, domain, &record); rc != ROCL_OK) return rc;
  keep(asked, domain, &record, {});
  *context = record.context;
  return ROCL_OK;
}

int DomainViews::member_at(const char *who, rocl_gid_t domain, int index, rocl_gid_t *gid) {
  if (kept(by_index_, Slot{domain, static_cast<std::uint64_t>(index)}, gid)) return ROCL_OK;
  const std::uint64_t asked = epoch_now();
  MemberRecord m;
  const int rc = entries_.member_where(who, domain, "rocl.index", decimal(index), &m);
  if (rc == ROCL_ENOTFOUND) {
    return fail(rc, "%s: no member of domain %#llx has index %d", who,
                static_cast<unsigned long long>(domain), index);
  }
  if (rc != ROCL_OK) return rc;
  keep(asked, domain, nullptr, {m});
  *gid = m.member;
  return ROCL_OK;
}

int DomainViews::index_of(const char *who, rocl_gid_t domain, rocl_gid_t gid, int *index) {
  if (kept(by_gid_, Slot{domain, gid}, index)) return ROCL_OK;
  const std::uint64_t asked = epoch_now();
  MemberRecord m;
  const int rc = entries_.member_where(who, domain, "rocl.member", decimal(gid), &m);
  if (rc == ROCL_ENOTFOUND) {
    return fail(rc, "%s: gid %#llx is not a member of domain %#llx", who,
                static_cast<unsigned long long>(gid), static_cast<unsigned long long>(domain));
  }
  if (rc != ROCL_OK) return rc;
  keep(asked, domain, nullptr, {m});
  *index = m.index;
  return ROCL_OK;
}

int DomainViews::members(const char *who, rocl_gid_t domain, std::vector<MemberRecord> *out) {
  const std::uint64_t asked = epoch_now();
  if (int rc = entries_.members(who, domain, out); rc != ROCL_OK) return rc;
  keep(asked, domain, nullptr, *out);
  return ROCL_OK;
}

void DomainViews::forget(rocl_gid_t domain) {
  std::unique_lock lock(mutex_);
  contexts_.erase(domain);
  std::erase_if(by_index_, [&](const auto &kv) { return kv.first.first == domain; });
  std::erase_if(by_gid_, [&](const auto &kv) { return kv.first.first == domain; });
}

}  // namespace rocl::impl
