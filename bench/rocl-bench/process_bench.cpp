// process_bench.cpp - see process_bench.hpp.
//
// Rank 0 and rank 1 talk over two kinds of resource pairs:
//   rank0/0 <-> rank1/0            commands, latency and bandwidth
//   rank0-pair/k <-> rank1-pair/k  the k-th pair of the rate benchmark
// On the first pair, besides the tags of bench_kernels.hpp:
//   kTagCommand  rank 0 -> 1: what to serve next (a Command)
//   kTagBye      rank 1 -> 0: the answer to kQuit
//   kTagFin      rank 0 -> 1: rank 0 got the bye; rank 1 may go
// The bye/fin exchange keeps rank 1 alive until rank 0 has everything
// (a process that exits may take unsent messages with it).
#include "process_bench.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench_kernels.hpp"
#include "check.hpp"
#include "rocl/rocl.h"
#include "threads.hpp"
#include "timing.hpp"

extern char **environ;

namespace rocl_bench {
namespace {

constexpr int kTagCommand = 10;
constexpr int kTagBye = 11;
constexpr int kTagFin = 12;

// Seconds a rank waits for the other's resources to appear in the directory.
constexpr double kFindTimeout = 30;

enum class Serve : std::uint32_t { kEcho = 1, kDrain = 2, kRate = 3, kQuit = 4 };

struct Command {
  std::uint32_t what;
  std::uint32_t pairs;  // kRate: how many pairs
};

struct ProcessBenchmark {
  const char *name;
  const char *summary;
};

const ProcessBenchmark kProcessBenchmarks[] = {
    {"latency",
     "ping-pong between two processes, one-way = round trip / 2: rank 0 sends a buffer "
     "(bftoret + send), rank 1 sends the received buffer straight back"},
    {"bandwidth",
     "one-way stream from rank 0 to rank 1: bfget + bftoret + send (the buffer is handed to "
     "the transport, no copy in rocl's core), the receiver recv + bfret, an ack every window; "
     "the sender does not rewrite the payload per message (its blocks were written once "
     "before), the transport moves every byte; 1 MB = 1e6 B"},
    {"rate",
     "message rate of 8 B messages, P sender threads in rank 0 -> P receiver threads in "
     "rank 1 (one resource pair each), an ack every window; total over all pairs"},
};

const char *summary_of(const std::string &name) {
  for (const auto &b : kProcessBenchmarks) {
    if (name == b.name) return b.summary;
  }
  return "";
}

std::string self_path() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) die("cannot find this executable (/proc/self/exe): %s", std::strerror(errno));
  path[n] = '\0';
  return path;
}

bool is_executable_file(const std::string &path) {
  return ::access(path.c_str(), X_OK) == 0;
}

bool selected(const ProcessRun &run, const char *name) {
  return std::find(run.benchmarks.begin(), run.benchmarks.end(), name) != run.benchmarks.end();
}

int most_pairs(const ProcessRun &run) {
  if (!selected(run, "rate") || run.options.pairs.empty()) return 0;
  return *std::max_element(run.options.pairs.begin(), run.options.pairs.end());
}

// Seconds roclrun allows the whole job: the watchdogs' sum, and a minute.
double job_time_limit(const ProcessRun &run) {
  const BenchOptions &o = run.options;
  double limit = 60;
  if (selected(run, "latency")) limit += time_limit(o, o.sizes.size() + 1);
  if (selected(run, "bandwidth")) {
    limit += time_limit(o, bandwidth_sizes(o).size() * (o.touch ? 2 : 1));
  }
  if (selected(run, "rate")) {
    limit +=
        time_limit(o, 1) * static_cast<double>(o.pairs.size() * static_cast<std::size_t>(o.reps));
  }
  return limit;
}

// The rank's command line after "<this executable>".
std::vector<std::string> rank_arguments(const ProcessRun &run, const std::string &rows_out) {
  const BenchOptions &o = run.options;
  std::vector<std::string> args(run.benchmarks.begin(), run.benchmarks.end());
  char seconds[64];
  std::snprintf(seconds, sizeof seconds, "%.17g", o.seconds);
  const std::pair<const char *, std::string> options[] = {
      {"--sizes", join_sizes(o.sizes)},
      {"--bandwidth-sizes", join_sizes(bandwidth_sizes(o))},
      {"--pairs", join_ints(o.pairs)},
      {"--reps", std::to_string(o.reps)},
      {"--time", seconds},
      {"--window", std::to_string(o.window)},
      {"--process-rank", run.transport},
      {"--rows-out", rows_out},
  };
  for (const auto &[name, value] : options) {
    args.emplace_back(name);
    args.push_back(value);
  }
  args.emplace_back(o.placement.pin ? "--cpu-pin" : "--no-cpu-pin");
  if (o.touch) args.emplace_back("--touch");
  return args;
}

