// spawn_api.cpp - rocl_export and rocl_spawn_thread (rocl.h): threads
// started in another process, as ToCL's remote thread creation and the pod
// controller of RoCL's TPVM (section 5.1). Written over the public C API
// alone: a process's launcher is a thread serving one resource
// {type=rocl-launcher}; every exported name is a resource {type=rocl-export,
// name=NAME, launcher=<the launcher's gid>} that a spawner finds by query;
// a request is one message to the launcher, its answer one message back.
#include "api/spawn.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rocl/rocl.h"
#include "status/status.hpp"

namespace {

using rocl::impl::fail;

constexpr int kRequestTag = 1;
constexpr int kAnswerTag = 2;
constexpr std::size_t kMaxName = 200;

struct Exported {
  rocl_thread_fn fn = nullptr;
  void *user = nullptr;
  rocl_gid_t resource = ROCL_NULL_GID;  // {type=rocl-export, name=...}
};

rocl_attrl_t *attributes(std::initializer_list<std::pair<const char *, std::string>> items) {
  rocl_attrl_t *a = rocl_new_attrl(0);
  for (const auto &[name, value] : items) {
    rocl_add_attr(a, name, value.data(), static_cast<int>(value.size()));
  }
  return a;
}

std::string gid_bytes(rocl_gid_t gid) {
  std::string out(sizeof gid, '\0');
  std::memcpy(out.data(), &gid, sizeof gid);
  return out;
}

// The answer to a request: the request's id, the new thread's gid (> 0) or
// a negative code, then the sentence that explains a failure.
std::string answer(std::uint64_t id, std::int64_t code, const std::string &why) {
  std::string out(sizeof id + sizeof code, '\0');
  std::memcpy(out.data(), &id, sizeof id);
  std::memcpy(out.data() + sizeof id, &code, sizeof code);
  return out + why;
}

// Where a thread's spawn requests get their answers: one resource per
// thread, kept while its context lives (a resource per request would cost
// two directory round trips each, and its removal would make every process
// check its cached routes again).
class AnswerBox {
 public:
  ~AnswerBox() {
    if (gid_ != ROCL_NULL_GID && rocl_context_gid() == context_) rocl_delete(gid_);
  }
  // This thread's resource, registered on first use in this context.
  std::int64_t gid() {
    const rocl_gid_t context = rocl_context_gid();
    if (gid_ != ROCL_NULL_GID && context == context_) return static_cast<std::int64_t>(gid_);
    rocl_attrl_t *a = attributes({{"type", "rocl-spawn-answer"}});
    const std::int64_t g = rocl_register(a);
    rocl_kill_attrl(a);
    if (g < 0) return g;
    gid_ = static_cast<rocl_gid_t>(g);
    context_ = context;
    return g;
  }
  std::uint64_t next_id() { return ++last_id_; }

 private:
  rocl_gid_t gid_ = ROCL_NULL_GID;
  rocl_gid_t context_ = ROCL_NULL_GID;
  std::uint64_t last_id_ = 0;
};
thread_local AnswerBox t_answers;

// This process's launcher: the thread that serves spawn requests and the
// threads it started.
class Launcher {
 public:
  ~Launcher() { stop(); }

  int add(const std::string &name, rocl_thread_fn fn, void *user) {
    std::lock_guard lock(mu_);
    if (fns_.count(name) != 0) {
      return fail(ROCL_EINVAL, "rocl_export: '%s' is already exported", name.c_str());
    }
    if (gid_ == ROCL_NULL_GID) {
      rocl_attrl_t *a = attributes({{"type", "rocl-launcher"}});
      const std::int64_t g = rocl_register(a);
      rocl_kill_attrl(a);
      if (g < 0) return static_cast<int>(g);
      gid_ = static_cast<rocl_gid_t>(g);
      thread_ = std::thread([this, g = gid_] { serve(g); });
    }
    rocl_attrl_t *a =
        attributes({{"type", "rocl-export"}, {"name", name}, {"launcher", gid_bytes(gid_)}});
    const std::int64_t g = rocl_register(a);
    rocl_kill_attrl(a);
    if (g < 0) return static_cast<int>(g);
    fns_[name] = Exported{fn, user, static_cast<rocl_gid_t>(g)};
    return ROCL_OK;
  }

