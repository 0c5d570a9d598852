// tpvm.cpp - TPVM over rocl (RoCL 5.1): tpvm_export is rocl_export, whose
// launcher thread is the process's pod controller; tpvm_spawn is
// rocl_spawn_thread, which finds the controller by the function's name in
// the directory. The started thread is a task whose resource is rocl's
// thread resource {type=rocl-thread}: it registers its task entry, runs
// the function, and leaves when the function returns.
#include <tpvm.h>

#include <cstdlib>
#include <cstring>

#include "pvm_impl.hpp"

namespace rpvm {
namespace {

// What the spawner hands the new thread (rocl copies it).
struct ThreadStart {
  int parent_tid;
  int context;
};

int thread_timeout_ms() {
  const char *v = std::getenv("ROCL_PVM_SPAWN_MS");
  return v != nullptr && *v != '\0' ? std::atoi(v) : 60000;
}

void run_thread(rocl_gid_t self, const void *arg, std::size_t len, void *user) {
  Task t;
  t.gid = self;
  if (len == sizeof(ThreadStart)) {
    ThreadStart start;
    std::memcpy(&start, arg, sizeof start);
    t.parent_tid = start.parent_tid;
    t.context = start.context;
  }
  if (publish_task(t, "thread") != PvmOk) return;
  set_thread_task(&t);
  reinterpret_cast<tpvm_function>(user)();
  {
    std::lock_guard guard(t.lock);
    unpublish_task(t);
  }
  set_thread_task(nullptr);
}

// The context gid of a process on host that exports name, or
// ROCL_NULL_GID.
rocl_gid_t exporter_on(const char *name, const char *host) {
  rocl::Attributes pattern{{"type", "rocl-export"}, {"name", name}};
  for (const rocl::Found &f : find_all(pattern.ask("context", 8))) {
    const std::optional<std::string> context = f.attributes.get("context");
    if (!context || context->size() != sizeof(rocl_gid_t)) continue;
    rocl_gid_t gid;
    std::memcpy(&gid, context->data(), sizeof gid);
    if (host_of(gid) == host) return gid;
  }
  return ROCL_NULL_GID;
}

int code_for(std::int64_t rc) {
  switch (rc) {
    case ROCL_ENOTFOUND:
      return PvmNoFile;
    case ROCL_ETIMEDOUT:
    case ROCL_EPEER:
      return PvmCantStart;
    case ROCL_EINVAL:
      return PvmBadParam;
    default:
      return PvmSysErr;
  }
}

int spawn_threads(Task &t, const char *name, const char *host, int count, int *tids) {
  rocl_gid_t process = ROCL_ANY_GID;
  if (host != nullptr) {
    process = exporter_on(name, std::strcmp(host, ".") == 0 ? my_host_name().c_str() : host);
    if (process == ROCL_NULL_GID) {
      std::fill(tids, tids + count, PvmNoHost);
      return 0;
    }
  }
  ThreadStart start;
  {
    std::lock_guard guard(t.lock);
    start = {t.tid, t.context};
  }
  for (int i = 0; i < count; ++i) {
    const std::int64_t gid =
        rocl_spawn_thread(process, name, &start, sizeof start, thread_timeout_ms());
    if (gid <= 0) {
      std::fill(tids + i, tids + count, code_for(gid));
      return i;
    }
    tids[i] = tid_of(rocl_gid_t(gid));
    remember_tid(tids[i], rocl_gid_t(gid));
  }
  return count;
}

}  // namespace
}  // namespace rpvm

extern "C" int tpvm_export(char *name, tpvm_function fn) {
  return rpvm::call_unlocked("tpvm_export", [&](rpvm::Task &) {
    if (name == nullptr || *name == '\0' || fn == nullptr) return PvmBadParam;
    const int rc = rocl_export(name, rpvm::run_thread, reinterpret_cast<void *>(fn));
    return rc == ROCL_OK ? PvmOk : rpvm::code_for(rc);
  });
}

extern "C" int tpvm_spawn(char *name, char *where, int flag, int count, int *tids) {
  return rpvm::call_unlocked("tpvm_spawn", [&](rpvm::Task &t) {
    if (name == nullptr || *name == '\0' || count < 1 || tids == nullptr) return PvmBadParam;
    const bool on_host = (flag & PvmTaskHost) != 0 && where != nullptr && *where != '\0';
    return rpvm::spawn_threads(t, name, on_host ? where : nullptr, count, tids);
  });
}

extern "C" int tpvm_mytid(void) {
  return pvm_mytid();
}

extern "C" int tpvm_parent(void) {
  return pvm_parent();
}
