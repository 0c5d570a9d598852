// soak.cpp - the soak test's program (soak_test.sh runs it under roclrun on
// the test hosts: docs/testing.md, "Soak"). Every process of the job runs
// T threads, each a rocl resource {type=soak, id=<rank>.<thread>}; together
// they send M data messages of random sizes (90 % up to 1 KiB, 9 % up to
// 64 KiB, 1 % up to the largest size), each thread its share, each message
// to a random other thread of the job (shm within a host, tcp between
// hosts), in four ways (a pool buffer handed over or kept, the sender's
// memory copied or lent). Receivers check every pair's sequence numbers
// (exactly once, in order), each message's length, flags and bytes, and
// at the end that they got as many as each sender says it sent.
//
// Each process samples its resident memory every second (printed) and
// fails if, after the warm-up, it grows (RssMonitor in soak.hpp says what
// is judged and why): the highest sample of the last 20 % of the traffic
// above the highest from 20 % to 80 % by more than --rss-margin (10 % and
// 16 MiB). After rocl_exit it must have the file descriptors and threads
// it had before rocl_init, and its pool must have had every block back
// before.
//
//   soak [--messages M] [--max-size BYTES] [--threads T] [--seed S]
//        [--window W] [--stall-s S] [--rss-margin PCT,MIB]
// (or SOAK_MESSAGES, SOAK_MAX_SIZE, SOAK_THREADS; the command line wins).
// Every process of the job must be given the same. Prints a line
// "soak rank R: done: key=value ..." and exits 0 on success, 1 on a
// failure (each said on stderr), 2 on a bad command line.
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <rocl/rocl.hpp>

#include "soak.hpp"

