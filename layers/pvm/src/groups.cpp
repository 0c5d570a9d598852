// groups.cpp - dynamic process groups kept in rocl's directory (docs/pvm.md,
// "Groups"): a member is an entry {type=pvm-group-member, pvm.group=NAME,
// pvm.inst=I, pvm.member=TID}. A joiner takes the lowest free instance by
// registering a claim {type=pvm-group-claim, ...} for it, and keeps it if
// no other task claims it (sole_claim); else it withdraws and tries again.
// Only a kept claim gets a member entry, so that the members' view never
// holds a claim about to be withdrawn (a barrier's coordinator is the
// lowest member every caller sees).
#include <cstdlib>
#include <map>
#include <set>

#include "pvm_impl.hpp"

namespace rpvm {

constexpr const char *kMemberType = "pvm-group-member";
constexpr const char *kClaimType = "pvm-group-claim";

rocl::Attributes group_pattern(const char *group) {
  return {{"type", kMemberType}, {"pvm.group", group}};
}

namespace {

rocl::Attributes claim_pattern(const char *group) {
  return {{"type", kClaimType}, {"pvm.group", group}};
}

// A member entry also names the member's resource, so that sending to the
// members needs no further look-up (on several hosts, one less question
// to another host's directory server).
void remember_gid_of(const rocl::Found &entry, int tid) {
  if (const std::optional<std::string> gid = entry.attributes.get("pvm.gid")) {
    remember_tid(tid, std::strtoull(gid->c_str(), nullptr, 10));
  }
}

}  // namespace

// Each instance's member (the lowest gid registered for it): inst -> tid.
std::map<int, int> group_members(const char *group) {
  std::map<int, int> members;
  rocl::Attributes pattern = group_pattern(group);
  pattern.ask("pvm.inst", 32).ask("pvm.member", 32).ask("pvm.gid", 32);
  for (const rocl::Found &f : find_all(pattern)) {
    const int tid = attribute_int(f, "pvm.member");
    members.emplace(attribute_int(f, "pvm.inst", -1), tid);
    remember_gid_of(f, tid);
  }
  return members;
}

namespace {

// The lowest instance no claim names (held or still contested).
int lowest_free_instance(const char *group) {
  rocl::Attributes pattern = claim_pattern(group);
  pattern.ask("pvm.inst", 32);
  std::set<int> claimed;
  for (const rocl::Found &f : find_all(pattern)) claimed.insert(attribute_int(f, "pvm.inst", -1));
  int inst = 0;
  while (claimed.contains(inst)) ++inst;
  return inst;
}

int join(Task &t, const char *group) {
  if (t.groups.contains(group)) return PvmDupGroup;
  for (;;) {
    const int inst = lowest_free_instance(group);
    rocl::Attributes claim = claim_pattern(group);
    claim.set("pvm.inst", decimal(inst)).set("pvm.member", decimal(t.tid));
    const std::int64_t claim_gid = register_entry(claim);
    if (claim_gid <= 0) return PvmSysErr;
    rocl::Attributes same = claim_pattern(group);
    if (!sole_claim(same.set("pvm.inst", decimal(inst)), rocl_gid_t(claim_gid))) {
      rocl_delete(rocl_gid_t(claim_gid));  // another task claims inst too
      pause_before_retry();
      continue;
    }
    rocl::Attributes entry = group_pattern(group);
    entry.set("pvm.inst", decimal(inst))
        .set("pvm.member", decimal(t.tid))
        .set("pvm.gid", decimal(static_cast<long long>(t.gid)));
    const std::int64_t gid = register_entry(entry);
    if (gid <= 0) {
      rocl_delete(rocl_gid_t(claim_gid));
      return PvmSysErr;
    }
    t.groups[group] = GroupMembership{rocl_gid_t(gid), rocl_gid_t(claim_gid), inst};
    return inst;
  }
}

bool bad_name(const char *group) {
  return group == nullptr || *group == '\0';
}

}  // namespace

int group_code_for_missing(const char *group, int when_group_exists) {
  return group_members(group).empty() ? PvmNoGroup : when_group_exists;
}

int instance_of(const char *group, int tid) {
  rocl::Attributes pattern = group_pattern(group);
  pattern.set("pvm.member", decimal(tid)).ask("pvm.inst", 32);
  const std::optional<rocl::Found> found = find_first(pattern);
  return found ? attribute_int(*found, "pvm.inst") : group_code_for_missing(group, PvmNotInGroup);
}

int tid_of_instance(const char *group, int inst) {
  rocl::Attributes pattern = group_pattern(group);
  pattern.set("pvm.inst", decimal(inst)).ask("pvm.member", 32).ask("pvm.gid", 32);
  const std::optional<rocl::Found> found = find_first(pattern);
  if (!found) return group_code_for_missing(group, PvmNoInst);
  const int tid = attribute_int(*found, "pvm.member");
  remember_gid_of(*found, tid);
  return tid;
}

void leave(const GroupMembership &membership) {
  rocl_delete(membership.entry);
  rocl_delete(membership.claim);
}

}  // namespace rpvm

using rpvm::Task;

extern "C" int pvm_joingroup(char *group) {
  return rpvm::call_locked("pvm_joingroup", [&](Task &t) {
    return rpvm::bad_name(group) ? PvmNullGroup : rpvm::join(t, group);
  });
}

extern "C" int pvm_lvgroup(char *group) {
  return rpvm::call_locked("pvm_lvgroup", [&](Task &t) {
    if (rpvm::bad_name(group)) return PvmNullGroup;
    const auto it = t.groups.find(group);
    if (it == t.groups.end()) return rpvm::group_code_for_missing(group, PvmNotInGroup);
    leave(it->second);
    t.groups.erase(it);
    return PvmOk;
  });
}

extern "C" int pvm_gettid(char *group, int inst) {
  return rpvm::call_unlocked("pvm_gettid", [&](Task &) {
    if (rpvm::bad_name(group)) return PvmNullGroup;
    return inst < 0 ? PvmBadParam : rpvm::tid_of_instance(group, inst);
  });
}

extern "C" int pvm_getinst(char *group, int tid) {
  return rpvm::call_unlocked("pvm_getinst", [&](Task &t) {
    if (rpvm::bad_name(group)) return PvmNullGroup;
    if (tid <= 0) return PvmBadParam;
    if (tid == t.tid) {
      std::lock_guard guard(t.lock);
      const auto it = t.groups.find(group);
      if (it != t.groups.end()) return it->second.instance;
    }
    return rpvm::instance_of(group, tid);
  });
}

extern "C" int pvm_gsize(char *group) {
  return rpvm::call_unlocked("pvm_gsize", [&](Task &) {
    if (rpvm::bad_name(group)) return PvmNullGroup;
    const std::size_t n = rpvm::group_members(group).size();
    return n != 0 ? int(n) : PvmNoGroup;
  });
}

// Groups here are always usable by instance, so freezing only waits until
// the group has `size` members (-1: as many as it has now).
extern "C" int pvm_freezegroup(char *group, int size) {
  return rpvm::call_unlocked("pvm_freezegroup", [&](Task &t) {
    if (rpvm::bad_name(group)) return PvmNullGroup;
    {
      std::lock_guard guard(t.lock);
      if (!t.groups.contains(group)) return rpvm::group_code_for_missing(group, PvmNotInGroup);
    }
    if (size < -1) return PvmBadParam;
    if (size <= 0) return PvmOk;
    rpvm::wait_for_entries(rpvm::group_pattern(group), std::size_t(size), -1);
    return PvmOk;
  });
}
