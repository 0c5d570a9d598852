// spawn_table.hpp - the processes a directory server starts for rocl_spawn
// (ToCL section 2; PVM's daemon does the same), as the server's loop
// thread sees them.
//
// A spawn: the program starts (os::start_child) with the server process's
// environment, minus the job variables of spawn_request.hpp, plus the
// request's ROCL_* options, plus the job's variables from SpawnConfig
// (ROCL_DIRECTORY, ROCL_SECRET_FILE, ...), plus ROCL_SPAWN_ID=<id> and
// ROCL_PARENT=<spawner's context gid>. Its rocl_init registers its context
// with the attribute spawn=<id> (core/context.cpp): the server sees that
// registration (on_register) and the spawn is done, with the context's gid.
// It fails instead, with a sentence naming the program and the host, when
// the program cannot be started (no such program, not executable), when it
// exits before registering, or when the limit passes first (the process is
// killed then: nothing is left half-started).
//
// Spawned processes belong to the server: their exits are logged, and
// stop_all() (the server stopping, i.e. the job ending) stops those still
// running: SIGTERM to each one's process group, SIGKILL after `grace`.
//
// Not thread safe: the server's loop thread owns it. Done callbacks run on
// that thread, inside start() (an immediate failure), on_register(),
// on_exit() or on_tick().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "directory/attr_list.hpp"
#include "directory/spawn_request.hpp"
#include "os/spawn.hpp"
#include "rocl/rocl.h"

namespace rocl::impl {

struct SpawnConfig {
  // The host's name in sentences and in the host's directory resource.
  std::string host_name;
  // "KEY=VALUE" every spawned process gets: where the job's directory and
  // secret are (ROCL_DIRECTORY, ROCL_SECRET_FILE, ROCL_JOB_DIR,
  // ROCL_HOST_NAME, ROCL_TCP_BIND, ...).
  std::vector<std::string> environment;
  std::chrono::milliseconds grace{2000};
};

class SpawnTable {
 public:
  using Clock = std::chrono::steady_clock;
  using Done = std::function<void(int status, rocl_gid_t gid, const std::string &why)>;
  using LogFn = std::function<void(const std::string &)>;
  // watch(fd, true): the loop should call on_exit(fd) when fd is readable;
  // watch(fd, false): no longer.
  using WatchFn = std::function<void(int fd, bool add)>;

  SpawnTable(SpawnConfig config, WatchFn watch, LogFn log);
  ~SpawnTable();  // stop_all()
  SpawnTable(const SpawnTable &) = delete;
  SpawnTable &operator=(const SpawnTable &) = delete;

  // Starts r's program; done(ROCL_OK, context gid, "") once its context is
  // registered, or done(code < 0, 0, sentence). limit: zero or negative for
  // none.
  void start(const SpawnRequest &r, std::chrono::milliseconds limit, Done done);
  // A context was registered with attrs and got gid.
  void on_register(const AttrList &attrs, rocl_gid_t gid);
  // Whether fd is one of the children's (watched) descriptors.
  bool owns(int fd) const { return by_fd_.count(fd) != 0; }
  void on_exit(int fd);
  // Fails spawns whose limit passed; reaps children that have no pidfd.
  void on_tick();
  // When on_tick is next due (Clock::time_point::max() if never).
  Clock::time_point next_deadline() const;
  // Children started and not yet reaped.
  std::size_t running() const { return children_.size(); }
  // Stops every child (see above) and waits for them; pending spawns fail.
  void stop_all();

 private:
  struct Entry {
    os::Child child;
    std::string program;
    rocl_gid_t parent = ROCL_NULL_GID;
    rocl_gid_t context = ROCL_NULL_GID;  // once registered
    Done done;                           // empty once answered
    Clock::time_point deadline = Clock::time_point::max();
  };

  void answer(Entry &e, int status, rocl_gid_t gid, const std::string &why);
  void exited(std::map<std::uint64_t, Entry>::iterator it, int status);
  std::vector<std::string> environment_for(const SpawnRequest &r, std::uint64_t id) const;

  SpawnConfig config_;
  WatchFn watch_;
  LogFn log_;
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, Entry> children_;  // by spawn id
  std::map<int, std::uint64_t> by_fd_;       // pidfd -> spawn id
};

}  // namespace rocl::impl
