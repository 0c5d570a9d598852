// domain_state.hpp - this process's side of CoR domains: its memberships
// (which member entries it registered, so that a leave finds them and a
// second join of the same resource is refused), its soft-ports (the network
// its domain messages take), and the views of the domains it uses. One per
// context: a new context (rocl_init after the last rocl_exit) starts afresh.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "domain/domain_views.hpp"

namespace rocl::impl {

// This process's memberships and soft-ports.
class LocalDomains {
 public:
  // Marks (domain, member) as joining: false if it is a member already or
  // another thread is joining it.
  bool start_join(rocl_gid_t domain, rocl_gid_t member);
  // Ends a join started above: the member's entry, or none if it failed.
  void finish_join(rocl_gid_t domain, rocl_gid_t member, std::optional<MemberRecord> joined);
  // Takes (domain, member)'s membership away: its record, or nullopt if
  // member is no member of domain through this process.
  std::optional<MemberRecord> take(rocl_gid_t domain, rocl_gid_t member);
  // Takes every membership of domain (its deletion here).
  std::vector<MemberRecord> take_all(rocl_gid_t domain);

  // The network of domain's messages from this process ("" or "tcp.2").
  void set_port(rocl_gid_t domain, std::string network);
  // The port of domain, or "" (the usual routes). Cheap while no domain has
  // one.
  std::string port(rocl_gid_t domain) const;

 private:
  using Pair = std::pair<rocl_gid_t, rocl_gid_t>;  // (domain, member)
  std::mutex joins_mutex_;
  std::map<Pair, std::optional<MemberRecord>> joined_;  // nullopt: joining
  mutable std::shared_mutex ports_mutex_;
  std::map<rocl_gid_t, std::string> ports_;
  std::atomic<bool> any_port_{false};
};

struct DomainState {
  explicit DomainState(Context &ctx) : views(ctx) {}
  DomainViews views;
  LocalDomains local;
};

// The state of ctx's domains, made on first use. A state outlives its
// context (a call racing with rocl_exit must not meet freed memory): the
// states of earlier contexts stay until the process exits.
DomainState &domain_state(Context &ctx);

}  // namespace rocl::impl