namespace soak {

namespace {

int g_rank = 0;

constexpr const char *kUsage =
    "soak [--messages M] [--max-size BYTES] [--threads T] [--seed S] [--window W] "
    "[--stall-s S] [--rss-margin PCT,MIB]";

[[noreturn]] void bad_usage(const std::string &what) {
  std::fprintf(stderr, "soak: %s (usage: %s)\n", what.c_str(), kUsage);
  std::exit(2);
}

// A count with an optional K, M or G (powers of 1024; 1e7 style allowed).
long long parse_count(const std::string &name, const char *text) {
  char *end = nullptr;
  const double v = std::strtod(text, &end);
  double scale = 1;
  if (*end == 'K' || *end == 'k') scale = 1024, ++end;
  if (*end == 'M' || *end == 'm') scale = 1024.0 * 1024, ++end;
  if (*end == 'G' || *end == 'g') scale = 1024.0 * 1024 * 1024, ++end;
  if (end == text || *end != '\0' || v * scale < 1 || v * scale > 1e15)
    bad_usage("bad " + name + " '" + text + "'");
  return static_cast<long long>(v * scale);
}

void apply(Config &c, const std::string &name, const char *value) {
  if (name == "--messages") {
    c.messages = parse_count(name, value);
  } else if (name == "--max-size") {
    c.max_size = static_cast<std::size_t>(parse_count(name, value));
  } else if (name == "--threads") {
    c.threads = static_cast<int>(parse_count(name, value));
  } else if (name == "--seed") {
    c.seed = static_cast<std::uint64_t>(parse_count(name, value));
  } else if (name == "--window") {
    c.window = static_cast<int>(parse_count(name, value));
  } else if (name == "--stall-s") {
    c.stall_ms = 1000 * parse_count(name, value);
  } else if (name == "--rss-margin") {
    double pct = 0, mib = 0;
    if (std::sscanf(value, "%lf,%lf", &pct, &mib) != 2 || pct < 0 || mib < 0)
      bad_usage("bad --rss-margin '" + std::string(value) + "' (PCT,MIB)");
    c.rss_ratio = pct / 100;
    c.rss_slack = static_cast<std::size_t>(mib * 1024 * 1024);
  } else {
    bad_usage("unknown option '" + name + "'");
  }
}

Config parse_options(int argc, char **argv) {
  Config c;
  const std::pair<const char *, const char *> from_env[] = {{"SOAK_MESSAGES", "--messages"},
                                                            {"SOAK_MAX_SIZE", "--max-size"},
                                                            {"SOAK_THREADS", "--threads"}};
  for (const auto &[var, name] : from_env) {
    const char *v = std::getenv(var);
    if (v != nullptr && *v != '\0') apply(c, name, v);
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf("usage: %s\n(docs/testing.md, \"Soak\", says what each means)\n", kUsage);
      std::exit(0);
    }
    const auto eq = arg.find('=');
    if (eq != std::string::npos) {
      apply(c, arg.substr(0, eq), arg.c_str() + eq + 1);
    } else if (i + 1 < argc) {
      apply(c, arg, argv[++i]);
    } else {
      bad_usage("'" + arg + "' needs a value");
    }
  }
  if (c.threads > 256) bad_usage("at most 256 threads");
  if (c.window < 2) bad_usage("the window must be at least 2");
  return c;
}

long env_long(const char *name, long fallback) {
  const char *v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atol(v) : fallback;
}

std::vector<rocl_gid_t> register_threads(int rank, int threads) {
  std::vector<rocl_gid_t> mine;
  for (int t = 0; t < threads; ++t) {
    const std::string id = std::to_string(rank) + "." + std::to_string(t);
    rocl_attrl_t *a = rocl_new_attrl(0);
    rocl_add_attr(a, "type", "soak", 4);
    rocl_add_attr(a, "id", id.data(), static_cast<int>(id.size()));
    const std::int64_t gid = rocl_register(a);
    rocl_kill_attrl(a);
    if (gid <= 0) die(std::string("rocl_register: ") + rocl_last_error());
    mine.push_back(static_cast<rocl_gid_t>(gid));
  }
  return mine;
}

// Waits for every thread of the job to be registered.
Peers find_everyone(int processes, int threads) {
  const int everyone = processes * threads;
  Peers peers;
  peers.gid.assign(static_cast<std::size_t>(everyone), ROCL_NULL_GID);
  const auto all = rocl::query_wait(rocl::Attributes{{"type", "soak"}}.ask("id", 16), everyone,
                                    std::chrono::seconds(120));
  for (const auto &f : all) {
    const std::string id = f.attributes.get("id").value_or("");
    int r = -1, t = -1;
    if (std::sscanf(id.c_str(), "%d.%d", &r, &t) != 2 || r < 0 || r >= processes || t < 0 ||
        t >= threads)
      die("a soak resource with id '" + id + "': is every process given the same --threads?");
    const std::size_t index = static_cast<std::size_t>(r) * static_cast<std::size_t>(threads) +
                              static_cast<std::size_t>(t);
    if (peers.gid[index] != ROCL_NULL_GID) die("two soak resources with id " + id);
    peers.gid[index] = f.gid;
    peers.index[f.gid] = static_cast<int>(index);
  }
  if (static_cast<int>(all.size()) != everyone)
    die(std::to_string(all.size()) + " soak resources, not " + std::to_string(everyone));
  return peers;
}

// Runs the threads' traffic; its length in seconds.
double run_traffic(const Config &config, const Peers &peers, RssMonitor &monitor, Totals &totals) {
  std::vector<ThreadMemory> memory;
  memory.reserve(static_cast<std::size_t>(config.threads));
  for (int t = 0; t < config.threads; ++t) memory.emplace_back(config.max_size);
  monitor.traffic_started();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(config.threads));
  for (int t = 0; t < config.threads; ++t) {
    workers.emplace_back(run_worker, std::cref(config), std::cref(peers),
                         g_rank * config.threads + t, std::ref(totals),
                         std::ref(memory[static_cast<std::size_t>(t)]));
  }
  for (auto &w : workers) w.join();
  monitor.traffic_ended();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Waits up to 10 s for the pool to have every block back that the traffic
// took (a block may still carry one of our last messages to a peer).
void check_pool_back(const rocl_pool_stats_t &base, Totals &totals) {
  rocl_pool_stats_t now{};
  for (int i = 0; i < 1000; ++i) {
    rocl_pool_stats(&now);
    if (now.in_use_buffers <= base.in_use_buffers) return;
    usleep(10000);
  }
  report(totals, "the pool has " + std::to_string(now.in_use_buffers - base.in_use_buffers) +
                     " blocks (" + std::to_string(now.in_use_bytes - base.in_use_bytes) +
                     " B) more in use than before the traffic, 10 s after it");
}

// What the last line says.
struct Figures {
  double seconds = 0;
  long rss_start = 0, rss_traffic = 0, rss_traffic_end = 0, rss_exit = 0;
  std::size_t fds[2] = {0, 0}, threads[2] = {0, 0};  // before rocl_init, after rocl_exit
  Links links;                                       // at the traffic's end
};

double mib(long kib) {
  return static_cast<double>(kib) / 1024;
}

void say_trend(const Config &config, const char *what, const RssMonitor::Trend &t, Totals &totals) {
  std::printf("soak rank %d: %s: %.1f MiB from 20 to 80 %% of the traffic, %.1f MiB after: %s\n",
              g_rank, what, mib(t.reference_kib), mib(t.last_kib), t.flat ? "flat" : "GREW");
  if (!t.flat) {
    report(totals, std::string(what) + " grew beyond " +
                       std::to_string(static_cast<int>(config.rss_ratio * 100)) + " % and " +
                       std::to_string(config.rss_slack >> 20) + " MiB after the warm-up");
  }
}

void say_verdict(const Config &config, const RssMonitor::Verdict &v, Totals &totals) {
  if (!v.judged) {
    std::printf("soak rank %d: memory not judged: traffic under 10 s (%d samples)\n", g_rank,
                v.samples);
    return;
  }
  say_trend(config, "resident memory outside the pools", v.outside, totals);
  say_trend(config, "the pool's reserved bytes", v.reserved, totals);
}

}  // namespace

