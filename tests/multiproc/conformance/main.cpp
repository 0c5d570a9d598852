// rocl_conformance: the cross-process conformance suite of the C API.
//
//   roclrun -n 2 rocl_conformance [--deadline S] case...   two processes
//   rocl_conformance --threads [--deadline S] case...      two threads, one process
//   rocl_conformance --list
//
// Every case runs as rank 0 and rank 1. Under roclrun the ranks are the two
// processes (ROCL_RANK 0/1) and the transport between them is whatever
// ROCL_TRANSPORTS enables (ctest runs every case with shm and with tcp).
// With --threads the two ranks are threads of this one process, with
// ROCL_TRANSPORTS, ROCL_DIRECTORY and ROCL_SECRET_FILE removed from the
// environment: a process on its own, i.e. the in-process hand-off (inproc).
// The case code is the same; cases that need real processes (a killed peer,
// a third process with a wrong secret) are skipped with --threads.
//
// "all" runs every case. Exit status: 0 all passed; 1 a check failed (the
// case, the rank, the check and rocl_last_error() are printed on stderr);
// 2 bad usage; 3 the watchdog stopped a case that ran past its deadline
// (30 to 60 s per case; --deadline S lowers it), printing the step each rank
// was in (and per-thread progress where a case gives it).
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cases.hpp"

namespace {

using conf::Rank;

struct Case {
  const char *name;
  void (*fn)(Rank &);
  bool processes_only;
  int deadline_s;  // the watchdog stops the case after this long
  const char *summary;
};

const Case kCases[] = {
    {"ordering", conf::case_ordering, false, 45,
     "10000 messages of 0 B..256 KiB per rank, two origins, arrive in order per pair"},
    {"wildcards", conf::case_wildcards, false, 30,
     "ROCL_ANY origin / tag, tag selection, origin selection with two senders"},
    {"timeouts", conf::case_timeouts, false, 30,
     "rocl_recv / rocl_wait time out in about the time asked; timeout 0 polls"},
    {"immediate", conf::case_immediate, false, 30,
     "isend / irecv / test / wait / cancel across the ranks"},
    {"sizes", conf::case_sizes, false, 60,
     "0 B..64 MiB, zero-copy buffers, kept buffers and user memory, echoed, checksummed"},
    {"threads", conf::case_threads, false, 45,
     "16 threads per rank, random traffic among 32 resources, each message exactly once"},
    {"slow_receiver", conf::case_slow_receiver, false, 45,
     "2000 x 64 KiB to a slow receiver: all arrive, the sender's RSS stays bounded"},
    {"unreceived", conf::case_unreceived, false, 45,
     "500 x 64 KiB sent before the receiver receives anything: rocl_send does not wait"},
    {"directory", conf::case_directory, false, 30,
     "register / query / multi-answer query / delete seen from the other rank"},
    {"stale_cache", conf::case_stale_cache, false, 30,
     "a send to a deleted resource whose route was cached fails with ROCL_EBADGID"},
    {"killed_peer", conf::case_killed_peer, true, 45,
     "a receive from a SIGKILLed process fails with ROCL_EPEER naming it, in time"},
    {"wrong_secret", conf::case_wrong_secret, true, 45,
     "a third process with a wrong or missing job secret gets a clear error"},
};

std::atomic<double> g_deadline{0};
std::atomic<int> g_signal{0};

void on_signal(int sig) {
  g_signal.store(sig);
}

// Ends the process when the case runs past its deadline, or when roclrun
// stops it (SIGTERM: the other rank failed or the job timed out), saying
// where this process's ranks were.
void watchdog() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const double d = g_deadline.load();
    const int sig = g_signal.load();
    if (sig == 0 && !(d > 0 && conf::now_ms() > d)) continue;
    std::string where;
    for (int r = 0; r < 2; ++r) {
      const std::string s = conf::describe_rank(r);
      if (!s.empty()) where += "    " + s + "\n";
    }
    std::fflush(stdout);
    if (sig != 0) {
      std::fprintf(
          stderr, "conformance: stopped by signal %d (roclrun stops every rank when one fails)\n%s",
          sig, where.c_str());
    } else {
      std::fprintf(stderr,
                   "FAIL conformance: watchdog: the case did not finish within its deadline\n%s",
                   where.c_str());
    }
    std::fflush(stderr);
    std::_Exit(sig != 0 ? 128 + sig : 3);
  }
}

