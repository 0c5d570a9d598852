// demo.cpp - rocl-demo: a first look at rocl in one process. T worker
// threads each become a rocl resource, find each other through the
// directory, pass a token round a ring, play ping-pong and flood their
// neighbours with small messages; a table of figures ends it.
//
// The main thread announces each phase and prints what the workers found;
// a barrier (T workers + main) separates the phases. Every receive has a
// timeout, so a lost message ends the demo with an error instead of a hang.
#include <sched.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rocl/rocl.hpp"

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kReceiveTimeout{5000};
constexpr double kRingSeconds = 0.3;
constexpr double kPingSeconds = 0.25;
constexpr double kRateSeconds = 0.5;
constexpr int kRateBatch = 64;
constexpr std::size_t kMiB = std::size_t{1} << 20;

constexpr int kTagToken = 1;
constexpr int kTagPing = 2;
constexpr int kTagStop = 3;
constexpr int kTagRate = 4;
constexpr int kTagRateLast = 5;  // the last message a worker sends in the rate phase

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Ends the demo: prints who failed and why. _Exit because other threads
// may be inside rocl (or waiting at a barrier for the one that failed).
[[noreturn]] void fail(const std::string &who, const std::string &why) {
  std::fflush(stdout);
  std::fprintf(stderr, "rocl-demo: error in %s: %s\n", who.c_str(), why.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

std::string name_of(int i) {
  return "worker-" + std::to_string(i);
}
const char *color_of(int i) {
  return i % 2 == 0 ? "red" : "blue";
}

std::string hex(rocl::gid_t gid) {
  char text[32];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(gid));
  return text;
}

// Three significant digits, no exponent.
std::string number(double v) {
  char text[64];
  const char *format = v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : v >= 1 ? "%.2f" : "%.3f";
  std::snprintf(text, sizeof text, format, v);
  return text;
}

// A count per second with a k or M prefix: "38.2 k", "3.47 M".
std::string per_second(double v) {
  if (v >= 1e6) return number(v / 1e6) + " M";
  if (v >= 1e3) return number(v / 1e3) + " k";
  return number(v);
}

// ---- discovery -----------------------------------------------------------------

struct Discovery {
  std::vector<std::pair<std::string, rocl::gid_t>> found;  // (name, gid), increasing gid
  double micros = 0;
};

// The multi-answer query of the paper's table 3: rocl_query_start with the
// pattern, rocl_query_next for each answer (on a fresh list whose "name" is
// unspecified, for the directory to fill in), rocl_query_stop.
// (rocl::query_all wraps the same loop.)
Discovery discover(const rocl::Attributes &pattern) {
  Discovery d;
  const auto start = Clock::now();
  auto list = pattern.to_c();
  rocl_handler_t *handler = rocl_query_start(list.get());
  if (handler == nullptr) throw rocl::Error(ROCL_EINVAL, rocl_last_error());
  for (;;) {
    auto answer = pattern.to_c();
    const std::int64_t gid = rocl_query_next(handler, answer.get());
    if (gid == ROCL_EEND) break;
    if (gid < 0) {
      rocl::Error error(static_cast<int>(gid), rocl_last_error());
      rocl_query_stop(handler);
      throw error;
    }
    int len = 0;
    const auto *name = static_cast<const char *>(rocl_get_attr(answer.get(), "name", &len));
    d.found.emplace_back(name != nullptr ? std::string(name, static_cast<std::size_t>(len)) : "?",
                         static_cast<rocl::gid_t>(gid));
  }
  if (int rc = rocl_query_stop(handler); rc < 0) throw rocl::Error(rc, rocl_last_error());
  d.micros = seconds_since(start) * 1e6;
  return d;
}

std::string describe(const Discovery &d, const char *what) {
  std::string line = "found " + std::to_string(d.found.size()) + " " + what + ":";
  for (const auto &[name, gid] : d.found) line += " " + name;
  return line + " (query " + number(d.micros) + " us)";
}

// ---- what the phases share ------------------------------------------------------

struct Shared {
  explicit Shared(int n) : threads(n), sync(n + 1), lines(n), received(n), busy(n) {}

  const int threads;
  std::barrier<> sync;             // workers + main: start and end of each phase
  std::vector<std::string> lines;  // one output line per worker per phase
  std::string extra_line;          // worker-0's query for blue workers
  std::atomic<bool> stop_rate{false};

  // Figures, each written by one worker during a phase, read by main after it.
  long ring_hops = 0;
  double ring_seconds = 0;
  long round_trips_8 = 0, round_trips_1m = 0;
  double one_way_8_us = 0, one_way_1m_us = 0;
  std::vector<long> received;  // rate phase: messages each worker received
  std::vector<double> busy;    // rate phase: seconds each worker took
};

// A worker's view: its resource and its neighbours on the ring.
struct Worker {
  Shared &s;
  int index;
  std::string name;
  std::optional<rocl::Resource> me;
  rocl::gid_t right = ROCL_NULL_GID;  // worker-(i+1)
  rocl::gid_t left = ROCL_NULL_GID;   // worker-(i-1)

  rocl::Message receive(rocl::gid_t from, int tag) {
    std::optional<rocl::Message> m = me->recv(from, tag, kReceiveTimeout);
    if (!m) fail(name, "no message from " + hex(from) + " within 5 s");
    return std::move(*m);
  }

  void register_itself() {
    me.emplace(rocl::Attributes{{"type", "worker"}, {"name", name}, {"color", color_of(index)}});
    s.lines[index] = name + "  gid " + hex(me->gid()) + "  {type=worker, name=" + name +
                     ", color=" + color_of(index) + "}";
  }

  void find_others() {
    const Discovery all = discover(rocl::Attributes{{"type", "worker"}}.ask("name", 64));
    s.lines[index] = name + " " + describe(all, "workers");
    std::map<std::string, rocl::gid_t> by_name(all.found.begin(), all.found.end());
    if (static_cast<int>(by_name.size()) != s.threads) {
      fail(name, "the directory knows " + std::to_string(by_name.size()) + " workers, not " +
                     std::to_string(s.threads));
    }
    right = by_name.at(name_of((index + 1) % s.threads));
    left = by_name.at(name_of((index + s.threads - 1) % s.threads));
    if (index == 0) {
      const Discovery blue =
          discover(rocl::Attributes{{"type", "worker"}, {"color", "blue"}}.ask("name", 64));
      s.extra_line = name + " asked for {type=worker, color=blue}: " + describe(blue, "workers");
    }
  }

  // The token is {hops, last}; every worker adds a hop; worker-0 sets
  // `last` after kRingSeconds and every worker stops after forwarding it.
  struct Token {
    std::uint64_t hops;
    std::uint64_t last;
  };

  void ring() {
    const auto start = Clock::now();
    if (index == 0) {
      rocl::Buffer token = rocl::Buffer::get(sizeof(Token));
      const Token first{0, 0};
      std::memcpy(token.data(), &first, sizeof first);
      me->send(right, kTagToken, std::move(token));
    }
    for (;;) {
      rocl::Message m = receive(left, kTagToken);
      Token t{};
      std::memcpy(&t, m.buffer.data(), sizeof t);
      ++t.hops;
      if (index == 0 && t.last != 0) {  // back home for the last time
        s.ring_hops = static_cast<long>(t.hops);
        s.ring_seconds = seconds_since(start);
        return;  // the token's buffer returns to the pool with m
      }
      if (index == 0 && seconds_since(start) >= kRingSeconds) t.last = 1;
      std::memcpy(m.buffer.data(), &t, sizeof t);
      me->send(right, kTagToken, std::move(m.buffer));  // the same buffer goes on
      if (t.last != 0 && index != 0) return;
    }
  }

  // worker-0: round trips of `size` bytes with worker-1 for kPingSeconds.
  double ping(std::size_t size, long *round_trips) {
    rocl::Buffer buf = rocl::Buffer::get(size);
    std::memset(buf.data(), 'x', size);
    auto run = [&](long n) {
      for (long k = 0; k < n; ++k) {
        me->send(right, kTagPing, std::move(buf));
        buf = receive(right, kTagPing).buffer;
      }
    };
    run(1000);  // warm-up
    const auto start = Clock::now();
    long n = 0;
    double elapsed = 0;
    do {
      run(256);
      n += 256;
    } while ((elapsed = seconds_since(start)) < kPingSeconds);
    *round_trips = n;
    return elapsed / static_cast<double>(n) / 2 * 1e6;
  }

  void ping_pong() {
    if (index == 0) {
      s.one_way_8_us = ping(8, &s.round_trips_8);
      s.one_way_1m_us = ping(kMiB, &s.round_trips_1m);
      me->send(right, kTagStop, std::string_view());
    } else if (index == 1) {
      for (;;) {  // send every buffer straight back, until told to stop
        rocl::Message m = receive(left, rocl::any_tag);
        if (m.tag == kTagStop) return;
        me->send(left, m.tag, std::move(m.buffer));
      }
    }
  }

  // Batches of kRateBatch messages to the right, then one batch from the
  // left, until main says stop; the last message of the last batch carries
  // kTagRateLast so that the neighbour knows when to stop receiving. A
  // worker is never more than one batch ahead of its left neighbour.
  void rate() {
    const auto start = Clock::now();
    long received = 0;
    bool left_done = false;
    auto receive_batch = [&] {
      for (int k = 0; k < kRateBatch; ++k) {
        if (receive(left, rocl::any_tag).tag == kTagRateLast) left_done = true;
        ++received;
      }
    };
    for (bool last = false; !last;) {
      last = s.stop_rate.load(std::memory_order_acquire);
      for (int k = 0; k < kRateBatch; ++k) {
        rocl::Buffer b = rocl::Buffer::get(8);
        const std::uint64_t payload = static_cast<std::uint64_t>(k);
        std::memcpy(b.data(), &payload, sizeof payload);
        me->send(right, last && k == kRateBatch - 1 ? kTagRateLast : kTagRate, std::move(b));
      }
      if (!left_done) receive_batch();
    }
    while (!left_done) receive_batch();
    s.received[index] = received;
    s.busy[index] = seconds_since(start);
  }

  void run() {
    try {
      s.sync.arrive_and_wait();
      register_itself();
      s.sync.arrive_and_wait();  // registered: the start barrier
      for (void (Worker::*phase)() :
           {&Worker::find_others, &Worker::ring, &Worker::ping_pong, &Worker::rate}) {
        s.sync.arrive_and_wait();
        (this->*phase)();
        s.sync.arrive_and_wait();
      }
      me.reset();  // leaves the directory
    } catch (const rocl::Error &e) {
      fail(name, std::string(e.what()) + " (" + rocl_strerror(e.code()) + ")");
    } catch (const std::exception &e) {
      fail(name, e.what());
    }
  }
};

// ---- main: the story ------------------------------------------------------------------

// Prints the phase's title and explanation, lets the workers run it (main
// does `meanwhile` while they do), then prints their lines.
template <class Meanwhile>
void phase(Shared &s, const char *title, const char *explanation, Meanwhile meanwhile) {
  std::printf("\n== %s ==\n%s\n", title, explanation);
  std::fflush(stdout);
  for (auto &line : s.lines) line.clear();
  s.extra_line.clear();
  s.sync.arrive_and_wait();
  meanwhile();
  s.sync.arrive_and_wait();
  for (const auto &line : s.lines) {
    if (!line.empty()) std::printf("  %s\n", line.c_str());
  }
  if (!s.extra_line.empty()) std::printf("  %s\n", s.extra_line.c_str());
}

void phase(Shared &s, const char *title, const char *explanation) {
  phase(s, title, explanation, [] {});
}

double memcpy_gb_per_s() {
  std::vector<char> from(kMiB, 'a'), to(kMiB);
  long n = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  do {
    for (int k = 0; k < 16; ++k, ++n) {
      from[static_cast<std::size_t>(n) % kMiB] = static_cast<char>(n);
      std::memcpy(to.data(), from.data(), kMiB);
    }
  } while ((elapsed = seconds_since(start)) < 0.1);
  if (to[0] == 0x7f) std::printf(" ");  // keep the copies
  return static_cast<double>(n) * static_cast<double>(kMiB) / elapsed / 1e9;
}

void print_summary(const Shared &s) {
  long messages = 0;
  double longest = 0;
  for (int i = 0; i < s.threads; ++i) {
    messages += s.received[static_cast<std::size_t>(i)];
    longest = std::max(longest, s.busy[static_cast<std::size_t>(i)]);
  }
  const double one_mib_gb_s = static_cast<double>(kMiB) / (s.one_way_1m_us * 1e-6) / 1e9;
  struct Line {
    std::string figure, value;
  };
  const Line lines[] = {
      {"ping-pong 8 B one-way latency", number(s.one_way_8_us) + " us"},
      {"ping-pong 1 MiB one-way latency", number(s.one_way_1m_us) + " us"},
      {"1 MiB hand-off bandwidth", number(one_mib_gb_s) + " GB/s (a pointer moves, no byte)"},
      {"memcpy 1 MiB bandwidth", number(memcpy_gb_per_s()) + " GB/s (a real copy, to compare)"},
      {"ring token hops per second", per_second(static_cast<double>(s.ring_hops) / s.ring_seconds)},
      {"message rate, " + std::to_string(s.threads) + " threads",
       per_second(static_cast<double>(messages) / longest) + " msg/s"},
  };
  std::printf("\n== Summary ==\n%-36s %s\n", "figure", "value");
  for (const auto &l : lines) std::printf("%-36s %s\n", l.figure.c_str(), l.value.c_str());
}

void tell_the_story(Shared &s) {
  phase(s, "1. Resources",
        "Each thread is a resource with a global id (gid) and attributes: it registers\n"
        "itself in the directory (rocl_register). Messages go to a resource, whatever\n"
        "thread, process or node it lives on.");
  phase(s, "2. Discovery",
        "The workers meet at a start barrier. Then each asks the directory for every\n"
        "resource {type=worker}, leaving \"name\" unspecified for the directory to fill in\n"
        "(a multi-answer query: rocl_query_start / rocl_query_next / rocl_query_stop).\n"
        "Answers come in increasing gid order: the order in which the workers registered.");
  phase(s, "3. Ring",
        "worker-0 sends a token to worker-1, which sends it to worker-2, ... and back to\n"
        "worker-0, for 0.3 s. Each worker receives the token's buffer and sends that same\n"
        "buffer on (rocl_bftoret + rocl_send): only the pointer changes hands, no byte\n"
        "is copied (zero-copy hand-off).");
  const long hops = s.ring_hops;
  std::printf("  the token went round %ld times: %ld hops in %.2f s, %s us per hop\n",
              hops / s.threads, hops, s.ring_seconds,
              number(s.ring_seconds / static_cast<double>(hops) * 1e6).c_str());
  phase(s, "4. Ping-pong",
        "worker-0 sends a message to worker-1, which sends the very same buffer back.\n"
        "One-way latency = round trip / 2.");
  std::printf("  8 B:   %ld round trips, one-way latency %s us\n", s.round_trips_8,
              number(s.one_way_8_us).c_str());
  std::printf(
      "  1 MiB: %ld round trips, one-way latency %s us (no byte is copied, so size "
      "hardly matters)\n",
      s.round_trips_1m, number(s.one_way_1m_us).c_str());
  phase(s, "5. Message rate",
        "For 0.5 s every worker sends 8 B messages to its right neighbour, 64 at a time,\n"
        "and receives its left neighbour's.",
        [&s] {
          std::this_thread::sleep_for(std::chrono::duration<double>(kRateSeconds));
          s.stop_rate.store(true, std::memory_order_release);
        });
  long messages = 0;
  for (long r : s.received) messages += r;
  std::printf("  %d workers received %ld messages\n", s.threads, messages);
}

int parse_threads(int argc, char **argv) {
  int threads = 4;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string value;
    if (arg == "--help" || arg == "-h") {
      std::printf("usage: rocl-demo [--threads N]   (N worker threads, 2..64, default 4)\n");
      std::exit(0);
    } else if (arg == "--threads" && i + 1 < argc) {
      value = argv[++i];
    } else if (arg.starts_with("--threads=")) {
      value = std::string(arg.substr(10));
    } else {
      std::fprintf(stderr, "rocl-demo: unknown argument '%s' (usage: rocl-demo [--threads N])\n",
                   argv[i]);
      std::exit(2);
    }
    char *end = nullptr;
    const long n = std::strtol(value.c_str(), &end, 10);
    if (end == value.c_str() || *end != '\0' || n < 2 || n > 64) {
      std::fprintf(stderr, "rocl-demo: --threads wants a number from 2 to 64, not '%s'\n",
                   value.c_str());
      std::exit(2);
    }
    threads = static_cast<int>(n);
  }
  return threads;
}

}  // namespace

