// harness.hpp - the small test harness of the cross-process conformance
// suite (see main.cpp for how it runs).
//
// A case is a function run once per rank, rank 0 and rank 1. The ranks are
// either two processes under roclrun (ROCL_RANK 0 and 1, one job directory,
// the transport chosen by ROCL_TRANSPORTS) or, with --threads, two threads of
// one process sharing its context (the in-process hand-off). The case code is
// the same both ways: the ranks find each other through the directory and
// talk over a control channel (one "ctl" resource per rank) that is itself
// plain rocl messaging.
//
// Checks: CHECK(cond, fmt...) and CHECK_RC(expr, want) stop the process at
// the first failure, printing the case, the rank, the place, the expression
// and rocl_last_error() (exit status 1). EXPECT / EXPECT_RC record the
// failure and go on; the rank fails at the end of the case. A watchdog ends
// the process (exit status 3) with the step each rank was in when a case
// takes longer than --deadline seconds, so nothing can hang silently.
#pragma once

#include <rocl/rocl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conf {

// Receives that must succeed wait this long before the case fails (less
// than any case's deadline, so a lost message is reported by the receive
// that missed it rather than by the watchdog).
inline constexpr int kLongMs = 15000;

struct Rank {
  int rank = 0;           // 0 or 1
  bool threaded = false;  // both ranks are threads of one process
  std::string case_name;
  rocl_gid_t ctl = ROCL_NULL_GID;       // this rank's control resource
  rocl_gid_t peer_ctl = ROCL_NULL_GID;  // the other rank's
  std::vector<rocl_gid_t> owned;        // resources deleted at the end of the case
  std::atomic<int> soft_failures{0};    // EXPECT failures
  int peer() const { return 1 - rank; }
};

// The rank the calling thread works for (set by the runner, and by
// RankScope in the threads a case starts).
Rank &me();
void set_me(Rank *r);
struct RankScope {
  explicit RankScope(Rank &r) { set_me(&r); }
  ~RankScope() { set_me(nullptr); }
};

[[noreturn]] void fail(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void soft_fail(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
std::string rc_text(long long rc);  // "-7 (ROCL_EBADGID: ...)"

// What the rank is doing now (shown by the watchdog), and a progress line.
void step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// A case may add detail for the watchdog (e.g. per-thread progress); it is
// called from the watchdog thread, so it must only read atomics. Cleared at
// the end of the case.
void set_status(std::function<std::string()> f);
// For the watchdog: the step and status of rank `rank` if it runs in this
// process ("" otherwise).
std::string describe_rank(int rank);
void register_rank(int rank, Rank *r);
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

double now_ms();                  // steady clock (CLOCK_MONOTONIC: one per machine)
long rss_kib(const char *field);  // "VmRSS", "VmHWM" from /proc/self/status; -1 if unknown
std::string hex(rocl_gid_t gid);  // "%#llx", as rocl's error sentences print gids
bool contains(std::string_view hay, std::string_view needle);

// Deterministic payloads: a xorshift stream seeded by `seed`. check_pattern
// returns the first differing offset, or -1 if the bytes match.
void fill_pattern(void *p, std::size_t n, std::uint64_t seed);
long long check_pattern(const void *p, std::size_t n, std::uint64_t seed);
std::uint64_t checksum(const void *p, std::size_t n);  // FNV-1a over 64-bit words
std::uint64_t mix(std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0, std::uint64_t d = 0);

struct Rng {  // splitmix64: same sequence on every machine
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed) {}
  std::uint64_t next();
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
};
std::uint64_t suite_seed();  // CONF_SEED or a fixed default

// An attribute list owned by the test.
class Attrs {
 public:
  explicit Attrs(int maxlen = 0);
  ~Attrs();
  Attrs(const Attrs &) = delete;
  Attrs &operator=(const Attrs &) = delete;
  Attrs &add(const char *name, std::string_view value);
  Attrs &add_raw(const char *name, const void *value, int len);
  Attrs &ask(const char *name, int reserve);  // unspecified value
  std::optional<std::string> get(const char *name) const;
  rocl_attrl_t *get() const { return a_; }

 private:
  rocl_attrl_t *a_;
};

// Registers {type=conf, case=<case>, rank=<rank>, name=<name>} (+ extra
// attributes added to `extra` first). The resource is deleted at the end of
// the case if it still exists.
rocl_gid_t reg(const char *name, Attrs *extra = nullptr);
// Finds the resource that rank `rank` registered as `name` (polls the
// directory until it appears, at most kLongMs).
rocl_gid_t find(const char *name, int rank);

// Control channel between the two ranks (tags below kCtlTagLimit).
void ctl_send(int tag, const void *p, std::size_t n);
std::vector<unsigned char> ctl_recv(int tag, int timeout_ms = kLongMs);
template <class T>
void ctl_send_value(int tag, const T &v) {
  ctl_send(tag, &v, sizeof v);
}
template <class T>
T ctl_recv_value(int tag) {
  std::vector<unsigned char> b = ctl_recv(tag);
  T v{};
  if (b.size() != sizeof v) fail(__FILE__, __LINE__, "ctl_recv_value", "size %zu", b.size());
  std::memcpy(&v, b.data(), sizeof v);
  return v;
}
// Both ranks reach the barrier named `name` (names are compared).
void barrier(const char *name);

// Receives one message and returns its bytes (copied; the buffer returned).
struct Msg {
  rocl_gid_t origin = 0;
  int tag = -1;
  std::string data;
};
Msg recv_msg(rocl_gid_t dgid, rocl_gid_t ogid, int tag, int timeout_ms = kLongMs);
void send_text(rocl_gid_t ogid, rocl_gid_t dgid, int tag, std::string_view text);

// Starts a helper process: this executable with argv {exe, args...} and the
// environment of this process plus `env` ("NAME=value"; replacing). Returns
// its pid.
int spawn_self(const std::vector<std::string> &args, const std::vector<std::string> &env);
// Waits for pid; returns the wait status. Fails the case after timeout_ms.
int wait_child(int pid, int timeout_ms);
std::string describe_status(int status);

}  // namespace conf

#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) ::conf::fail(__FILE__, __LINE__, #cond, "" __VA_ARGS__); \
  } while (0)

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) ::conf::soft_fail(__FILE__, __LINE__, #cond, "" __VA_ARGS__); \
  } while (0)

#define CHECK_RC(expr, want)                                                     \
  do {                                                                           \
    const long long rc_ = static_cast<long long>(expr);                          \
    if (rc_ != static_cast<long long>(want))                                     \
      ::conf::fail(__FILE__, __LINE__, #expr, "returned %s, expected %s",        \
                   ::conf::rc_text(rc_).c_str(), ::conf::rc_text(want).c_str()); \
  } while (0)

#define EXPECT_RC(expr, want)                                                         \
  do {                                                                                \
    const long long rc_ = static_cast<long long>(expr);                               \
    if (rc_ != static_cast<long long>(want))                                          \
      ::conf::soft_fail(__FILE__, __LINE__, #expr, "returned %s, expected %s",        \
                        ::conf::rc_text(rc_).c_str(), ::conf::rc_text(want).c_str()); \
  } while (0)
