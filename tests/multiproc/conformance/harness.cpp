// harness.cpp - see harness.hpp.
#include "harness.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

extern char **environ;

namespace conf {
namespace {

thread_local Rank *t_rank = nullptr;
std::mutex g_print_mu;

std::string vformat(const char *fmt, va_list ap) {
  char buf[2048];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  return buf;
}

std::string where() {
  if (t_rank == nullptr) return "conformance";
  const char *t = std::getenv("ROCL_TRANSPORTS");
  char buf[256];
  std::snprintf(buf, sizeof buf, "case '%s' rank %d (%s%s)", t_rank->case_name.c_str(),
                t_rank->rank,
                t_rank->threaded ? "threads of one process, inproc" : "processes, ROCL_TRANSPORTS=",
                t_rank->threaded ? "" : (t != nullptr ? t : "(unset)"));
  return buf;
}

void report(const char *kind, const char *file, int line, const char *expr, const char *fmt,
            va_list ap) {
  // First thing: the sentence of the failing call (nothing below calls rocl).
  std::string last = rocl_last_error();
  std::string msg = vformat(fmt, ap);
  const char *base = std::strrchr(file, '/');
  std::lock_guard lock(g_print_mu);
  std::fflush(stdout);
  std::fprintf(stderr, "%s %s at %s:%d\n    check: %s\n", kind, where().c_str(),
               base ? base + 1 : file, line, expr);
  if (!msg.empty()) std::fprintf(stderr, "    what:  %s\n", msg.c_str());
  std::fprintf(stderr, "    rocl_last_error(): \"%s\"\n", last.c_str());
  std::fflush(stderr);
}

}  // namespace

// ---- steps (read by the watchdog in main.cpp) -------------------------------

std::mutex g_step_mu;
std::string g_step[2];
Rank *g_ranks[2] = {nullptr, nullptr};
std::function<std::string()> g_status[2];

void register_rank(int rank, Rank *r) {
  std::lock_guard lock(g_step_mu);
  g_ranks[rank & 1] = r;
  g_step[rank & 1] = r != nullptr ? "starting" : "";
  g_status[rank & 1] = nullptr;
}

void set_status(std::function<std::string()> f) {
  std::lock_guard lock(g_step_mu);
  g_status[me().rank & 1] = std::move(f);
}

std::string describe_rank(int rank) {
  std::lock_guard lock(g_step_mu);
  if (g_ranks[rank & 1] == nullptr) return "";
  std::string s = "rank " + std::to_string(rank) + " of case '" + g_ranks[rank & 1]->case_name +
                  "' was at step: " + g_step[rank & 1];
  if (g_status[rank & 1]) s += "\n" + g_status[rank & 1]();
  return s;
}

Rank &me() {
  if (t_rank == nullptr) {
    std::fprintf(stderr, "conformance: harness used outside a rank\n");
    std::_Exit(2);
  }
  return *t_rank;
}
void set_me(Rank *r) {
  t_rank = r;
}

void fail(const char *file, int line, const char *expr, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report("FAIL", file, line, expr, fmt, ap);
  va_end(ap);
  std::_Exit(1);
}

void soft_fail(const char *file, int line, const char *expr, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report("FAIL (continuing)", file, line, expr, fmt, ap);
  va_end(ap);
  if (t_rank != nullptr) t_rank->soft_failures.fetch_add(1);
}

std::string rc_text(long long rc) {
  static const char *const kNames[] = {
      "ROCL_OK",    "ROCL_EINVAL",    "ROCL_ENOINIT",  "ROCL_ENOMEM",    "ROCL_EBADBUF",
      "ROCL_EBUSY", "ROCL_ETOOBIG",   "ROCL_EBADGID",  "ROCL_ETIMEDOUT", "ROCL_ENOTFOUND",
      "ROCL_EEND",  "ROCL_ENOSPC",    "ROCL_EDELETED", "ROCL_ECANCELED", "ROCL_EALREADY",
      "ROCL_EPEER", "ROCL_EINTERNAL", "ROCL_EEXIST"};
  char buf[160];
  if (rc <= 0 && rc >= -17) {
    std::snprintf(buf, sizeof buf, "%lld (%s)", rc, kNames[-rc]);
  } else {
    std::snprintf(buf, sizeof buf, "%lld", rc);
  }
  return buf;
}

void step(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  if (t_rank == nullptr) return;
  std::lock_guard lock(g_step_mu);
  g_step[t_rank->rank & 1] = s;
}

void note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  std::lock_guard lock(g_print_mu);
  if (t_rank != nullptr) {
    std::printf("%s rank %d: %s\n", t_rank->case_name.c_str(), t_rank->rank, s.c_str());
  } else {
    std::printf("%s\n", s.c_str());
  }
  std::fflush(stdout);
}

