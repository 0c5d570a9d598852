// task.cpp - enrolment: the process (or TPVM thread) becomes a PVM task
// with a resource to receive on and a directory entry naming its tid;
// pvm_mytid, pvm_parent and pvm_exit. A process started by pvm_spawn
// enrols before main, so that its tid exists when pvm_spawn returns, as
// under a pvmd.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "pvm_impl.hpp"

namespace rpvm {
namespace {

std::mutex g_enrol_lock;
std::atomic<Task *> g_process_task{nullptr};

int env_int(const char *name, int otherwise) {
  const char *v = std::getenv(name);
  return v != nullptr && *v != '\0' ? int(std::strtol(v, nullptr, 0)) : otherwise;
}

std::string program_name() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "?";
  path[n] = '\0';
  const char *slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

}  // namespace

std::string host_of(rocl_gid_t context) {
  rocl_attrl_t *a = rocl_new_attrl(512);
  rocl_add_attr(a, "host", nullptr, 256);
  std::string name;
  int len = 0;
  if (rocl_query(&context, a) == ROCL_OK) {
    if (const void *v = rocl_get_attr(a, "host", &len)) {
      name.assign(static_cast<const char *>(v), std::size_t(len));
    }
  }
  rocl_kill_attrl(a);
  return name;
}

std::string my_host_name() {
  std::string name = host_of(rocl_context_gid());
  if (name.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    name = host;
  }
  return name;
}

namespace {

// The tid of the host's {type=rocl-host} resource, or of this context
// outside a job that lists hosts.
int my_host_tid() {
  const std::optional<rocl::Found> host =
      find_first({{"type", "rocl-host"}, {"host", my_host_name()}});
  return tid_of(host ? host->gid : rocl_context_gid());
}

// PVM sends a spawned task's output to the pvmd's log unless its parent
// catches it (pvm_catchout); here the log is a file of its own.
void redirect_spawned_output() {
  const char *mode = std::getenv(kOutputVariable);
  if (mode == nullptr || std::strcmp(mode, "log") != 0) return;
  const char *dir = std::getenv("TMPDIR");
  const std::string log =
      std::string(dir != nullptr ? dir : "/tmp") + "/rocl-pvml." + std::to_string(::getuid());
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd < 0) return;
  ::dup2(fd, 1);
  ::dup2(fd, 2);
  ::close(fd);
}

}  // namespace

int publish_task(Task &t, const char *kind) {
  t.tid = tid_of(t.gid);
  if (find_first({{"type", "pvm-task"}, {"pvm.tid", decimal(t.tid)}})) {
    std::fprintf(stderr, "rocl PVM: tid t%x of gid %llu is taken (docs/pvm.md, Task ids)\n",
                 unsigned(t.tid), static_cast<unsigned long long>(t.gid));
    return PvmSysErr;
  }
  const rocl::Attributes entry{{"type", "pvm-task"},
                               {"pvm.tid", decimal(t.tid)},
                               {"pvm.gid", decimal(static_cast<long long>(t.gid))},
                               {"pvm.ptid", decimal(t.parent_tid)},
                               {"pvm.host", decimal(my_host_tid())},
                               {"pvm.name", program_name()},
                               {"pvm.pid", decimal(::getpid())},
                               {"pvm.kind", kind}};
  const std::int64_t entry_gid = register_entry(entry);
  if (entry_gid <= 0) return PvmSysErr;
  t.entry = rocl_gid_t(entry_gid);
  remember_tid(t.tid, t.gid);
  return PvmOk;
}

void unpublish_task(Task &t) {
  for (auto &[name, member] : t.groups) leave(member);
  t.groups.clear();
  for (rocl_gid_t c : t.contexts) rocl_delete(c);
  t.contexts.clear();
  if (t.entry != ROCL_NULL_GID) rocl_delete(t.entry);
  t.entry = ROCL_NULL_GID;
}

