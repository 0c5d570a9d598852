// thread_bench.cpp - see thread_bench.hpp. The message loops are in
// bench_kernels.cpp (shared with the process benchmarks); this file places
// the two sides of each pair on threads of this process.
#include "thread_bench.hpp"

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>

#include "bench_kernels.hpp"
#include "check.hpp"
#include "rocl/rocl.h"
#include "threads.hpp"

namespace rocl_bench {

std::vector<Row> run_latency(const BenchOptions &o) {
  BenchResource pinger("ping", 0);
  BenchResource echoer("echo", 0);
  std::printf("  %s; warm-up and calibration, then %d rep(s) of ~%.2g s per size\n",
              o.placement.describe_pair("ping", "echo").c_str(), o.reps, o.seconds);
  std::fflush(stdout);
  std::vector<Row> rows;
  long copies = 0;
  auto ping_all = [&] {
    // The threads have just started (cold caches, idle cpus clocked down):
    // a short untimed ping-pong first, so that the first size is not the
    // one that pays for it.
    BenchOptions warm_up = o;
    warm_up.reps = 1;
    warm_up.seconds = std::min(o.seconds, 0.05);
    ping(pinger.gid(), echoer.gid(), 8, warm_up);
    for (std::size_t size : o.sizes) {
      LatencyPoint p = ping(pinger.gid(), echoer.gid(), size, o);
      copies += p.copies;
      rows.push_back(summarize("latency", size, 1, std::move(p.one_way_us), "us"));
      print_point(rows.back());
    }
    send_stop(pinger.gid(), echoer.gid());
  };
  run_threads("latency", {ping_all, [&] { echo(echoer.gid(), pinger.gid()); }},
              {o.placement.cpu_for(0), o.placement.cpu_for(1)}, time_limit(o, o.sizes.size()));
  if (copies == 0) {
    std::printf("  zero-copy check: every echo came back in the buffer that was sent\n");
  } else {
    std::printf("  zero-copy check FAILED: %ld echoes came back in another buffer (copied)\n",
                copies);
  }
  return rows;
}

std::vector<Row> run_bandwidth(const BenchOptions &o) {
  BenchResource sender("sender", 0);
  BenchResource receiver("receiver", 0);
  std::printf("  %s; %s", o.placement.describe_pair("sender", "receiver").c_str(),
              describe_window(o.window, bandwidth_sizes(o)).c_str());
  std::printf("; 1 MB = 1e6 B\n");
  std::fflush(stdout);

  std::vector<bool> modes{false};
  if (o.touch) modes.push_back(true);
  std::vector<Row> rows;
  auto send_all = [&] {
    for (bool touch : modes) {
      const char *name = touch ? "bandwidth-touch" : "bandwidth";
      for (std::size_t size : bandwidth_sizes(o)) {
        const int window = window_for(size, o.window);
        send_config(sender.gid(), receiver.gid(), window, touch);
        stream(sender.gid(), receiver.gid(), size, window, touch, o.seconds / 10);  // warm-up
        std::vector<double> megabytes, messages;
        for (int rep = 0; rep < o.reps; ++rep) {
          StreamCount c = stream(sender.gid(), receiver.gid(), size, window, touch, o.seconds);
          const double per_second = static_cast<double>(c.messages) / c.seconds;
          megabytes.push_back(per_second * static_cast<double>(size) / 1e6);
          messages.push_back(per_second);
        }
        rows.push_back(summarize(name, size, 1, std::move(megabytes), "MB/s"));
        print_point(rows.back());
        rows.push_back(summarize(name, size, 1, std::move(messages), "msg/s"));
      }
    }
    send_stop(sender.gid(), receiver.gid());
  };
  run_threads("bandwidth", {send_all, [&] { drain(receiver.gid(), sender.gid()); }},
              {o.placement.cpu_for(0), o.placement.cpu_for(1)},
              time_limit(o, bandwidth_sizes(o).size() * modes.size()));
  return rows;
}

namespace {

void describe_rate_placement(const BenchOptions &o) {
  const int most = o.pairs.empty() ? 1 : *std::max_element(o.pairs.begin(), o.pairs.end());
  std::string text;
  for (int k = 0; k < most && o.placement.cpu_for(0) >= 0; ++k) {
    if (k > 0) text += ", ";
    text += std::to_string(k) + ": cpu " + std::to_string(o.placement.cpu_for(2 * k)) + "->" +
            std::to_string(o.placement.cpu_for(2 * k + 1));
  }
  std::printf(
      "  window %d; %s\n", o.window,
      text.empty() ? "threads not pinned" : ("pairs pinned (sender->receiver) " + text).c_str());
  if (2 * static_cast<std::size_t>(most) > o.placement.cpus.size()) {
    std::printf(
        "  note: %d pairs are %d threads on %zu cpus: threads take turns, and a waiting "
        "receiver sleeps after ROCL_SPIN_US\n",
        most, 2 * most, o.placement.cpus.size());
  }
  std::fflush(stdout);
}

// One repetition with `pairs` pairs: total messages per second over all.
double rate_once(const std::vector<BenchResource> &senders,
                 const std::vector<BenchResource> &receivers, const BenchOptions &o) {
  const std::size_t pairs = senders.size();
  const int window = window_for(8, o.window);
  std::barrier start(static_cast<std::ptrdiff_t>(pairs));
  std::vector<StreamCount> counts(pairs);
  std::vector<std::function<void()>> tasks;
  std::vector<int> cpus;
  for (std::size_t k = 0; k < pairs; ++k) {
    const rocl_gid_t s = senders[k].gid();
    const rocl_gid_t r = receivers[k].gid();
    tasks.emplace_back([&, k, s, r] {
      send_config(s, r, window, false);
      stream(s, r, 8, window, false, 0);  // warm-up: one window
      start.arrive_and_wait();
      counts[k] = stream(s, r, 8, window, false, o.seconds);
      send_stop(s, r);
    });
    tasks.emplace_back([s, r] { drain(r, s); });
    cpus.push_back(o.placement.cpu_for(static_cast<int>(2 * k)));
    cpus.push_back(o.placement.cpu_for(static_cast<int>(2 * k + 1)));
  }
  run_threads("rate", tasks, cpus, time_limit(o, 1));
  return total_rate(counts);
}

}  // namespace

std::vector<Row> run_rate(const BenchOptions &o) {
  describe_rate_placement(o);
  std::vector<Row> rows;
  for (int pairs : o.pairs) {
    std::vector<BenchResource> senders, receivers;
    for (int k = 0; k < pairs; ++k) {
      senders.emplace_back("sender", k);
      receivers.emplace_back("receiver", k);
    }
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(o.reps));
    for (int rep = 0; rep < o.reps; ++rep) samples.push_back(rate_once(senders, receivers, o));
    rows.push_back(summarize("rate", 8, pairs, std::move(samples), "M msg/s"));
    print_point(rows.back());
  }
  return rows;
}

}  // namespace rocl_bench