// ---- utilities ------------------------------------------------------------------

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

long rss_kib(const char *field) {
  FILE *f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long v = -1;
  const std::size_t n = std::strlen(field);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, field, n) == 0 && line[n] == ':') {
      v = std::strtol(line + n + 1, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return v;
}

std::string hex(rocl_gid_t gid) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(gid));
  return buf;
}

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  for (std::uint64_t v : {a, b, c, d}) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  return h;
}

namespace {
inline std::uint64_t xs(std::uint64_t &x) {
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x;
}
inline std::uint64_t seed_state(std::uint64_t seed) {
  std::uint64_t x = mix(seed, 0x5eed);
  return x != 0 ? x : 1;
}
}  // namespace

void fill_pattern(void *p, std::size_t n, std::uint64_t seed) {
  auto *c = static_cast<unsigned char *>(p);
  std::uint64_t x = seed_state(seed);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const std::uint64_t w = xs(x);
    std::memcpy(c + i, &w, 8);
  }
  if (i < n) {
    const std::uint64_t w = xs(x);
    std::memcpy(c + i, &w, n - i);
  }
}

long long check_pattern(const void *p, std::size_t n, std::uint64_t seed) {
  const auto *c = static_cast<const unsigned char *>(p);
  std::uint64_t x = seed_state(seed);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const std::uint64_t w = xs(x);
    if (std::memcmp(c + i, &w, 8) != 0) {
      for (std::size_t k = 0; k < 8; ++k) {
        const std::size_t at = i + k;  // summed as size_t, then widened
        if (c[at] != reinterpret_cast<const unsigned char *>(&w)[k])
          return static_cast<long long>(at);
      }
    }
  }
  if (i < n) {
    const std::uint64_t w = xs(x);
    for (std::size_t k = 0; i + k < n; ++k) {
      const std::size_t at = i + k;
      if (c[at] != reinterpret_cast<const unsigned char *>(&w)[k])
        return static_cast<long long>(at);
    }
  }
  return -1;
}