namespace {

int register_task(Task &t) {
  const std::int64_t gid = register_entry({{"type", "pvm-endpoint"}});
  if (gid <= 0) return PvmSysErr;
  t.gid = rocl_gid_t(gid);
  const int code = publish_task(t, "process");
  if (code != PvmOk) rocl_delete(t.gid);
  return code;
}

// A spawned task tells its spawner its tid at once: a message waits for
// the spawner even if this task has ended by the time it looks.
void report_to_spawner(const Task &t) {
  const char *to = std::getenv(kReportToVariable), *tag = std::getenv(kReportTagVariable);
  if (to == nullptr || tag == nullptr) return;
  int tid = t.tid;
  rocl_sendx(t.gid, std::strtoull(to, nullptr, 10), std::atoi(tag), kSpawnDomain, 0, &tid,
             sizeof tid);
}

void leave_at_exit() {
  if (g_process_task.load() != nullptr) pvm_exit();
}

Task *enrol_process(int *code) {
  if (rocl_init() <= 0) {
    *code = PvmSysErr;
    return nullptr;
  }
  auto t = std::make_unique<Task>();
  t->parent_tid = env_int(kParentTidVariable, 0);
  t->context = env_int(kContextVariable, PvmBaseContext);
  if ((*code = register_task(*t)) != PvmOk) {
    rocl_exit();
    return nullptr;
  }
  report_to_spawner(*t);
  static std::once_flag at_exit;
  std::call_once(at_exit, [] { std::atexit(leave_at_exit); });
  return t.release();
}

__attribute__((constructor)) void enrol_if_spawned() {
  if (std::getenv(kParentTidVariable) == nullptr) return;
  redirect_spawned_output();
  int code = PvmOk;
  task(&code);
}

}  // namespace

namespace {
thread_local Task *t_thread_task = nullptr;  // the TPVM thread's own task
}  // namespace

void set_thread_task(Task *t) {
  t_thread_task = t;
}

Task *task_if_enrolled() {
  if (t_thread_task != nullptr) return t_thread_task;
  return g_process_task.load(std::memory_order_acquire);
}

Task *task(int *code) {
  if (t_thread_task != nullptr) return t_thread_task;
  if (Task *t = g_process_task.load(std::memory_order_acquire)) return t;
  std::lock_guard guard(g_enrol_lock);
  if (Task *t = g_process_task.load(std::memory_order_acquire)) return t;
  Task *t = enrol_process(code);
  g_process_task.store(t, std::memory_order_release);
  return t;
}

// Ends the process's membership: its entries leave the directory and the
// context goes (messages already sent are still delivered: rocl_exit).
int leave(Task *t) {
  stop_watching();
  unpublish_task(*t);
  rocl_delete(t->gid);
  delete t;
  rocl_exit();
  return PvmOk;
}

}  // namespace rpvm

extern "C" int pvm_mytid(void) {
  int code = PvmOk;
  rpvm::Task *t = rpvm::task(&code);
  return t != nullptr ? t->tid : rpvm::fail(code, "pvm_mytid");
}

extern "C" int pvm_parent(void) {
  int code = PvmOk;
  rpvm::Task *t = rpvm::task(&code);
  if (t == nullptr) return rpvm::fail(code, "pvm_parent");
  if (t->parent_tid != 0) return t->parent_tid;
  pvm_errno = PvmNoParent;  // PVM says nothing here: programs ask to learn if they were spawned
  return PvmNoParent;
}

extern "C" int pvm_exit(void) {
  if (rpvm::Task *thread = rpvm::t_thread_task) {  // a TPVM thread leaves, not its process
    std::lock_guard guard(thread->lock);
    rpvm::unpublish_task(*thread);
    return PvmOk;
  }
  std::lock_guard guard(rpvm::g_enrol_lock);
  rpvm::Task *t = rpvm::g_process_task.exchange(nullptr);
  if (t == nullptr) return PvmOk;
  return rpvm::leave(t);
}
