// dir_bench.cpp - the directory's figures across hosts, run under
// `roclrun --hosts h1,...,hH -n H dir_bench [--items K] [--reps R]` (one
// rank per host). Every rank registers K items {type=bench-item,
// n=<rank>.<i>}; once all have (rocl_query_wait), rank 0 measures
//   local-query     rocl_query of one of its own items by attribute
//   global-query    rocl_query of an item of the last host by attribute
//                   (misses at rank 0's server, goes to every server)
//   gid-lookup      rocl_query by the gid of that item (to its server)
//   multi-answer    rocl_query_start/next over every item of the job:
//                   answers per second (and exactly H*K of them, once each)
// each the median, min and max of R runs, and prints CSV rows
//   benchmark,hosts,median,min,max,unit
// The others sleep in rocl_recv meanwhile (a rocl_query_wait would ask
// every server again and again, and its queries would be measured too);
// rank 0 then sends each of them an empty message and they leave.
#include <rocl/rocl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const char *what) {
  std::fprintf(stderr, "dir_bench: %s failed: %s\n", what, rocl_last_error());
  std::exit(1);
}

rocl_attrl_t *list(std::initializer_list<std::pair<const char *, std::string>> attrs) {
  rocl_attrl_t *l = rocl_new_attrl(0);
  for (const auto &[n, v] : attrs) rocl_add_attr(l, n, v.data(), static_cast<int>(v.size()));
  return l;
}

struct Stats {
  double median, min, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

template <class Fn>
Stats time_us(int reps, Fn fn) {
  std::vector<double> v;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    fn();
    v.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return stats(v);
}

}  // namespace

int main(int argc, char **argv) {
  int items = 100, reps = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--items") == 0) items = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
  }
  const char *r = std::getenv("ROCL_RANK"), *s = std::getenv("ROCL_SIZE");
  const int rank = r ? std::atoi(r) : 0, size = s ? std::atoi(s) : 1;
  if (rocl_init() < 0) die("rocl_init");
  for (int i = 0; i < items; ++i) {
    rocl_attrl_t *a =
        list({{"type", "bench-item"}, {"n", std::to_string(rank) + "." + std::to_string(i)}});
    if (rocl_register(a) < 0) die("rocl_register");
    rocl_kill_attrl(a);
  }
  rocl_attrl_t *me = list({{"type", "bench-rank"}, {"rank", std::to_string(rank)}});
  const int64_t me_gid = rocl_register(me);
  if (me_gid < 0) die("rocl_register");
  rocl_kill_attrl(me);
  rocl_attrl_t *ranks = list({{"type", "bench-rank"}});
  if (rocl_query_wait(ranks, size, 60000) < 0) die("rocl_query_wait (every rank)");
  rocl_kill_attrl(ranks);
  if (rank != 0) {
    void *msg = nullptr;
    if (rocl_recv(me_gid, ROCL_ANY, ROCL_ANY, &msg, nullptr, nullptr, nullptr, 600000) != ROCL_OK) {
      die("rocl_recv (done)");
    }
    rocl_bfret(msg);
    rocl_exit();
    return 0;
  }
  std::printf("benchmark,hosts,median,min,max,unit\n");
  auto row = [&](const char *name, Stats st, const char *unit) {
    std::printf("%s,%d,%.2f,%.2f,%.2f,%s\n", name, size, st.median, st.min, st.max, unit);
    std::fflush(stdout);
  };
  rocl_attrl_t *own = list({{"type", "bench-item"}, {"n", "0.0"}});
  row("local-query",
      time_us(reps,
              [&] {
                rocl_gid_t g = ROCL_NULL_GID;
                if (rocl_query(&g, own) != ROCL_OK) die("rocl_query (local)");
              }),
      "us");
  const std::string far_name = std::to_string(size - 1) + ".0";
  rocl_attrl_t *far = list({{"type", "bench-item"}, {"n", far_name}});
  rocl_gid_t far_gid = ROCL_NULL_GID;
  row("global-query",
      time_us(reps,
              [&] {
                far_gid = ROCL_NULL_GID;
                if (rocl_query(&far_gid, far) != ROCL_OK) die("rocl_query (global)");
              }),
      "us");
  rocl_attrl_t *nothing = rocl_new_attrl(0);
  row("gid-lookup",
      time_us(reps,
              [&] {
                rocl_gid_t g = far_gid;
                if (rocl_query(&g, nothing) != ROCL_OK) die("rocl_query (by gid)");
              }),
      "us");
  std::vector<double> rates;
  const int multi_reps = std::max(3, reps / 40);
  for (int k = 0; k < multi_reps; ++k) {
    rocl_attrl_t *pattern = list({{"type", "bench-item"}});
    const auto t0 = Clock::now();
    rocl_handler_t *h = rocl_query_start(pattern);
    if (h == nullptr) die("rocl_query_start");
    std::set<rocl_gid_t> seen;
    for (;;) {
      const int64_t g = rocl_query_next(h, nothing);
      if (g == ROCL_EEND) break;
      if (g < 0) die("rocl_query_next");
      if (!seen.insert(static_cast<rocl_gid_t>(g)).second) {
        std::fprintf(stderr, "dir_bench: gid %#llx answered twice\n", (unsigned long long)g);
        return 1;
      }
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    rocl_query_stop(h);
    rocl_kill_attrl(pattern);
    if (seen.size() != static_cast<std::size_t>(items) * static_cast<std::size_t>(size)) {
      std::fprintf(stderr, "dir_bench: %zu answers, not %d\n", seen.size(), items * size);
      return 1;
    }
    rates.push_back(static_cast<double>(seen.size()) / secs);
  }
  row("multi-answer", stats(rates), "answers/s");
  {
    rocl_attrl_t *others = list({{"type", "bench-rank"}});
    rocl_handler_t *h = rocl_query_start(others);
    if (h == nullptr) die("rocl_query_start (ranks)");
    for (int64_t g; (g = rocl_query_next(h, nothing)) > 0;) {
      if (g != me_gid && rocl_send(me_gid, g, 0, nullptr, 0) != ROCL_OK) die("rocl_send (done)");
    }
    rocl_query_stop(h);
    rocl_kill_attrl(others);
  }
  rocl_kill_attrl(own);
  rocl_kill_attrl(far);
  rocl_kill_attrl(nothing);
  // The others leave once they saw "done", which leaves with this context:
  // wait until only this rank's marker is left (30 s at most).
  rocl_attrl_t *markers = list({{"type", "bench-rank"}});
  for (int k = 0; k < 3000; ++k) {
    int left = 0;
    rocl_handler_t *h = rocl_query_start(markers);
    if (h == nullptr) break;
    rocl_attrl_t *none = rocl_new_attrl(0);
    while (rocl_query_next(h, none) > 0) ++left;
    rocl_kill_attrl(none);
    rocl_query_stop(h);
    if (left <= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  rocl_kill_attrl(markers);
  rocl_exit();
  return 0;
}
