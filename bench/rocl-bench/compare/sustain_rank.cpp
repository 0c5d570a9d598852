// sustain_rank.cpp - the ranks of the sustainability stage with rocl (see
// rocl_ranks.hpp and bench/anchors/sustain_kernel.h, whose compute loop and
// phases bench/anchors/mpi_sustain.c runs with MPI).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "bench_kernels.hpp"
#include "check.hpp"
#include "report.hpp"
#include "rocl/rocl.h"
#include "rocl_ranks.hpp"
#include "sustain_kernel.h"  // bench/anchors/
#include "timing.hpp"

namespace rocl_bench::compare {
namespace {

constexpr int kTagControl = 30;
constexpr int kTagData = 31;
constexpr int kTagResult = 32;
constexpr double kFindTimeout = 30;

std::atomic<double> g_sink{0};

// The compute thread of a phase: units of sustain_unit until stopped.
class ComputeThread {
 public:
  void start() {
    stop_.store(false);
    thread_ = std::thread([this] {
      std::vector<double> v(SUSTAIN_VECTOR);
      for (int i = 0; i < SUSTAIN_VECTOR; ++i) v[static_cast<std::size_t>(i)] = i;
      double sum = 0, units = 0;
      const auto start = Clock::now();
      while (!stop_.load(std::memory_order_relaxed)) {
        sum += sustain_unit(v.data());
        ++units;
      }
      seconds_ = seconds_since(start);
      units_ = units;
      g_sink.store(sum, std::memory_order_relaxed);
    });
  }
  // Stops it; its units per second.
  double stop() {
    stop_.store(true);
    thread_.join();
    return units_ / seconds_;
  }

 private:
  std::atomic<bool> stop_{false};
  double units_ = 0, seconds_ = 0;
  std::thread thread_;
};

struct Pair {
  rocl_gid_t self, peer;
};

// Rank 0: round trips of `size` bytes for `seconds`; seconds per round trip.
double ping_for(const Pair &p, std::size_t size, double seconds) {
  auto *buf = static_cast<char *>(check_buffer(rocl_bfget(size), "rocl_bfget"));
  long n = 0;
  const auto start = Clock::now();
  char flag = 0;
  do {
    ++n;
    flag = seconds_since(start) >= seconds ? SUSTAIN_LAST : SUSTAIN_GO_ON;
    buf[0] = flag;
    check(rocl_bftoret(buf), "rocl_bftoret");
    check(rocl_send(p.self, p.peer, kTagData, buf, size), "rocl_send");
    void *back = nullptr;
    check(rocl_recv(p.self, p.peer, kTagData, &back, nullptr, nullptr, nullptr, -1), "rocl_recv");
    buf = static_cast<char *>(back);
    if (buf[0] != flag) die("sustain: the echo changed the message");
  } while (flag != SUSTAIN_LAST);
  const double per_round_trip = seconds_since(start) / static_cast<double>(n);
  check(rocl_bfret(buf), "rocl_bfret");
  return per_round_trip;
}

// Rank 1: sends every message straight back, until the last one.
void echo_until_last(const Pair &p) {
  char flag = 0;
  do {
    void *buf = nullptr;
    std::size_t len = 0;
    check(rocl_recv(p.self, p.peer, kTagData, &buf, nullptr, nullptr, &len, -1), "rocl_recv");
    flag = len > 0 ? static_cast<char *>(buf)[0] : static_cast<char>(SUSTAIN_LAST);
    check(rocl_bftoret(buf), "rocl_bftoret");
    check(rocl_send(p.self, p.peer, kTagData, buf, len), "rocl_send");
  } while (flag != SUSTAIN_LAST);
}

template <class T>
void send_value(const Pair &p, int tag, T value) {
  check(rocl_send(p.self, p.peer, tag, &value, sizeof value), "rocl_send");
}

template <class T>
T receive_value(const Pair &p, int tag) {
  void *buf = nullptr;
  std::size_t len = 0;
  check(rocl_recv(p.self, p.peer, tag, &buf, nullptr, nullptr, &len, -1), "rocl_recv");
  T value{};
  if (len != sizeof value) die("sustain: a message of %zu bytes with tag %d", len, tag);
  std::memcpy(&value, buf, sizeof value);
  check(rocl_bfret(buf), "rocl_bfret");
  return value;
}

void print_row(const char *name, std::size_t size, std::vector<double> samples, const char *unit) {
  const Row row = summarize(name, size, 1, std::move(samples), unit);
  std::printf("%s,%zu,1,%.9g,%.9g,%.9g,%s\n", name, size, row.median, row.min, row.max, unit);
}

void sleep_seconds(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

int drive(const CompareOptions &o, const Pair &p) {
  const double t = o.sustain_seconds;
  const std::size_t size = o.sustain_size;
  ping_for(p, size, std::min(t / 4, 0.05));  // warm-up
  std::vector<double> ex0, excs, rt0, rtcs;
  ComputeThread compute;
  for (int rep = 0; rep < o.reps; ++rep) {
    send_value<int>(p, kTagControl, SUSTAIN_COMPUTE);
    compute.start();
    sleep_seconds(t);
    ex0.push_back((compute.stop() + receive_value<double>(p, kTagResult)) / 1e6);

    send_value<int>(p, kTagControl, SUSTAIN_PINGPONG);
    rt0.push_back(ping_for(p, size, t) * 1e6);

    send_value<int>(p, kTagControl, SUSTAIN_BOTH);
    compute.start();
    rtcs.push_back(ping_for(p, size, t) * 1e6);
    excs.push_back((compute.stop() + receive_value<double>(p, kTagResult)) / 1e6);
  }
  send_value<int>(p, kTagControl, SUSTAIN_QUIT);
  std::printf("benchmark,size_bytes,pairs,median,min,max,unit\n");
  print_row("compute-alone", size, ex0, "M units/s");
  print_row("compute-with-pingpong", size, excs, "M units/s");
  print_row("rtt-alone", size, rt0, "us");
  print_row("rtt-with-compute", size, rtcs, "us");
  std::fflush(stdout);
  return 0;
}

int serve(const CompareOptions &o, const Pair &p) {
  ComputeThread compute;
  echo_until_last(p);  // warm-up
  for (;;) {
    switch (receive_value<int>(p, kTagControl)) {
      case SUSTAIN_COMPUTE:
        compute.start();
        sleep_seconds(o.sustain_seconds);
        send_value<double>(p, kTagResult, compute.stop());
        break;
      case SUSTAIN_PINGPONG:
        echo_until_last(p);
        break;
      case SUSTAIN_BOTH:
        compute.start();
        echo_until_last(p);
        send_value<double>(p, kTagResult, compute.stop());
        break;
      case SUSTAIN_QUIT:
        return 0;
      default:
        die("sustain: unknown control message");
    }
  }
}

}  // namespace

int sustain_rank_main(const CompareOptions &o) {
  const int rank = job_rank();
  pin_process_to_rank_cpu(rank);
  check(rocl_init(), "rocl_init");
  int status = 0;
  {
    BenchResource self(rank == 0 ? "sustain-0" : "sustain-1", 0);
    const Pair p{self.gid(),
                 BenchResource::find(rank == 0 ? "sustain-1" : "sustain-0", 0, kFindTimeout)};
    status = rank == 0 ? drive(o, p) : serve(o, p);
  }
  check(rocl_exit(), "rocl_exit");
  return status;
}

}  // namespace rocl_bench::compare