void report(Totals &totals, const std::string &what) {
  if (totals.failures.fetch_add(1) < 20) {
    std::fprintf(stderr, "soak rank %d: FAILED: %s\n", g_rank, what.c_str());
  }
}

void die(const std::string &what) {
  std::fprintf(stderr, "soak rank %d: FAILED: %s\n", g_rank, what.c_str());
  std::fflush(stderr);
  _exit(1);
}

namespace {

void say_done(const Figures &f, const RssMonitor::Verdict &v, const Totals &totals) {
  std::printf(
      "soak rank %d: done: sent=%lld sent_bytes=%lld received=%lld received_bytes=%lld "
      "controls=%lld seconds=%.1f rss_start_kib=%ld rss_traffic_kib=%ld rss_peak_kib=%ld "
      "rss_traffic_end_kib=%ld rss_exit_kib=%ld fds=%zu/%zu threads=%zu/%zu shm_pools=%d "
      "tcp=%d failures=%d\n",
      g_rank, totals.sent.load(), totals.sent_bytes.load(), totals.received.load(),
      totals.received_bytes.load(), totals.controls.load(), f.seconds, f.rss_start, f.rss_traffic,
      v.peak_rss_kib, f.rss_traffic_end, f.rss_exit, f.fds[0], f.fds[1], f.threads[0], f.threads[1],
      f.links.shm_pools, f.links.tcp, totals.failures.load());
}

// rocl_init; this process's rank and the job's size.
int start_context(const Config &config) {
  if (rocl_init() < 0) die(std::string("rocl_init: ") + rocl_last_error());
  g_rank = static_cast<int>(env_long("ROCL_RANK", 0));
  const int processes = static_cast<int>(env_long("ROCL_SIZE", 1));
  if (processes * config.threads < 2) die("a soak needs two threads at least");
  if (g_rank == 0) {
    std::printf("soak: %d processes x %d threads, %lld messages of 1 B to %zu B, seed %llu\n",
                processes, config.threads, config.messages, config.max_size,
                static_cast<unsigned long long>(config.seed));
  }
  return processes;
}

// The traffic, between this process's resources and the job's, and the
// pool's blocks back after it.
void traffic(const Config &config, const std::vector<rocl_gid_t> &mine, const Peers &peers,
             RssMonitor &monitor, Totals &totals, Figures &f) {
  rocl_pool_stats_t base{};
  rocl_pool_stats(&base);
  f.rss_traffic = rss_kib();
  f.seconds = run_traffic(config, peers, monitor, totals);
  f.rss_traffic_end = rss_kib();
  f.links = take_links();
  check_pool_back(base, totals);
  for (rocl_gid_t g : mine) {
    if (rocl_delete(g) != ROCL_OK) report(totals, std::string("rocl_delete: ") + rocl_last_error());
  }
}

int run(const Config &config) {
  Figures f;
  // A thread first: a runtime that starts a thread of its own at the
  // process's first pthread_create (TSan's background thread) has it then,
  // in both counts.
  std::thread([] {}).join();
  const Census before = take_census();
  f.rss_start = rss_kib();
  const int processes = start_context(config);
  RssMonitor monitor(g_rank);
  monitor.start();
  Totals totals;
  const std::vector<rocl_gid_t> mine = register_threads(g_rank, config.threads);
  traffic(config, mine, find_everyone(processes, config.threads), monitor, totals, f);
  monitor.stop();
  if (rocl_exit() != ROCL_OK) report(totals, std::string("rocl_exit: ") + rocl_last_error());
  const Census after = take_census();
  f.rss_exit = rss_kib();
  f.fds[0] = before.fds.size(), f.fds[1] = after.fds.size();
  f.threads[0] = before.threads.size(), f.threads[1] = after.threads.size();
  const std::string left = compare_census(before, after);
  if (!left.empty()) report(totals, "left after rocl_exit:" + left);
  const RssMonitor::Verdict v = monitor.judge(config);
  say_verdict(config, v, totals);
  say_done(f, v, totals);
  return totals.failures.load() == 0 ? 0 : 1;
}

}  // namespace

}  // namespace soak

int main(int argc, char **argv) try {
  // A fixed threshold: memory of 64 KiB and more (the lent messages') is
  // mapped and goes back to the system when freed. glibc's own threshold
  // rises to the largest block freed, after which such memory stays in the
  // heap and resident memory would measure the heap's fragmentation.
  mallopt(M_MMAP_THRESHOLD, 64 << 10);
  const soak::Config config = soak::parse_options(argc, argv);
  return soak::run(config);
} catch (const std::exception &e) {
  soak::die(e.what());
}