// One rank of one case: context, control channel, the case, clean-up.
int run_rank(const Case &c, int rank, bool threaded) {
  Rank r;
  r.rank = rank;
  r.threaded = threaded;
  r.case_name = c.name;
  conf::RankScope scope(r);
  conf::register_rank(rank, &r);
  conf::step("rocl_init");
  const std::int64_t ctx = rocl_init();
  CHECK(ctx > 0, "rocl_init returned %s", conf::rc_text(ctx).c_str());
  r.ctl = conf::reg("ctl");
  r.peer_ctl = conf::find("ctl", r.peer());
  conf::barrier("start");
  const double t0 = conf::now_ms();
  c.fn(r);
  conf::barrier("end");
  const double t1 = conf::now_ms();
  for (rocl_gid_t g : r.owned) {
    const int rc = rocl_delete(g);
    CHECK(rc == ROCL_OK || rc == ROCL_EBADGID, "clean-up rocl_delete(%s) returned %s",
          conf::hex(g).c_str(), conf::rc_text(rc).c_str());
  }
  CHECK_RC(rocl_exit(), ROCL_OK);
  conf::register_rank(rank, nullptr);
  const int soft = r.soft_failures.load();
  conf::note("%s (%.0f ms)", soft == 0 ? "passed" : "FAILED", t1 - t0);
  return soft == 0 ? 0 : 1;
}

int usage(const char *why) {
  std::fprintf(stderr,
               "rocl_conformance: %s\n"
               "usage: roclrun -n 2 rocl_conformance [--deadline S] case...|all\n"
               "       rocl_conformance --threads [--deadline S] case...|all\n"
               "       rocl_conformance --list\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--victim") == 0) return conf::victim_main(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "--intruder") == 0) {
    return conf::intruder_main(argc, argv);
  }
  bool threaded = false;
  double deadline_cap_s = 1e9;
  std::vector<const Case *> run;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads") {
      threaded = true;
    } else if (a == "--deadline" && i + 1 < argc) {
      deadline_cap_s = std::atof(argv[++i]);
    } else if (a == "--list") {
      for (const Case &c : kCases) {
        std::printf("%-14s %s%s\n", c.name, c.summary, c.processes_only ? " [processes]" : "");
      }
      return 0;
    } else if (a == "all") {
      for (const Case &c : kCases) run.push_back(&c);
    } else {
      const Case *found = nullptr;
      for (const Case &c : kCases)
        if (a == c.name) found = &c;
      if (found == nullptr) return usage(("unknown case or option '" + a + "'").c_str());
      run.push_back(found);
    }
  }
  if (run.empty()) return usage("no case given");

  int rank = 0;
  if (threaded) {
    // A process on its own: the in-process hand-off between the two ranks.
    for (const char *v : {"ROCL_TRANSPORTS", "ROCL_DIRECTORY", "ROCL_SECRET_FILE", "ROCL_RANK",
                          "ROCL_SIZE", "ROCL_JOB_DIR"}) {
      ::unsetenv(v);
    }
  } else {
    const char *r = std::getenv("ROCL_RANK");
    const char *s = std::getenv("ROCL_SIZE");
    if (r == nullptr || s == nullptr || std::atoi(s) != 2) {
      return usage("run it under 'roclrun -n 2' (or give --threads)");
    }
    rank = std::atoi(r);
  }
  std::printf("rocl_conformance: %s, ROCL_TRANSPORTS=%s, seed %llu\n",
              threaded ? "two threads of one process (inproc)" : "two processes",
              threaded
                  ? "(unset)"
                  : (std::getenv("ROCL_TRANSPORTS") ? std::getenv("ROCL_TRANSPORTS") : "(unset)"),
              static_cast<unsigned long long>(conf::suite_seed()));
  std::fflush(stdout);
  if (!threaded) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
  }
  std::thread(watchdog).detach();

  int status = 0;
  for (const Case *c : run) {
    if (threaded && c->processes_only) {
      std::printf("%s: SKIPPED (needs real processes; not run with --threads)\n", c->name);
      continue;
    }
    g_deadline.store(conf::now_ms() + std::min<double>(c->deadline_s, deadline_cap_s) * 1000);
    if (threaded) {
      int rc[2] = {0, 0};
      std::thread t1([&] { rc[1] = run_rank(*c, 1, true); });
      rc[0] = run_rank(*c, 0, true);
      t1.join();
      if (rc[0] != 0 || rc[1] != 0) status = 1;
    } else if (run_rank(*c, rank, false) != 0) {
      status = 1;
    }
    g_deadline.store(0);
  }
  return status;
}