// Starts argv with ROCL_TRANSPORTS=transport and waits for it. Returns its
// wait status, or -1 (errno set) if it could not be started. SIGINT is
// ignored meanwhile: a Ctrl-C reaches roclrun too, which stops its job and
// exits 130, and we then clean up.
int spawn_and_wait(const std::vector<std::string> &argv, const std::string &transport) {
  std::vector<std::string> env_text;
  for (char **e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "ROCL_TRANSPORTS=", 16) != 0) env_text.emplace_back(*e);
  }
  env_text.push_back("ROCL_TRANSPORTS=" + transport);
  std::vector<char *> envp, args;
  for (auto &s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto &s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  struct sigaction ignore;
  struct sigaction old;
  std::memset(&ignore, 0, sizeof ignore);
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], nullptr, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  int status = -1;
  if (rc != 0) {
    errno = rc;
  } else {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  sigaction(SIGINT, &old, nullptr);
  return status;
}

// ---- the ranks -----------------------------------------------------------------

// This rank's resources and the other rank's gids.
struct Link {
  Link(int rank, int pairs) : rank(rank), self(rank == 0 ? "rank0" : "rank1", 0) {
    const char *pair_role = rank == 0 ? "rank0-pair" : "rank1-pair";
    for (int k = 0; k < pairs; ++k) pair_self.emplace_back(pair_role, k);
    peer = BenchResource::find(rank == 0 ? "rank1" : "rank0", 0, kFindTimeout);
    for (int k = 0; k < pairs; ++k) {
      pair_peer.push_back(
          BenchResource::find(rank == 0 ? "rank1-pair" : "rank0-pair", k, kFindTimeout));
    }
  }
  int rank;
  BenchResource self;
  rocl_gid_t peer = ROCL_NULL_GID;
  std::vector<BenchResource> pair_self;
  std::vector<rocl_gid_t> pair_peer;
};

bool pin_this_process(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::sched_setaffinity(0, sizeof set, &set) == 0;
}

void command(const Link &link, Serve what, int pairs = 0) {
  Command c{static_cast<std::uint32_t>(what), static_cast<std::uint32_t>(pairs)};
  check(rocl_send(link.self.gid(), link.peer, kTagCommand, &c, sizeof c), "rocl_send (command)");
}

// Runs fn on a thread of its own (inheriting the rank's cpu) with the
// watchdog of run_threads: a lost message ends the run naming `what`.
void watched(const char *what, const std::function<void()> &fn, double limit) {
  run_threads(what, {fn}, {-1}, limit);
}

std::vector<Row> drive_latency(const Link &link, const ProcessRun &run) {
  const BenchOptions &o = run.options;
  const std::string name = run.transport + "-latency";
  std::printf("  warm-up and calibration, then %d rep(s) of ~%.2g s per size\n", o.reps, o.seconds);
  std::fflush(stdout);
  std::vector<Row> rows;
  command(link, Serve::kEcho);
  watched(
      name.c_str(),
      [&] {
        // The processes have just started (cold caches, idle cpus clocked
        // down, connections not made yet): an untimed ping-pong first.
        BenchOptions warm_up = o;
        warm_up.reps = 1;
        warm_up.seconds = std::min(o.seconds, 0.05);
        ping(link.self.gid(), link.peer, 8, warm_up);
        for (std::size_t size : o.sizes) {
          LatencyPoint p = ping(link.self.gid(), link.peer, size, o);
          rows.push_back(summarize(name, size, 1, std::move(p.one_way_us), "us"));
          print_point(rows.back());
        }
        send_stop(link.self.gid(), link.peer);
      },
      time_limit(o, o.sizes.size() + 1));
  return rows;
}

// A block whose pages were never written reads as the kernel's zero page,
// and copying that costs less than copying memory. The sender never writes
// its payload (as osu_bw never rewrites its buffer), so before a stream it
// writes once the blocks the stream will cycle through.
void prefault(std::size_t size, int window) {
  std::vector<void *> buffers;
  for (int i = 0; i < window; ++i) {
    void *b = check_buffer(rocl_bfget(size), "rocl_bfget");
    std::memset(b, 0x5a, size);
    buffers.push_back(b);
  }
  for (void *b : buffers) check(rocl_bfret(b), "rocl_bfret");
}

