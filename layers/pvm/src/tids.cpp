// tids.cpp - PVM task ids from rocl gids and back (docs/pvm.md, "Task ids").
// A tid is the gid of the task's resource when gids are 31 bits wide;
// wider gids are folded, so the way back goes through the directory, where
// every task's entry carries its pvm.tid and the gid it receives on.
#include <cstdlib>
#include <unordered_map>

#include "pvm_impl.hpp"

namespace rpvm {
namespace {

std::mutex g_cache_lock;  // constant-initialised: usable before main

// Made on first use: a spawned task enrols from a constructor that may run
// before this file's static initialisers (their order across files is not
// fixed), and an unconstructed map divides by its zero bucket count.
std::unordered_map<int, rocl_gid_t> &gid_by_tid() {
  static std::unordered_map<int, rocl_gid_t> map;
  return map;
}

struct GidParts {
  std::uint64_t server, serial;
};

GidParts parts_of(rocl_gid_t gid) {
  if (gid <= 0x7fffffffu) return {gid >> 24, gid & 0xffffff};
  return {gid >> 48, gid & 0xffffffffffffu};
}

}  // namespace

int tid_of(rocl_gid_t gid) {
  const GidParts p = parts_of(gid);
  return int(((p.server & 0x7f) << 24) | (p.serial & 0xffffff));
}

int context_of(rocl_gid_t gid) {
  const GidParts p = parts_of(gid);
  const int context = int(((p.server & 0xf) << 18) | (p.serial & 0x3ffff));
  return context != 0 ? context : 1;
}

std::optional<rocl::Found> task_entry(int tid) {
  rocl::Attributes pattern{{"type", "pvm-task"}, {"pvm.tid", decimal(tid)}};
  for (const char *name : {"pvm.gid", "pvm.ptid", "pvm.host", "pvm.name", "pvm.pid"}) {
    pattern.ask(name, 256);
  }
  return find_first(pattern);
}

std::optional<rocl_gid_t> gid_of(int tid) {
  if (tid <= 0) return std::nullopt;
  // In a job of 31-bit gids the tid is the gid (rocl refuses unknown ones).
  if (rocl_context_gid() <= 0x7fffffffu) return rocl_gid_t(tid);
  {
    std::lock_guard guard(g_cache_lock);
    if (auto it = gid_by_tid().find(tid); it != gid_by_tid().end()) return it->second;
  }
  const std::optional<rocl::Found> entry = task_entry(tid);
  if (!entry) return std::nullopt;
  const std::optional<std::string> gid = entry->attributes.get("pvm.gid");
  if (!gid) return std::nullopt;
  const rocl_gid_t found = std::strtoull(gid->c_str(), nullptr, 10);
  remember_tid(tid, found);
  return found;
}

void remember_tid(int tid, rocl_gid_t gid) {
  std::lock_guard guard(g_cache_lock);
  gid_by_tid()[tid] = gid;
}

}  // namespace rpvm
