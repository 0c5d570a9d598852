// spawn.cpp - pvm_spawn through rocl_spawn, and the calls that describe or
// end tasks: pvm_kill, pvm_siblings, pvm_pstat, pvm_tidtohost, pvm_catchout.
// A child's environment tells it its parent's tid, the context it starts
// in and where its output goes; it enrols before its main, so its tid is
// known when rocl_spawn has returned and its directory entry appears.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "pvm_impl.hpp"

using rpvm::Task;

namespace {

int spawn_timeout_ms() {
  const char *v = std::getenv("ROCL_PVM_SPAWN_MS");
  return v != nullptr && *v != '\0' ? std::atoi(v) : 60000;
}

struct SpawnRequest {
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::string host;  // empty: any host
};

int code_for_spawn_failure(std::int64_t rc, const SpawnRequest &r) {
  if (rc == ROCL_ENOTFOUND) {
    const bool host_known =
        r.host.empty() || rpvm::find_first({{"type", "rocl-host"}, {"host", r.host}});
    return host_known ? PvmNoFile : PvmNoHost;
  }
  if (rc == ROCL_ETIMEDOUT) return PvmCantStart;
  return PvmSysErr;
}

// Starts one child; its tid, or a PVM code. The child's first message
// (task.cpp, report_to_spawner) names it, with a tag of this spawn's own.
int spawn_one(const Task &t, const SpawnRequest &r) {
  static std::atomic<int> last_tag{0};
  const int tag = last_tag.fetch_add(1) + 1;
  std::vector<std::string> env_text = r.env;
  env_text.push_back(std::string(rpvm::kReportToVariable) + "=" + std::to_string(t.gid));
  env_text.push_back(std::string(rpvm::kReportTagVariable) + "=" + std::to_string(tag));
  std::vector<const char *> argv, env;
  for (const std::string &a : r.args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  for (const std::string &e : env_text) env.push_back(e.c_str());
  env.push_back(nullptr);
  const int timeout = spawn_timeout_ms();
  const std::int64_t context =
      rocl_spawn_env(r.host.empty() ? nullptr : r.host.c_str(), argv.data(), env.data(), timeout);
  if (context <= 0) return code_for_spawn_failure(context, r);
  int tid = 0;
  rocl_status_t st{};
  if (rocl_recvx(t.gid, ROCL_ANY_GID, tag, rpvm::kSpawnDomain, &tid, sizeof tid, &st, timeout) !=
      ROCL_OK) {
    return PvmCantStart;  // not a PVM program, or it never enrolled
  }
  rpvm::remember_tid(tid, st.origin);
  return tid;
}

SpawnRequest request_for(Task &t, char *task, char **argv, int flag, char *where) {
  SpawnRequest r;
  r.args.emplace_back(task);
  for (char **a = argv; a != nullptr && *a != nullptr; ++a) r.args.emplace_back(*a);
  std::lock_guard guard(t.lock);
  const int parent = (flag & PvmNoSpawnParent) != 0 ? 0 : t.tid;
  r.env = {std::string(rpvm::kParentTidVariable) + "=" + std::to_string(parent),
           std::string(rpvm::kContextVariable) + "=" + std::to_string(t.context),
           std::string(rpvm::kOutputVariable) + "=" + (t.catch_output ? "parent" : "log")};
  if ((flag & PvmTaskHost) != 0 && where != nullptr && *where != '\0') {
    r.host = std::strcmp(where, ".") == 0 ? rpvm::my_host_name() : where;
  }
  return r;
}

}  // namespace

extern "C" int pvm_spawn(char *task, char **argv, int flag, char *where, int ntask, int *tids) {
  return rpvm::call_unlocked("pvm_spawn", [&](Task &t) {
    if (task == nullptr || *task == '\0' || ntask < 1 || tids == nullptr) return PvmBadParam;
    const SpawnRequest r = request_for(t, task, argv, flag, where);
    int started = 0;
    for (int i = 0; i < ntask; ++i) {
      const int tid = spawn_one(t, r);
      if (tid < 0) {
        std::fill(tids + started, tids + ntask, tid);
        break;
      }
      tids[started++] = tid;
    }
    return started;
  });
}

extern "C" int pvm_catchout(FILE *ff) {
  return rpvm::call_locked("pvm_catchout", [&](Task &t) {
    t.catch_output = ff != nullptr;
    if (ff != nullptr) std::fflush(ff);
    return PvmOk;
  });
}

extern "C" int pvm_pstat(int tid) {
  return rpvm::call_unlocked("pvm_pstat", [&](Task &) {
    if (tid <= 0) return PvmBadParam;
    return rpvm::task_entry(tid) ? PvmOk : PvmNoTask;
  });
}

extern "C" int pvm_tidtohost(int tid) {
  return rpvm::call_unlocked("pvm_tidtohost", [&](Task &) {
    if (tid <= 0) return PvmBadParam;
    const std::optional<rocl::Found> entry = rpvm::task_entry(tid);
    return entry ? rpvm::attribute_int(*entry, "pvm.host") : PvmNoTask;
  });
}

// Signals a task on this host; tasks elsewhere would need their host's
// server to do it, which rocl's spawning does not offer.
extern "C" int pvm_kill(int tid) {
  return rpvm::call_unlocked("pvm_kill", [&](Task &t) {
    if (tid <= 0 || tid == t.tid) return PvmBadParam;
    const std::optional<rocl::Found> entry = rpvm::task_entry(tid);
    const std::optional<rocl::Found> mine = rpvm::task_entry(t.tid);
    if (!entry || !mine) return PvmNoTask;
    if (rpvm::attribute_int(*entry, "pvm.host") != rpvm::attribute_int(*mine, "pvm.host")) {
      return PvmNotImpl;
    }
    return ::kill(rpvm::attribute_int(*entry, "pvm.pid"), SIGTERM) == 0 ? PvmOk : PvmNoTask;
  });
}

extern "C" int pvm_siblings(int **tids) {
  return rpvm::call_unlocked("pvm_siblings", [&](Task &t) {
    if (tids == nullptr) return PvmBadParam;
    static std::vector<int> siblings;
    siblings.clear();
    const auto found = rpvm::find_all(
        rocl::Attributes{{"type", "pvm-task"}, {"pvm.ptid", rpvm::decimal(t.parent_tid)}}.ask(
            "pvm.tid", 32));
    for (const rocl::Found &f : found) siblings.push_back(rpvm::attribute_int(f, "pvm.tid"));
    std::sort(siblings.begin(), siblings.end());
    *tids = siblings.data();
    return int(siblings.size());
  });
}