int main(int argc, char **argv) {
  const int threads = parse_threads(argc, argv);
  try {
    rocl::Context context;
    std::printf(
        "rocl-demo: %d worker threads of this process talk to each other through rocl.\n"
        "rocl_init() created the process's context (gid %s): the buffer pool, the\n"
        "directory access and the transports, shared by every thread.\n",
        threads, hex(context.gid()).c_str());
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) < threads) {
      const char *spin = std::getenv("ROCL_SPIN_US");
      std::printf(
          "This machine gives us %d cpus for %d threads: threads take turns, and a\n"
          "waiting receiver spins %s us (ROCL_SPIN_US) before it sleeps.\n",
          CPU_COUNT(&cpus), threads, spin != nullptr ? spin : "20");
    }
    double load = 0;
    if (std::FILE *f = std::fopen("/proc/loadavg", "r")) {
      if (std::fscanf(f, "%lf", &load) != 1) load = 0;
      std::fclose(f);
    }
    if (load > 0.5 * CPU_COUNT(&cpus)) {
      std::printf(
          "The machine is busy (load average %.1f on %d cpus): other programs compete\n"
          "with the workers, so expect slower, noisier figures.\n",
          load, CPU_COUNT(&cpus));
    }

    Shared s(threads);
    std::vector<Worker> workers;
    workers.reserve(static_cast<std::size_t>(threads));
    for (int i = 0; i < threads; ++i) workers.push_back(Worker{s, i, name_of(i), {}});
    std::vector<std::thread> pool;
    pool.reserve(workers.size());
    for (auto &w : workers) pool.emplace_back([&w] { w.run(); });
    tell_the_story(s);
    for (auto &t : pool) t.join();
    print_summary(s);
  } catch (const rocl::Error &e) {
    fail("main", std::string(e.what()) + " (" + rocl_strerror(e.code()) + ")");
  }
  return 0;
}