  // No new spawns (the launcher's and the exports' resources leave), then
  // waits for the serving thread and for every thread it started.
  void stop() {
    std::vector<Spawned> spawned;
    {
      std::lock_guard lock(mu_);
      for (auto &[name, e] : fns_) rocl_delete(e.resource);
      fns_.clear();
      if (gid_ != ROCL_NULL_GID) rocl_delete(gid_);  // its receive ends with ROCL_EDELETED
      gid_ = ROCL_NULL_GID;
    }
    if (thread_.joinable()) thread_.join();
    {
      std::lock_guard lock(mu_);
      spawned.swap(spawned_);
    }
    for (auto &t : spawned) t.thread.join();
  }

 private:
  void serve(rocl_gid_t me) {
    for (;;) {
      void *msg = nullptr;
      rocl_gid_t from = ROCL_NULL_GID;
      std::size_t len = 0;
      const int rc = rocl_recv(me, ROCL_ANY_GID, kRequestTag, &msg, &from, nullptr, &len, -1);
      if (rc != ROCL_OK) return;  // deleted: the context is ending
      const std::string reply = start(static_cast<const char *>(msg), len);
      rocl_bfret(msg);
      (void)rocl_send(me, from, kAnswerTag, const_cast<char *>(reply.data()), reply.size());
    }
  }

  // A request is its id (8 bytes), the name's length (4 bytes), the name,
  // the argument.
  std::string start(const char *p, std::size_t len) {
    std::uint64_t id = 0;
    std::uint32_t name_len = 0;
    constexpr std::size_t kHead = sizeof id + sizeof name_len;
    if (len < kHead) return answer(0, ROCL_EINVAL, "a spawn request shorter than 12 bytes");
    std::memcpy(&id, p, sizeof id);
    std::memcpy(&name_len, p + sizeof id, sizeof name_len);
    if (name_len == 0 || name_len > kMaxName || name_len > len - kHead) {
      return answer(id, ROCL_EINVAL,
                    "a spawn request with a name of " + std::to_string(name_len) + " bytes in " +
                        std::to_string(len));
    }
    const std::string name(p + kHead, name_len);
    const char *arg = p + kHead + name_len;
    const std::size_t arg_len = len - kHead - name_len;
    std::lock_guard lock(mu_);
    auto it = fns_.find(name);
    if (it == fns_.end()) return answer(id, ROCL_ENOTFOUND, "'" + name + "' is not exported here");
    rocl_attrl_t *a = attributes({{"type", "rocl-thread"}, {"function", name}});
    const std::int64_t g = rocl_register(a);
    rocl_kill_attrl(a);
    if (g < 0) return answer(id, g, rocl_last_error());
    reap();
    const Exported e = it->second;
    auto copy = std::make_shared<std::string>(arg, arg_len);
    auto done = std::make_shared<std::atomic<bool>>(false);
    try {
      spawned_.push_back(Spawned{std::thread([e, self = static_cast<rocl_gid_t>(g), copy, done] {
                                   e.fn(self, copy->data(), copy->size(), e.user);
                                   rocl_delete(
                                       self);  // a thread that returned leaves the directory
                                   done->store(true, std::memory_order_release);
                                 }),
                                 done});
    } catch (const std::exception &x) {  // no thread to be had (limits, memory)
      rocl_delete(static_cast<rocl_gid_t>(g));
      return answer(id, ROCL_ENOMEM, std::string("no thread could be started: ") + x.what());
    }
    return answer(id, g, "");
  }

  // Joins the spawned threads that have returned, so that a long-lived
  // launcher does not keep their stacks. Holding mu_.
  void reap() {
    for (auto it = spawned_.begin(); it != spawned_.end();) {
      if (it->done->load(std::memory_order_acquire)) {
        it->thread.join();
        it = spawned_.erase(it);
      } else {
        ++it;
      }
    }
  }

