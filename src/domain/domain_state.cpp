// domain_state.cpp - this process's memberships and soft-ports, and the
// state per context.
#include "domain/domain_state.hpp"

#include <memory>

namespace rocl::impl {

bool LocalDomains::start_join(rocl_gid_t domain, rocl_gid_t member) {
  std::lock_guard lock(joins_mutex_);
  return joined_.try_emplace(Pair{domain, member}, std::nullopt).second;
}

void LocalDomains::finish_join(rocl_gid_t domain, rocl_gid_t member,
                               std::optional<MemberRecord> joined) {
  std::lock_guard lock(joins_mutex_);
  if (joined) {
    joined_[Pair{domain, member}] = std::move(joined);
  } else {
    joined_.erase(Pair{domain, member});
  }
}

std::optional<MemberRecord> LocalDomains::take(rocl_gid_t domain, rocl_gid_t member) {
  std::lock_guard lock(joins_mutex_);
  const auto it = joined_.find(Pair{domain, member});
  if (it == joined_.end() || !it->second) return std::nullopt;  // absent, or still joining
  std::optional<MemberRecord> out = std::move(it->second);
  joined_.erase(it);
  return out;
}

std::vector<MemberRecord> LocalDomains::take_all(rocl_gid_t domain) {
  std::lock_guard lock(joins_mutex_);
  std::vector<MemberRecord> out;
  for (auto it = joined_.lower_bound(Pair{domain, 0});
       it != joined_.end() && it->first.first == domain;) {
    if (!it->second) {  // a join in progress ends by itself
      ++it;
      continue;
    }
    out.push_back(*it->second);
    it = joined_.erase(it);
  }
  return out;
}

void LocalDomains::set_port(rocl_gid_t domain, std::string network) {
  std::unique_lock lock(ports_mutex_);
  if (network.empty()) {
    ports_.erase(domain);
  } else {
    ports_[domain] = std::move(network);
  }
  any_port_.store(!ports_.empty(), std::memory_order_release);
}

std::string LocalDomains::port(rocl_gid_t domain) const {
  if (!any_port_.load(std::memory_order_acquire)) return {};
  std::shared_lock lock(ports_mutex_);
  const auto it = ports_.find(domain);
  return it != ports_.end() ? it->second : std::string();
}

namespace {

struct StateOfContext {
  rocl_gid_t context = ROCL_NULL_GID;
  std::unique_ptr<DomainState> state;
};

}  // namespace

DomainState &domain_state(Context &ctx) {
  // The current state, read without a lock on every domain call; replaced
  // only when a new context first uses domains.
  static std::atomic<StateOfContext *> current{nullptr};
  static std::mutex replacing;
  static std::vector<std::unique_ptr<StateOfContext>> states;
  StateOfContext *s = current.load(std::memory_order_acquire);
  if (s != nullptr && s->context == ctx.gid()) return *s->state;
  std::lock_guard lock(replacing);
  s = current.load(std::memory_order_acquire);
  if (s != nullptr && s->context == ctx.gid()) return *s->state;
  states.push_back(std::make_unique<StateOfContext>(
      StateOfContext{ctx.gid(), std::make_unique<DomainState>(ctx)}));
  current.store(states.back().get(), std::memory_order_release);
  return *states.back()->state;
}

}  // namespace rocl::impl
