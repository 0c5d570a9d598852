// entry_claims.cpp - claims that hold across directory servers (see the
// header for why register-then-look is enough).
#include "directory/entry_claims.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <thread>

#include "status/status.hpp"

namespace rocl::impl {

int entries_matching(Directory &directory, const AttrList &pattern, std::vector<rocl_gid_t> *out) {
  out->clear();
  std::unique_ptr<QueryCursor> cursor = directory.query_start(pattern);
  if (cursor == nullptr) return ROCL_EINTERNAL;
  AttrList nothing_asked(64);
  for (;;) {
    const std::int64_t g = cursor->next(nothing_asked);
    if (g == ROCL_EEND) return ROCL_OK;
    if (g < 0) return static_cast<int>(g);
    out->push_back(static_cast<rocl_gid_t>(g));
  }
}

ClaimOutcome claim_entry(Directory &directory, const EntryStore &store, const AttrList &entry,
                         std::span<const AttrList> keys) {
  ClaimOutcome out;
  out.gid = store.add(entry);
  if (out.gid <= 0) return out;
  const auto mine = static_cast<rocl_gid_t>(out.gid);
  out.rivals.resize(keys.size());
  bool sole = true;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    std::vector<rocl_gid_t> holders;
    if (int rc = entries_matching(directory, keys[k], &holders); rc != ROCL_OK) {
      store.remove(mine);
      out.gid = rc;
      return out;
    }
    std::erase(holders, mine);
    sole = sole && holders.empty();
    out.rivals[k] = std::move(holders);
  }
  if (sole) return out;
  store.remove(mine);
  out.gid = 0;
  return out;
}

bool share_a_gid(const std::vector<rocl_gid_t> &a, const std::vector<rocl_gid_t> &b) {
  return std::any_of(a.begin(), a.end(),
                     [&](rocl_gid_t g) { return std::find(b.begin(), b.end(), g) != b.end(); });
}

void pause_before_reclaim() {
  thread_local std::minstd_rand draw(
      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count() ^
                            std::hash<std::thread::id>{}(std::this_thread::get_id())));
  std::this_thread::sleep_for(std::chrono::microseconds(100 + draw() % 2000));
}

}  // namespace rocl::impl