std::vector<Row> drive_bandwidth(const Link &link, const ProcessRun &run) {
  const BenchOptions &o = run.options;
  const std::vector<std::size_t> &sizes = bandwidth_sizes(o);
  std::printf("  %s\n", describe_window(o.window, sizes).c_str());
  std::fflush(stdout);
  std::vector<bool> modes{false};
  if (o.touch) modes.push_back(true);
  std::vector<Row> rows;
  command(link, Serve::kDrain);
  const rocl_gid_t self = link.self.gid(), peer = link.peer;
  watched((run.transport + "-bandwidth").c_str(),
          [&] {
            for (bool touch : modes) {
              const std::string name = run.transport + (touch ? "-bandwidth-touch" : "-bandwidth");
              for (std::size_t size : sizes) {
                const int window = window_for(size, o.window);
                prefault(size, window);
                send_config(self, peer, window, touch);
                stream(self, peer, size, window, touch, o.seconds / 10);  // warm-up
                std::vector<double> megabytes, messages;
                for (int rep = 0; rep < o.reps; ++rep) {
                  StreamCount c = stream(self, peer, size, window, touch, o.seconds);
                  const double per_second = static_cast<double>(c.messages) / c.seconds;
                  megabytes.push_back(per_second * static_cast<double>(size) / 1e6);
                  messages.push_back(per_second);
                }
                rows.push_back(summarize(name, size, 1, std::move(megabytes), "MB/s"));
                print_point(rows.back());
                rows.push_back(summarize(name, size, 1, std::move(messages), "msg/s"));
              }
            }
            send_stop(self, peer);
          },
          time_limit(o, sizes.size() * modes.size()));
  return rows;
}

// One repetition with `pairs` pairs: total M messages per second over all.
double rate_once(const Link &link, int pairs, const BenchOptions &o) {
  const int window = window_for(8, o.window);
  std::barrier start(pairs);
  std::vector<StreamCount> counts(static_cast<std::size_t>(pairs));
  std::vector<std::function<void()>> tasks;
  std::vector<int> cpus;
  command(link, Serve::kRate, pairs);
  for (int k = 0; k < pairs; ++k) {
    const auto i = static_cast<std::size_t>(k);
    const rocl_gid_t s = link.pair_self[i].gid();
    const rocl_gid_t r = link.pair_peer[i];
    tasks.emplace_back([&, i, s, r] {
      send_config(s, r, window, false);
      stream(s, r, 8, window, false, 0);  // warm-up: one window
      start.arrive_and_wait();
      counts[i] = stream(s, r, 8, window, false, o.seconds);
      send_stop(s, r);
    });
    cpus.push_back(o.placement.cpu_for(2 * k));
  }
  run_threads("rate (senders)", tasks, cpus, time_limit(o, 1));
  return total_rate(counts);
}

std::vector<Row> drive_rate(const Link &link, const ProcessRun &run) {
  const BenchOptions &o = run.options;
  std::string where;
  for (int k = 0; k < most_pairs(run) && o.placement.cpu_for(0) >= 0; ++k) {
    if (k > 0) where += ", ";
    where += std::to_string(k) + ": cpu " + std::to_string(o.placement.cpu_for(2 * k)) + "->" +
             std::to_string(o.placement.cpu_for(2 * k + 1));
  }
  std::printf(
      "  window %d; %s\n", window_for(8, o.window),
      where.empty() ? "threads not pinned" : ("pairs pinned (sender->receiver) " + where).c_str());
  if (2 * static_cast<std::size_t>(most_pairs(run)) > o.placement.cpus.size()) {
    std::printf(
        "  note: %d pairs are %d threads on %zu cpus: threads of a rank take turns on "
        "its cpu\n",
        most_pairs(run), 2 * most_pairs(run), o.placement.cpus.size());
  }
  std::fflush(stdout);
  std::vector<Row> rows;
  for (int pairs : o.pairs) {
    std::vector<double> samples;
    for (int rep = 0; rep < o.reps; ++rep) samples.push_back(rate_once(link, pairs, o));
    rows.push_back(summarize(run.transport + "-rate", 8, pairs, std::move(samples), "M msg/s"));
    print_point(rows.back());
  }
  return rows;
}

