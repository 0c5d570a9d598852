// spawn_table.cpp - the processes a directory server starts (spawn_table.hpp).
#include "directory/spawn_table.hpp"

#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "directory/directory.hpp"

extern char **environ;

namespace rocl::impl {
namespace {

std::string key_of(const std::string &entry) {
  return entry.substr(0, entry.find('='));
}

// Sets key=value in env, replacing an entry with that key.
void put(std::vector<std::string> *env, const std::string &entry) {
  const std::string key = key_of(entry) + "=";
  for (std::string &e : *env) {
    if (e.rfind(key, 0) == 0) {
      e = entry;
      return;
    }
  }
  env->push_back(entry);
}

}  // namespace

SpawnTable::SpawnTable(SpawnConfig config, WatchFn watch, LogFn log)
    : config_(std::move(config)), watch_(std::move(watch)), log_(std::move(log)) {}

SpawnTable::~SpawnTable() {
  stop_all();
}

std::vector<std::string> SpawnTable::environment_for(const SpawnRequest &r,
                                                     std::uint64_t id) const {
  std::vector<std::string> env;
  for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    if (!is_job_variable(key_of(entry))) env.push_back(entry);
  }
  for (const std::string &e : r.env) put(&env, e);
  for (const std::string &e : config_.environment) put(&env, e);
  put(&env, "ROCL_SPAWN_ID=" + std::to_string(id));
  put(&env, "ROCL_PARENT=" + std::to_string(r.parent));
  return env;
}

void SpawnTable::start(const SpawnRequest &r, std::chrono::milliseconds limit, Done done) {
  const std::uint64_t id = next_id_++;
  Entry e;
  e.program = r.argv[0];
  e.parent = r.parent;
  const int err = os::start_child(r.argv, environment_for(r, id), &e.child);
  if (err != 0) {
    const char *reason = err == ENOENT   ? "no such program"
                         : err == EACCES ? "not an executable program (permission denied)"
                                         : nullptr;
    const std::string why = "rocl_spawn: host " + config_.host_name + " cannot run '" + e.program +
                            "': " + (reason ? reason : std::strerror(err));
    done(err == ENOENT ? ROCL_ENOTFOUND : ROCL_EPEER, ROCL_NULL_GID, why);
    return;
  }
  e.done = std::move(done);
  if (limit.count() > 0) e.deadline = Clock::now() + limit;
  if (e.child.pidfd >= 0) {
    by_fd_.emplace(e.child.pidfd, id);
    watch_(e.child.pidfd, true);
  }
  log_("spawn: started '" + e.program + "' as pid " + std::to_string(e.child.pid) + " for " +
       describe_gid(r.parent));
  children_.emplace(id, std::move(e));
}

void SpawnTable::answer(Entry &e, int status, rocl_gid_t gid, const std::string &why) {
  if (!e.done) return;
  Done done = std::move(e.done);
  e.done = nullptr;
  done(status, gid, why);
}

void SpawnTable::on_register(const AttrList &attrs, rocl_gid_t gid) {
  std::size_t len = 0;
  const std::byte *v = attrs.get("spawn", &len);
  if (v == nullptr || len == 0 || len > 20) return;
  const std::string text(reinterpret_cast<const char *>(v), len);
  char *end = nullptr;
  const unsigned long long id = std::strtoull(text.c_str(), &end, 10);
  if (end == nullptr || *end != '\0') return;
  auto it = children_.find(id);
  if (it == children_.end() || it->second.context != ROCL_NULL_GID) return;
  it->second.context = gid;
  it->second.deadline = Clock::time_point::max();
  answer(it->second, ROCL_OK, gid, "");
}

void SpawnTable::exited(std::map<std::uint64_t, Entry>::iterator it, int status) {
  Entry &e = it->second;
  const std::string how = os::describe_wait_status(status);
  log_("spawn: '" + e.program + "' (" +
       (e.context != ROCL_NULL_GID ? describe_gid(e.context) : std::string("not registered")) +
       ") " + how);
  answer(e, ROCL_EPEER, ROCL_NULL_GID,
         "rocl_spawn: '" + e.program + "' on host " + config_.host_name + " " + how +
             " before its rocl_init registered it");
  children_.erase(it);
}

void SpawnTable::on_exit(int fd) {
  auto f = by_fd_.find(fd);
  if (f == by_fd_.end()) return;
  auto it = children_.find(f->second);
  watch_(fd, false);
  by_fd_.erase(f);
  if (it == children_.end()) return;
  int status = 0;
  if (os::reap_child(&it->second.child, &status)) exited(it, status);
}

void SpawnTable::on_tick() {
  const Clock::time_point now = Clock::now();
  for (auto it = children_.begin(); it != children_.end();) {
    auto next = std::next(it);
    Entry &e = it->second;
    if (e.child.pidfd < 0) {  // no pidfd: polled here
      int status = 0;
      if (os::reap_child(&e.child, &status)) {
        exited(it, status);
        it = next;
        continue;
      }
    }
    if (e.done && now >= e.deadline) {
      // Too late: the process goes, so that nothing is left half-started;
      // its exit is reaped (and logged) like any other.
      os::signal_child(e.child, SIGKILL);
      e.deadline = Clock::time_point::max();
      answer(e, ROCL_ETIMEDOUT, ROCL_NULL_GID,
             "rocl_spawn: '" + e.program + "' on host " + config_.host_name +
                 " did not register its context in time (rocl_init not called?); it was killed");
    }
    it = next;
  }
}

SpawnTable::Clock::time_point SpawnTable::next_deadline() const {
  Clock::time_point t = Clock::time_point::max();
  for (const auto &[id, e] : children_) {
    if (e.child.pidfd < 0) return Clock::now() + std::chrono::milliseconds(50);
    if (e.done && e.deadline < t) t = e.deadline;
  }
  return t;
}

void SpawnTable::stop_all() {
  if (children_.empty()) return;
  log_("spawn: stopping " + std::to_string(children_.size()) + " spawned processes");
  for (auto &[id, e] : children_) os::signal_child(e.child, SIGTERM);
  const Clock::time_point kill_at = Clock::now() + config_.grace;
  bool killed = false;
  while (!children_.empty()) {
    for (auto it = children_.begin(); it != children_.end();) {
      auto next = std::next(it);
      const int fd = it->second.child.pidfd;
      int status = 0;
      if (os::reap_child(&it->second.child, &status)) {
        by_fd_.erase(fd);  // closed: epoll forgets it by itself
        exited(it, status);
      }
      it = next;
    }
    if (children_.empty()) break;
    if (!killed && Clock::now() >= kill_at) {
      for (auto &[id, e] : children_) os::signal_child(e.child, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace rocl::impl
