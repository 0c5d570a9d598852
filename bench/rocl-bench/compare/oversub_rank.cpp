// oversub_rank.cpp - rocl's side of the oversub stage (see oversub.hpp):
// one point per process, between threads (rocl-inproc) or between the
// processes of a roclrun job (rocl-shm). A token goes round a ring of
// resources, each member forwarding the buffer it received (zero-copy, as
// rocl-bench's echo); a ping-pong is a ring of two. Each repetition runs
// laps for --time seconds, so a slow waiting policy makes fewer laps, not
// a longer run.
#include <sched.h>

#include <algorithm>
#include <barrier>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "bench_kernels.hpp"
#include "busy_loops.hpp"
#include "check.hpp"
#include "oversub.hpp"
#include "rocl/rocl.h"
#include "thread_bench.hpp"
#include "threads.hpp"
#include "timing.hpp"

namespace rocl_bench::compare {
namespace {

constexpr std::size_t kPayload = 8;
constexpr double kFindTimeout = 30;

// Forwards what comes from `prev` to `next` until kTagStop, which it
// forwards too.
void forward(rocl_gid_t self, rocl_gid_t prev, rocl_gid_t next) {
  for (;;) {
    void *p = nullptr;
    int tag = 0;
    std::size_t len = 0;
    check(rocl_recv(self, prev, ROCL_ANY_TAG, &p, nullptr, &tag, &len, -1), "rocl_recv");
    if (tag == kTagStop) {
      check(rocl_bfret(p), "rocl_bfret");
      send_stop(self, next);
      return;
    }
    check(rocl_bftoret(p), "rocl_bftoret");
    check(rocl_send(self, next, tag, p, len), "rocl_send");
  }
}

// The member that starts the token: laps of `hops` hops for at least
// `seconds` (a batch of laps between two looks at the clock); us per hop.
double laps_for(rocl_gid_t self, rocl_gid_t prev, rocl_gid_t next, int hops, double seconds) {
  void *buf = check_buffer(rocl_bfget(kPayload), "rocl_bfget");
  std::memset(buf, 0, kPayload);
  const int batch = std::max(1, 16 / hops);
  long laps = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  do {
    for (int i = 0; i < batch; ++i, ++laps) {
      check(rocl_bftoret(buf), "rocl_bftoret");
      check(rocl_send(self, next, kTagData, buf, kPayload), "rocl_send");
      check(rocl_recv(self, prev, kTagData, &buf, nullptr, nullptr, nullptr, -1), "rocl_recv");
    }
    elapsed = seconds_since(start);
  } while (elapsed < seconds);
  check(rocl_bfret(buf), "rocl_bfret");
  return elapsed / static_cast<double>(laps * hops) * 1e6;
}

// Ends the ring: the stop goes round and comes back.
void stop_ring(rocl_gid_t self, rocl_gid_t prev, rocl_gid_t next) {
  send_stop(self, next);
  void *p = nullptr;
  check(rocl_recv(self, prev, kTagStop, &p, nullptr, nullptr, nullptr, -1), "rocl_recv (stop)");
  check(rocl_bfret(p), "rocl_bfret");
}

void print_row(const OversubPoint &p, const Row &r) {
  std::printf("benchmark,size_bytes,pairs,median,min,max,unit\n");
  std::printf("%s,%zu,%d,%.9g,%.9g,%.9g,%s\n", p.metric.c_str(), r.size_bytes, p.value, r.median,
              r.min, r.max, r.unit.c_str());
  std::fflush(stdout);
}

double thread_limit(const CompareOptions &o) {
  return 30 + 20 * (o.reps + 1) * o.seconds;
}

// A ring (or, with two members, a ping-pong) of threads; its row.
Row thread_ring(const CompareOptions &o, const OversubPoint &p, const std::vector<int> &cpus) {
  const int n = oversub_members(p, cpus.size());
  std::vector<BenchResource> members;
  for (int i = 0; i < n; ++i) members.emplace_back("oversub", i);
  std::vector<double> us;
  std::vector<std::function<void()>> tasks;
  std::vector<int> where;
  auto gid = [&](int i) { return members[static_cast<std::size_t>((i + n) % n)].gid(); };
  tasks.emplace_back([&] {
    laps_for(gid(0), gid(-1), gid(1), n, o.seconds / 10);  // warm-up
    for (int rep = 0; rep < o.reps; ++rep)
      us.push_back(laps_for(gid(0), gid(-1), gid(1), n, o.seconds));
    stop_ring(gid(0), gid(-1), gid(1));
  });
  where.push_back(oversub_cpu(p, cpus, 0));
  for (int i = 1; i < n; ++i) {
    tasks.emplace_back([&, i] { forward(gid(i), gid(i - 1), gid(i + 1)); });
    where.push_back(oversub_cpu(p, cpus, i));
  }
  run_threads("oversub ring", tasks, where, thread_limit(o));
  return summarize(p.metric, kPayload, p.value, us, "us");
}

// Pairs ping-ponging at once, each repetition starting together; the
// figure of a repetition is the mean one-way time over the pairs.
Row thread_pairs(const CompareOptions &o, const OversubPoint &p, const std::vector<int> &cpus) {
  const int pairs = oversub_members(p, cpus.size()) / 2;
  std::vector<BenchResource> members;
  for (int i = 0; i < 2 * pairs; ++i) members.emplace_back("oversub", i);
  std::vector<std::vector<double>> us(static_cast<std::size_t>(pairs));
  std::barrier<> start(pairs);
  std::vector<std::function<void()>> tasks;
  std::vector<int> where;
  for (int k = 0; k < pairs; ++k) {
    const rocl_gid_t ping = members[2 * static_cast<std::size_t>(k)].gid();
    const rocl_gid_t echo = members[2 * static_cast<std::size_t>(k) + 1].gid();
    tasks.emplace_back([&, k, ping, echo] {
      start.arrive_and_wait();
      laps_for(ping, echo, echo, 2, o.seconds / 10);
      for (int rep = 0; rep < o.reps; ++rep) {
        start.arrive_and_wait();
        us[static_cast<std::size_t>(k)].push_back(laps_for(ping, echo, echo, 2, o.seconds));
      }
      stop_ring(ping, echo, echo);
    });
    tasks.emplace_back([echo, ping] { forward(echo, ping, ping); });
    where.push_back(oversub_cpu(p, cpus, 2 * k));
    where.push_back(oversub_cpu(p, cpus, 2 * k + 1));
  }
  run_threads("oversub ping-pong", tasks, where, thread_limit(o));
  std::vector<double> mean(static_cast<std::size_t>(o.reps), 0.0);
  for (const auto &pair : us) {
    for (std::size_t rep = 0; rep < pair.size(); ++rep) mean[rep] += pair[rep] / pairs;
  }
  return summarize(p.metric, kPayload, p.value, mean, "us");
}

Row thread_rate(const CompareOptions &o, const OversubPoint &p, const std::vector<int> &cpus) {
  BenchOptions b = default_options();
  b.pairs = {oversub_members(p, cpus.size()) / 2};
  b.reps = o.reps;
  b.seconds = o.seconds;
  b.placement = Placement{true, cpus};
  const std::vector<Row> rows = run_rate(b);
  if (rows.size() != 1) die("oversub rate: %zu rows from run_rate, 1 expected", rows.size());
  Row r = rows.front();
  r.pairs = p.value;
  return r;
}

OversubPoint point_of(const CompareOptions &o) {
  const auto p = parse_oversub_point(o.oversub);
  if (!p)
    die("--rank %s wants --oversub POINT such as ring:2, not '%s'", o.rank.c_str(),
        o.oversub.c_str());
  return *p;
}

}  // namespace

int oversub_threads_main(const CompareOptions &o) {
  const OversubPoint p = point_of(o);
  const std::vector<int> cpus = usable_cpus();
  if (cpus.size() < 2) die("oversub: needs 2 usable cpus, %zu here", cpus.size());
  check(rocl_init(), "rocl_init");
  const bool busy = p.metric.ends_with("-busy");
  // The competitors start before the point's threads and stop after them.
  std::unique_ptr<rocl_anchors::BusyLoops> competitors;
  if (busy) competitors = std::make_unique<rocl_anchors::BusyLoops>(cpus, p.value);
  Row row;
  if (p.metric == "rate") {
    row = thread_rate(o, p, cpus);
  } else if (p.metric.starts_with("ring")) {
    row = thread_ring(o, p, cpus);
  } else {
    row = thread_pairs(o, p, cpus);
  }
  competitors.reset();
  print_row(p, row);
  check(rocl_exit(), "rocl_exit");
  return 0;
}

int oversub_ring_main(const CompareOptions &o) {
  const OversubPoint p = point_of(o);
  const char *rank_text = std::getenv("ROCL_RANK");
  const char *size_text = std::getenv("ROCL_SIZE");
  if (rank_text == nullptr || size_text == nullptr) {
    die("compare --rank oversub-ring is compare's own: it runs it under roclrun");
  }
  const int rank = std::atoi(rank_text), n = std::atoi(size_text);
  if (n < 2 || rank < 0 || rank >= n) die("oversub-ring: rank %d of %d", rank, n);
  const std::vector<int> cpus = usable_cpus();
  if (cpus.size() < 2) die("oversub: needs 2 usable cpus, %zu here", cpus.size());
  // The whole process, before rocl_init, so that rocl's own threads share the cpu.
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(oversub_cpu(p, cpus, rank), &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) {
    std::fprintf(stderr, "rocl-bench: warning: cannot pin rank %d: %s\n", rank,
                 std::strerror(errno));
  }
  check(rocl_init(), "rocl_init");
  {
    BenchResource self("oversub-ring", rank);
    const rocl_gid_t prev = BenchResource::find("oversub-ring", (rank + n - 1) % n, kFindTimeout);
    const rocl_gid_t next = BenchResource::find("oversub-ring", (rank + 1) % n, kFindTimeout);
    if (rank == 0) {
      std::vector<double> us;
      laps_for(self.gid(), prev, next, n, o.seconds / 10);
      for (int rep = 0; rep < o.reps; ++rep)
        us.push_back(laps_for(self.gid(), prev, next, n, o.seconds));
      stop_ring(self.gid(), prev, next);
      print_row(p, summarize(p.metric, kPayload, p.value, us, "us"));
    } else {
      forward(self.gid(), prev, next);
    }
  }
  check(rocl_exit(), "rocl_exit");
  return 0;
}

std::optional<OversubPoint> parse_oversub_point(std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string metric(text.substr(0, colon));
  static const char *const kMetrics[] = {"pingpong", "pingpong-onecpu", "ring",
                                         "rate",     "pingpong-busy",   "ring-busy"};
  if (std::find(std::begin(kMetrics), std::end(kMetrics), metric) == std::end(kMetrics)) {
    return std::nullopt;
  }
  const auto v = parse_count(text.substr(colon + 1));
  if (!v || *v < 1 || *v > 64) return std::nullopt;
  return OversubPoint{metric, static_cast<int>(*v)};
}

int oversub_members(const OversubPoint &p, std::size_t cpus) {
  const int n = static_cast<int>(cpus);
  if (p.metric == "pingpong-onecpu") return 2;
  const int load = p.metric.ends_with("-busy") ? 1 : p.value;
  if (p.metric.starts_with("ring")) return std::max(2, load * n);
  return 2 * std::max(1, load * n / 2);
}

int oversub_cpu(const OversubPoint &p, const std::vector<int> &cpus, int member) {
  if (cpus.empty()) return -1;
  if (p.metric == "pingpong-onecpu") return cpus.front();
  return cpus[static_cast<std::size_t>(member) % cpus.size()];
}

std::size_t oversub_size(const std::string &metric, const std::string &system) {
  return system == "futex" || system == "yield" || metric == "barrier" ? 0 : 8;
}

}  // namespace rocl_bench::compare