int drive(const Link &link, const ProcessRun &run, const std::string &rows_out) {
  Report report;
  for (const auto &b : kProcessBenchmarks) {
    if (!selected(run, b.name)) continue;
    std::printf("\n[%s-%s] %s\n", run.transport.c_str(), b.name, summary_of(b.name));
    std::fflush(stdout);
    const std::string name = b.name;
    if (name == "latency") report.add(drive_latency(link, run));
    if (name == "bandwidth") report.add(drive_bandwidth(link, run));
    if (name == "rate") report.add(drive_rate(link, run));
    // After each benchmark: if a later one fails, the parent still has these.
    if (!report.write_csv(rows_out)) {
      die("cannot write %s: %s", rows_out.c_str(), std::strerror(errno));
    }
  }
  command(link, Serve::kQuit);
  void *bye = nullptr;
  check(rocl_recv(link.self.gid(), link.peer, kTagBye, &bye, nullptr, nullptr, nullptr, 60'000),
        "rocl_recv (bye)");
  check(rocl_bfret(bye), "rocl_bfret");
  check(rocl_send(link.self.gid(), link.peer, kTagFin, nullptr, 0), "rocl_send (fin)");
  return 0;
}

int serve(const Link &link, const ProcessRun &run) {
  const BenchOptions &o = run.options;
  const rocl_gid_t self = link.self.gid(), peer = link.peer;
  for (;;) {
    void *p = nullptr;
    std::size_t len = 0;
    check(rocl_recv(self, peer, kTagCommand, &p, nullptr, nullptr, &len, -1),
          "rocl_recv (command)");
    Command c{};
    if (len != sizeof c) die("rank 1: a command of %zu bytes", len);
    std::memcpy(&c, p, sizeof c);
    check(rocl_bfret(p), "rocl_bfret");
    switch (static_cast<Serve>(c.what)) {
      case Serve::kEcho:
        echo(self, peer);
        break;
      case Serve::kDrain:
        drain(self, peer);
        break;
      case Serve::kRate: {
        if (c.pairs < 1 || c.pairs > link.pair_self.size())
          die("rank 1: rate with %u pairs", c.pairs);
        std::vector<std::function<void()>> tasks;
        std::vector<int> cpus;
        for (std::size_t k = 0; k < c.pairs; ++k) {
          const rocl_gid_t r = link.pair_self[k].gid(), s = link.pair_peer[k];
          tasks.emplace_back([r, s] { drain(r, s); });
          cpus.push_back(o.placement.cpu_for(static_cast<int>(2 * k + 1)));
        }
        run_threads("rate (receivers)", tasks, cpus, time_limit(o, 1));
        break;
      }
      case Serve::kQuit: {
        check(rocl_send(self, peer, kTagBye, nullptr, 0), "rocl_send (bye)");
        // Rank 0 answers once it has the bye; if it is already gone (its
        // fin lost with it) that is fine too.
        const int rc = rocl_recv(self, peer, kTagFin, &p, nullptr, nullptr, nullptr, 10'000);
        if (rc == ROCL_OK) check(rocl_bfret(p), "rocl_bfret");
        if (rc != ROCL_OK && rc != ROCL_EPEER && rc != ROCL_ETIMEDOUT)
          die_rocl("rocl_recv (fin)", rc);
        return 0;
      }
      default:
        die("rank 1: unknown command %u", c.what);
    }
  }
}

int env_int(const char *name) {
  const char *text = std::getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  char *end = nullptr;
  const long v = std::strtol(text, &end, 10);
  return *end == '\0' && v >= 0 && v <= INT_MAX ? static_cast<int>(v) : -1;
}

}  // namespace

bool is_process_transport(std::string_view name) {
  return name == "shm" || name == "tcp" || name == "ucx";
}

bool is_process_benchmark(std::string_view name) {
  for (const auto &b : kProcessBenchmarks) {
    if (name == b.name) return true;
  }
  return false;
}

std::string locate_roclrun() {
  if (const char *env = std::getenv("ROCLRUN"); env != nullptr && *env != '\0') {
    return is_executable_file(env) ? env : "";
  }
  const std::string self = self_path();
  const std::string dir = self.substr(0, self.rfind('/'));
  // <build>/bench/rocl-bench/rocl-bench finds <build>/tools/roclrun/roclrun.
  for (const std::string &path : {dir + "/roclrun", dir + "/../../tools/roclrun/roclrun"}) {
    if (is_executable_file(path)) return path;
  }
  if (const char *path_env = std::getenv("PATH")) {
    std::string_view rest = path_env;
    while (true) {
      const std::size_t colon = rest.find(':');
      std::string candidate(rest.substr(0, colon));
      if (candidate.empty()) candidate.push_back('.');  // an empty entry is the current folder
      candidate += "/roclrun";
      if (is_executable_file(candidate)) return candidate;
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return "";
}

std::string roclrun_not_found() {
  const char *env = std::getenv("ROCLRUN");
  if (env != nullptr && *env != '\0') {
    return std::string("ROCLRUN=") + env + " is not an executable file";
  }
  return "cannot find roclrun (looked next to rocl-bench, in ../../tools/roclrun/ from it and "
         "in PATH): build it (ninja roclrun), or give --roclrun PATH or ROCLRUN=PATH";
}

std::string find_roclrun(const std::string &explicit_path) {
  if (!explicit_path.empty()) {
    if (!is_executable_file(explicit_path)) {
      die("--roclrun %s: not an executable file", explicit_path.c_str());
    }
    return explicit_path;
  }
  const std::string found = locate_roclrun();
  if (!found.empty()) return found;
  die("%s", roclrun_not_found().c_str());
}

bool run_in_processes(const ProcessRun &run, std::vector<Row> &rows) {
  const BenchOptions &o = run.options;
  const std::string roclrun = run.roclrun.empty() ? find_roclrun("") : run.roclrun;
  const char *tmp = std::getenv("TMPDIR");
  std::string rows_out =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/rocl-bench-rows-XXXXXX";
  const int fd = ::mkstemp(rows_out.data());
  if (fd < 0) die("cannot make a temporary file %s: %s", rows_out.c_str(), std::strerror(errno));
  ::close(fd);

  const double limit = job_time_limit(run);
  char limit_text[32];
  std::snprintf(limit_text, sizeof limit_text, "%.0f", limit);
  std::vector<std::string> argv = {roclrun, "--timeout", limit_text, "-n", "2", self_path()};
  for (auto &a : rank_arguments(run, rows_out)) argv.push_back(std::move(a));

  std::printf("\n== two processes over %s: ROCL_TRANSPORTS=%s %s -n 2 rocl-bench ...\n",
              run.transport.c_str(), run.transport.c_str(), roclrun.c_str());
  if (o.placement.cpu_for(0) >= 0) {
    std::printf(
        "   rank 0 pinned to cpu %d, rank 1 to cpu %d (sched_setaffinity: the whole "
        "process, rocl's threads too)\n",
        o.placement.cpu_for(0), o.placement.cpu_for(1));
  } else {
    std::printf("   ranks not pinned\n");
  }
  const int status = spawn_and_wait(argv, run.transport);
  const bool job_ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  Report back;
  const bool read_ok = back.read_csv(rows_out);
  const int read_errno = errno;
  rows = back.rows();  // on failure: the benchmarks that finished before
  if (status == -1) {
    std::fprintf(stderr, "rocl-bench: cannot start %s: %s\n", roclrun.c_str(),
                 std::strerror(errno));
  } else if (job_ok && !read_ok) {
    std::fprintf(stderr, "rocl-bench: cannot read the rows of the %s run from %s: %s\n",
                 run.transport.c_str(), rows_out.c_str(), std::strerror(read_errno));
  } else if (WIFEXITED(status) && !job_ok) {
    const int code = WEXITSTATUS(status);
    std::fprintf(stderr, "rocl-bench: the %s run failed: roclrun exited with status %d%s\n",
                 run.transport.c_str(), code,
                 code == 124   ? " (it stopped the job after its --timeout: a lost message?)"
                 : code == 130 ? " (interrupted)"
                               : "");
  } else if (!job_ok) {
    std::fprintf(stderr, "rocl-bench: the %s run failed: roclrun was killed by signal %d\n",
                 run.transport.c_str(), WTERMSIG(status));
  }
  const bool ok = job_ok && read_ok;
  ::unlink(rows_out.c_str());
  return ok;
}

int process_rank_main(const ProcessRun &run, const std::string &rows_out) {
  const int rank = env_int("ROCL_RANK");
  if (rank < 0 || rank > 1 || env_int("ROCL_SIZE") != 2 || rows_out.empty()) {
    die("--process-rank is rocl-bench's own: it runs it under roclrun -n 2 (use --transport)");
  }
  const BenchOptions &o = run.options;
  const int cpu = o.placement.cpu_for(rank);
  if (cpu >= 0 && !pin_this_process(cpu)) {
    std::fprintf(stderr,
                 "rocl-bench: warning: cannot pin rank %d to cpu %d (%s); running unpinned\n", rank,
                 cpu, std::strerror(errno));
  }
  check(rocl_init(), "rocl_init");
  if (rank == 0) {
    std::printf("rocl options in force in both ranks:\n");
    std::fflush(stdout);
    rocl_print_options(stdout);
    std::fflush(stdout);
  }
  int status = 0;
  {
    Link link(rank, most_pairs(run));
    status = rank == 0 ? drive(link, run, rows_out) : serve(link, run);
  }
  check(rocl_exit(), "rocl_exit");
  return status;
}

}  // namespace rocl_bench
