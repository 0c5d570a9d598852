// ports_rank.cpp - the ranks of the ports stage (see rocl_ranks.hpp): the
// message rate as the number of destination resources grows (CoR's scaling
// with ports, its figure 6).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_kernels.hpp"
#include "check.hpp"
#include "report.hpp"
#include "rocl/rocl.h"
#include "rocl_ranks.hpp"
#include "timing.hpp"

namespace rocl_bench::compare {
namespace {

constexpr int kTagPortsConfig = 20;
constexpr int kTagPortsData = 21;
constexpr int kTagPortsAck = 22;
constexpr double kFindTimeout = 30;

// What rank 0 sends before a run; ports = 0 ends rank 1.
struct PortsRun {
  std::uint32_t ports;
  std::uint32_t window;
  std::int64_t windows;
};

int window_of(int ports) {
  const int w = std::max(64, ports);
  return (w + ports - 1) / ports * ports;
}

void release(void *buffer) {
  check(rocl_bfret(buffer), "rocl_bfret");
}

// Rank 0: `windows` windows to the first `ports` destinations; the seconds.
double send_windows(rocl_gid_t self, const std::vector<rocl_gid_t> &ports_of_peer, int ports,
                    long windows) {
  const int window = window_of(ports);
  PortsRun run{static_cast<std::uint32_t>(ports), static_cast<std::uint32_t>(window), windows};
  check(rocl_send(self, ports_of_peer[0], kTagPortsConfig, &run, sizeof run), "rocl_send (config)");
  std::uint64_t payload = 0;
  const auto start = Clock::now();
  for (long w = 0; w < windows; ++w) {
    for (int i = 0; i < window; ++i) {
      ++payload;
      check(rocl_send(self, ports_of_peer[static_cast<std::size_t>(i % ports)], kTagPortsData,
                      &payload, sizeof payload),
            "rocl_send");
    }
    void *ack = nullptr;
    check(rocl_recv(self, ports_of_peer[0], kTagPortsAck, &ack, nullptr, nullptr, nullptr, -1),
          "rocl_recv (ack)");
    release(ack);
  }
  return seconds_since(start);
}

int drive(const CompareOptions &o, rocl_gid_t self, const std::vector<rocl_gid_t> &peer) {
  send_windows(self, peer, 1, 16);  // warm-up: connections, pool
  std::printf("benchmark,size_bytes,pairs,median,min,max,unit\n");
  for (int ports : o.ports) {
    const int window = window_of(ports);
    auto run = [&](long n) { return send_windows(self, peer, ports, n); };
    const long n = plan_iterations(run, o.seconds, 1L << 30);
    std::vector<double> rates;
    for (int rep = 0; rep < o.reps; ++rep) {
      rates.push_back(static_cast<double>(n) * window / run(n) / 1e6);
    }
    const Row row = summarize("ports", 8, ports, rates, "M msg/s");
    std::printf("ports,8,%d,%.9g,%.9g,%.9g,M msg/s\n", ports, row.median, row.min, row.max);
    std::fflush(stdout);
  }
  PortsRun quit{0, 0, 0};
  check(rocl_send(self, peer[0], kTagPortsConfig, &quit, sizeof quit), "rocl_send (quit)");
  return 0;
}

int serve(const std::vector<BenchResource> &ports, rocl_gid_t source) {
  for (;;) {
    void *p = nullptr;
    std::size_t len = 0;
    check(rocl_recv(ports[0].gid(), source, kTagPortsConfig, &p, nullptr, nullptr, &len, -1),
          "rocl_recv (config)");
    PortsRun run{};
    if (len != sizeof run) die("ports: a config message of %zu bytes", len);
    std::memcpy(&run, p, sizeof run);
    release(p);
    if (run.ports == 0) return 0;
    if (run.ports > ports.size())
      die("ports: asked for %u ports, %zu here", run.ports, ports.size());
    for (std::int64_t w = 0; w < run.windows; ++w) {
      for (std::uint32_t i = 0; i < run.window; ++i) {
        check(rocl_recv(ports[i % run.ports].gid(), source, kTagPortsData, &p, nullptr, nullptr,
                        nullptr, -1),
              "rocl_recv");
        release(p);
      }
      check(rocl_send(ports[0].gid(), source, kTagPortsAck, nullptr, 0), "rocl_send (ack)");
    }
  }
}

}  // namespace

int ports_rank_main(const CompareOptions &o) {
  const int rank = job_rank();
  pin_process_to_rank_cpu(rank);
  check(rocl_init(), "rocl_init");
  const int most = *std::max_element(o.ports.begin(), o.ports.end());
  int status = 0;
  if (rank == 0) {
    BenchResource self("compare-source", 0);
    std::vector<rocl_gid_t> peer;
    for (int k = 0; k < most; ++k)
      peer.push_back(BenchResource::find("compare-port", k, kFindTimeout));
    status = drive(o, self.gid(), peer);
  } else {
    std::vector<BenchResource> ports;
    for (int k = 0; k < most; ++k) ports.emplace_back("compare-port", k);
    status = serve(ports, BenchResource::find("compare-source", 0, kFindTimeout));
  }
  check(rocl_exit(), "rocl_exit");
  return status;
}

}  // namespace rocl_bench::compare