std::uint64_t checksum(const void *p, std::size_t n) {
  const auto *c = static_cast<const unsigned char *>(p);
  std::uint64_t h = 1469598103934665603ull ^ n;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, c + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

std::uint64_t Rng::next() {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t suite_seed() {
  const char *s = std::getenv("CONF_SEED");
  if (s != nullptr && *s != '\0') return std::strtoull(s, nullptr, 0);
  return 20240611;
}

// ---- attribute lists and resources --------------------------------------------------

Attrs::Attrs(int maxlen) : a_(rocl_new_attrl(maxlen)) {
  if (a_ == nullptr) fail(__FILE__, __LINE__, "rocl_new_attrl", "out of memory");
}
Attrs::~Attrs() {
  rocl_kill_attrl(a_);
}
Attrs &Attrs::add(const char *name, std::string_view value) {
  return add_raw(name, value.data(), static_cast<int>(value.size()));
}
Attrs &Attrs::add_raw(const char *name, const void *value, int len) {
  // A zero-length value still needs a non-NULL pointer to count as specified.
  static const char kEmpty = 0;
  CHECK_RC(rocl_add_attr(a_, name, value != nullptr ? value : &kEmpty, len), ROCL_OK);
  return *this;
}
Attrs &Attrs::ask(const char *name, int reserve) {
  CHECK_RC(rocl_add_attr(a_, name, nullptr, reserve), ROCL_OK);
  return *this;
}
std::optional<std::string> Attrs::get(const char *name) const {
  int len = 0;
  void *v = rocl_get_attr(a_, name, &len);
  if (v == nullptr) return std::nullopt;
  return std::string(static_cast<const char *>(v), static_cast<std::size_t>(len));
}

namespace {
void add_identity(Attrs &a, const char *name, int rank) {
  a.add("type", "conf");
  a.add("case", me().case_name);
  a.add("rank", std::to_string(rank));
  a.add("name", name);
}
}  // namespace

rocl_gid_t reg(const char *name, Attrs *extra) {
  Attrs own;
  Attrs &a = extra != nullptr ? *extra : own;
  add_identity(a, name, me().rank);
  const std::int64_t gid = rocl_register(a.get());
  CHECK(gid > 0, "rocl_register(%s) returned %s", name, rc_text(gid).c_str());
  static std::mutex mu;
  std::lock_guard lock(mu);
  me().owned.push_back(static_cast<rocl_gid_t>(gid));
  return static_cast<rocl_gid_t>(gid);
}

rocl_gid_t find(const char *name, int rank) {
  const double t0 = now_ms();
  for (;;) {
    Attrs q;
    add_identity(q, name, rank);
    rocl_gid_t gid = ROCL_NULL_GID;
    const int rc = rocl_query(&gid, q.get());
    if (rc == ROCL_OK) return gid;
    CHECK(rc == ROCL_ENOTFOUND, "rocl_query for %s of rank %d returned %s", name, rank,
          rc_text(rc).c_str());
    CHECK(now_ms() - t0 < kLongMs, "rank %d never registered '%s'", rank, name);
    usleep(2000);
  }
}

// ---- control channel ---------------------------------------------------------------

namespace {
constexpr int kBarrierTag = 0x7ffffff0;
}

void ctl_send(int tag, const void *p, std::size_t n) {
  Rank &r = me();
  CHECK_RC(rocl_send(r.ctl, r.peer_ctl, tag, const_cast<void *>(p), n), ROCL_OK);
}

std::vector<unsigned char> ctl_recv(int tag, int timeout_ms) {
  Rank &r = me();
  void *p = nullptr;
  std::size_t len = 0;
  const int rc = rocl_recv(r.ctl, r.peer_ctl, tag, &p, nullptr, nullptr, &len, timeout_ms);
  CHECK(rc == ROCL_OK, "control message %d from rank %d: rocl_recv returned %s", tag, r.peer(),
        rc_text(rc).c_str());
  const auto *c = static_cast<const unsigned char *>(p);
  std::vector<unsigned char> out(c, c + len);
  CHECK_RC(rocl_bfret(p), ROCL_OK);
  return out;
}

void barrier(const char *name) {
  step("barrier %s", name);
  ctl_send(kBarrierTag, name, std::strlen(name));
  std::vector<unsigned char> got = ctl_recv(kBarrierTag);
  std::string theirs(got.begin(), got.end());
  CHECK(theirs == name, "rank %d is at barrier '%s', this rank at '%s'", me().peer(),
        theirs.c_str(), name);
}

Msg recv_msg(rocl_gid_t dgid, rocl_gid_t ogid, int tag, int timeout_ms) {
  void *p = nullptr;
  std::size_t len = 0;
  Msg m;
  const int rc = rocl_recv(dgid, ogid, tag, &p, &m.origin, &m.tag, &len, timeout_ms);
  CHECK(rc == ROCL_OK, "rocl_recv(dgid %s, ogid %s, tag %d, %d ms) returned %s", hex(dgid).c_str(),
        hex(ogid).c_str(), tag, timeout_ms, rc_text(rc).c_str());
  m.data.assign(static_cast<const char *>(p), len);
  CHECK_RC(rocl_bfret(p), ROCL_OK);
  return m;
}

void send_text(rocl_gid_t ogid, rocl_gid_t dgid, int tag, std::string_view text) {
  const int rc = rocl_send(ogid, dgid, tag, const_cast<char *>(text.data()), text.size());
  CHECK(rc == ROCL_OK, "rocl_send(%s -> %s, tag %d, \"%.*s\") returned %s", hex(ogid).c_str(),
        hex(dgid).c_str(), tag, static_cast<int>(text.size()), text.data(), rc_text(rc).c_str());
}

// ---- helper processes -----------------------------------------------------------------

int spawn_self(const std::vector<std::string> &args, const std::vector<std::string> &env) {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  CHECK(n > 0, "readlink /proc/self/exe: %s", std::strerror(errno));
  exe[n] = '\0';
  std::vector<std::string> envs;
  for (char **e = environ; *e != nullptr; ++e) {
    std::string_view kv = *e;
    bool replaced = false;
    for (const std::string &x : env) {
      const auto eq = x.find('=');
      if (kv.substr(0, eq + 1) == std::string_view(x).substr(0, eq + 1)) replaced = true;
    }
    if (!replaced) envs.emplace_back(kv);
  }
  for (const std::string &x : env) envs.push_back(x);
  std::vector<char *> argv{exe}, envp;
  for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  for (std::string &e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, exe, nullptr, nullptr, argv.data(), envp.data());
  CHECK(rc == 0, "posix_spawn %s: %s", exe, std::strerror(rc));
  return pid;
}

int wait_child(int pid, int timeout_ms) {
  const double t0 = now_ms();
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    CHECK(w >= 0, "waitpid %d: %s", pid, std::strerror(errno));
    if (w == pid) return status;
    if (now_ms() - t0 > timeout_ms) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      fail(__FILE__, __LINE__, "wait_child", "helper process %d did not end within %d ms", pid,
           timeout_ms);
    }
    usleep(500);
  }
}

std::string describe_status(int status) {
  char buf[64];
  if (WIFEXITED(status)) {
    std::snprintf(buf, sizeof buf, "exited with status %d", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    std::snprintf(buf, sizeof buf, "killed by signal %d", WTERMSIG(status));
  } else {
    std::snprintf(buf, sizeof buf, "wait status %#x", status);
  }
  return buf;
}

}  // namespace conf