  struct Spawned {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  std::mutex mu_;
  std::map<std::string, Exported> fns_;
  rocl_gid_t gid_ = ROCL_NULL_GID;
  std::thread thread_;
  std::vector<Spawned> spawned_;
};

std::mutex g_mu;
std::unique_ptr<Launcher> g_launcher;

// The launcher serving `name` in `process` (ROCL_ANY_GID: any process).
int find_launcher(rocl_gid_t process, const std::string &name, rocl_gid_t *launcher) {
  rocl_attrl_t *a = rocl_new_attrl(0);
  rocl_add_attr(a, "type", "rocl-export", 11);
  rocl_add_attr(a, "name", name.data(), static_cast<int>(name.size()));
  if (process != ROCL_ANY_GID) {
    rocl_add_attr(a, "context", &process, static_cast<int>(sizeof process));
  }
  rocl_add_attr(a, "launcher", nullptr, static_cast<int>(sizeof(rocl_gid_t)));
  rocl_gid_t found = ROCL_NULL_GID;
  const int rc = rocl_query(&found, a);
  int len = 0;
  const void *value = rc == ROCL_OK ? rocl_get_attr(a, "launcher", &len) : nullptr;
  if (value != nullptr && len == static_cast<int>(sizeof *launcher)) {
    std::memcpy(launcher, value, sizeof *launcher);
  }
  rocl_kill_attrl(a);
  if (rc == ROCL_ENOTFOUND) {
    if (process == ROCL_ANY_GID) {
      return fail(ROCL_ENOTFOUND, "rocl_spawn_thread: no process exports '%s'", name.c_str());
    }
    return fail(ROCL_ENOTFOUND, "rocl_spawn_thread: process %#llx does not export '%s'",
                static_cast<unsigned long long>(process), name.c_str());
  }
  if (rc != ROCL_OK) return rc;
  if (value == nullptr) {
    return fail(ROCL_EINTERNAL, "rocl_spawn_thread: the export of '%s' names no launcher",
                name.c_str());
  }
  return ROCL_OK;
}

// The launchers this thread found, by (process, name): a query that
// misses locally goes to every host, so it is asked once; an entry goes
// when a send to its launcher fails (the process ended).
class LauncherCache {
 public:
  int find(rocl_gid_t process, const std::string &name, rocl_gid_t *launcher) {
    const rocl_gid_t context = rocl_context_gid();
    if (context != context_) {
      found_.clear();
      context_ = context;
    }
    auto it = found_.find({process, name});
    if (it != found_.end()) {
      *launcher = it->second;
      return ROCL_OK;
    }
    const int rc = find_launcher(process, name, launcher);
    if (rc == ROCL_OK) found_[{process, name}] = *launcher;
    return rc;
  }
  void forget(rocl_gid_t process, const std::string &name) { found_.erase({process, name}); }

 private:
  rocl_gid_t context_ = ROCL_NULL_GID;
  std::map<std::pair<rocl_gid_t, std::string>, rocl_gid_t> found_;
};
thread_local LauncherCache t_launchers;

}  // namespace

namespace rocl::impl {

void stop_launcher() {
  std::unique_ptr<Launcher> launcher;
  {
    std::lock_guard lock(g_mu);
    launcher.swap(g_launcher);
  }
  if (launcher) launcher->stop();
}

}  // namespace rocl::impl

extern "C" {

int rocl_export(const char *name, rocl_thread_fn fn, void *user) {
  rocl::impl::clear_error();
  if (rocl_context_gid() == ROCL_NULL_GID) {
    return fail(ROCL_ENOINIT, "rocl_export: rocl_init has not been called");
  }
  if (name == nullptr || fn == nullptr) return fail(ROCL_EINVAL, "rocl_export: name or fn is NULL");
  const std::size_t len = std::strlen(name);
  if (len == 0 || len > kMaxName) {
    return fail(ROCL_EINVAL, "rocl_export: a name of %zu bytes (1..%zu)", len, kMaxName);
  }
  std::lock_guard lock(g_mu);
  if (!g_launcher) g_launcher = std::make_unique<Launcher>();
  return g_launcher->add(name, fn, user);
}

int64_t rocl_spawn_thread(rocl_gid_t process, const char *name, const void *arg, size_t len,
                          int timeout_ms) {
  rocl::impl::clear_error();
  if (rocl_context_gid() == ROCL_NULL_GID) {
    return fail(ROCL_ENOINIT, "rocl_spawn_thread: rocl_init has not been called");
  }
  if (name == nullptr || (arg == nullptr && len != 0)) {
    return fail(ROCL_EINVAL, "rocl_spawn_thread: name is NULL, or arg with len %zu", len);
  }
  const std::string fn_name = name;
  if (fn_name.empty() || fn_name.size() > kMaxName) {
    return fail(ROCL_EINVAL, "rocl_spawn_thread: a name of %zu bytes (1..%zu)", fn_name.size(),
                kMaxName);
  }
  rocl_gid_t launcher = ROCL_NULL_GID;
  if (const int rc = t_launchers.find(process, fn_name, &launcher); rc != ROCL_OK) return rc;

  // The answer comes to this thread's answer resource, with the request's id.
  const std::int64_t me = t_answers.gid();
  if (me < 0) return me;
  const auto self = static_cast<rocl_gid_t>(me);
  const std::uint64_t id = t_answers.next_id();
  const auto name_len = static_cast<std::uint32_t>(fn_name.size());
  std::string request(sizeof id + sizeof name_len, '\0');
  std::memcpy(request.data(), &id, sizeof id);
  std::memcpy(request.data() + sizeof id, &name_len, sizeof name_len);
  request += fn_name;
  request.append(static_cast<const char *>(arg), len);
  int rc = rocl_send(self, launcher, kRequestTag, request.data(), request.size());
  if (rc == ROCL_EBADGID) {  // that launcher is gone: ask the directory again
    t_launchers.forget(process, fn_name);
    if ((rc = t_launchers.find(process, fn_name, &launcher)) != ROCL_OK) return rc;
    rc = rocl_send(self, launcher, kRequestTag, request.data(), request.size());
  }
  if (rc != ROCL_OK) {
    const std::string why = rocl_last_error();
    return fail(rc, "rocl_spawn_thread: '%s' at launcher %#llx: %s", fn_name.c_str(),
                static_cast<unsigned long long>(launcher), why.c_str());
  }
  for (;;) {  // answers to earlier requests that timed out are dropped
    void *msg = nullptr;
    std::size_t got = 0;
    rc = rocl_recv(self, launcher, kAnswerTag, &msg, nullptr, nullptr, &got, timeout_ms);
    if (rc == ROCL_ETIMEDOUT) {
      return fail(rc, "rocl_spawn_thread: no answer from the launcher %#llx of '%s' within %d ms",
                  static_cast<unsigned long long>(launcher), fn_name.c_str(), timeout_ms);
    }
    if (rc != ROCL_OK) {
      const std::string why = rocl_last_error();
      return fail(rc, "rocl_spawn_thread: '%s' at launcher %#llx: %s", fn_name.c_str(),
                  static_cast<unsigned long long>(launcher), why.c_str());
    }
    const char *p = static_cast<const char *>(msg);
    std::uint64_t answered = 0;
    std::int64_t code = ROCL_EINTERNAL;
    if (got >= sizeof answered + sizeof code) {
      std::memcpy(&answered, p, sizeof answered);
      std::memcpy(&code, p + sizeof answered, sizeof code);
    }
    const std::size_t head = sizeof answered + sizeof code;
    const std::string why(got > head ? p + head : p, got > head ? got - head : 0);
    rocl_bfret(msg);
    if (answered != id) continue;
    if (code > 0) return code;
    return fail(static_cast<int>(code), "rocl_spawn_thread: '%s' at launcher %#llx: %s",
                fn_name.c_str(), static_cast<unsigned long long>(launcher), why.c_str());
  }
}

}  // extern "C"
