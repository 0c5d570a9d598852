// main.cpp - rocl-demo: processes and threads find each other through rocl
// and exchange messages; a table of figures ends it.
//
//   roclrun -n 2 rocl-demo    every process of the job runs worker threads
//   rocl-demo                 alone: the threads of this one process
//
// Each main thread starts the workers and keeps its process in step with
// the others (Job: a barrier between processes, then a barrier with its own
// workers, around every phase). Only rank 0 prints: the other ranks send it
// their lines and figures. Every receive has a timeout, so a lost message
// ends the demo with an error instead of a hang.
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include "demo.hpp"

namespace demo {
namespace {

void introduce(const Shared &s, const Job &job, bool in_job) {
  if (job.size() > 1) {
    std::printf(
        "rocl-demo: a job of %d processes started by roclrun, with %d worker threads each.\n"
        "Each process called rocl_init(): its context holds the buffer pool, the access to\n"
        "the job's directory (a server inside roclrun) and the transports. Rank 0 tells the\n"
        "story (roclrun puts \"[0] \" in front); the other ranks send it what they saw.\n",
        job.size(), s.threads);
  } else {
    std::printf(
        "rocl-demo: %d worker threads of this process talk to each other through rocl.\n"
        "%s, so only threads take part. To see\n"
        "processes too, run it under roclrun: build/tools/roclrun/roclrun -n 2 %s\n"
        "(what scripts/demo.sh does). rocl_init() created the process's context: the\n"
        "buffer pool, the directory access and the transports, shared by every thread.\n",
        s.threads, in_job ? "A job of one process" : "No roclrun job here (ROCL_RANK is not set)",
        "build/examples/rocl-demo");
  }
  const int workers = job.size() * s.threads, cpus = usable_cpus();
  if (cpus < workers) {
    std::printf(
        "This machine gives us %d cpus for %d worker threads: threads take turns, and a\n"
        "waiting receiver gives its cpu to the others that share it (ROCL_WAIT=%s).\n",
        cpus, workers, option_in_force("ROCL_WAIT").c_str());
  }
  double load = 0;
  if (std::FILE *f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = 0;
    std::fclose(f);
  }
  if (load > 0.5 * cpus) {
    std::printf(
        "The machine is busy (load average %.1f on %d cpus): other programs compete\n"
        "with the workers, so expect slower, noisier figures.\n",
        load, cpus);
  }
}

const char kUsage[] =
    "usage: rocl-demo [--threads N] [--quick]\n"
    "  roclrun -n 2 rocl-demo   processes and threads (every process runs the workers)\n"
    "  rocl-demo                alone: the threads of this process\n"
    "  --threads N   worker threads per process, 2..64 (default: 2 in a job, 4 alone)\n"
    "  --quick       shorter phases (about a second in all), for tests\n";

// A mistake on the command line: one line naming it (from rank 0 only, as
// every rank makes it); exit status 2.
int usage_error(int rank, const std::string &why) {
  if (rank == 0) std::fprintf(stderr, "rocl-demo: %s (see rocl-demo --help)\n", why.c_str());
  return 2;
}

// Fills *set from the command line. An exit status when the program should
// end here (0 after --help, 2 after a mistake): returned, not exit()ed, so
// that the caller's context closes before the static destructors run.
std::optional<int> parse(int argc, char **argv, int rank, bool in_job, Settings *set) {
  set->threads = in_job ? 2 : 4;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    std::string value;
    if (arg == "--help" || arg == "-h") {
      if (rank == 0) std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--quick") {
      set->quick = true;
      set->ring_laps = 200;
      set->ring_seconds = 0.2;
      set->ping_seconds = 0.03;
      set->rate_seconds = 0.1;
      continue;
    } else if (arg == "--threads") {
      if (i + 1 >= argc) return usage_error(rank, "--threads needs a number");
      value = argv[++i];
    } else if (arg.starts_with("--threads=")) {
      value = std::string(arg.substr(10));
    } else {
      return usage_error(
          rank, std::string(arg.starts_with("-") ? "unknown option '" : "unexpected argument '") +
                    std::string(arg) + "'");
    }
    char *end = nullptr;
    const long n = std::strtol(value.c_str(), &end, 10);
    if (end == value.c_str() || *end != '\0' || n < 2 || n > 64) {
      return usage_error(rank, "--threads wants a number from 2 to 64, not '" + value + "'");
    }
    set->threads = static_cast<int>(n);
  }
  return std::nullopt;
}

}  // namespace
}  // namespace demo

int main(int argc, char **argv) {
  using namespace demo;
  try {
    // rocl_init first: roclrun gives every process ROCL_RANK and ROCL_SIZE,
    // and under mpirun or srun (PMIx) rocl_init sets them; without them the
    // demo runs alone.
    rocl::Context context;
    const char *rank_env = std::getenv("ROCL_RANK");
    const char *size_env = std::getenv("ROCL_SIZE");
    const int rank = rank_env != nullptr ? std::atoi(rank_env) : 0;
    const int size = rank_env != nullptr && size_env != nullptr ? std::atoi(size_env) : 1;
    if (size < 1 || rank < 0 || rank >= size) {
      std::fprintf(stderr, "rocl-demo: ROCL_RANK=%s and ROCL_SIZE=%s make no sense together\n",
                   rank_env, size_env != nullptr ? size_env : "(unset)");
      return 2;
    }
    Settings settings;
    if (const std::optional<int> status = parse(argc, argv, rank, size > 1, &settings)) {
      return *status;
    }
    if (size > 1) set_process_label("rank " + std::to_string(rank));
    Job job(rank, size);
    Shared s(settings, job);
    if (rank == 0) introduce(s, job, rank_env != nullptr);
    std::jthread watchdog([&s](std::stop_token stop) {
      std::mutex mutex;
      std::condition_variable_any cv;
      std::unique_lock lock(mutex);
      cv.wait_for(lock, stop, kWatchdog, [] { return false; });
      if (!stop.stop_requested()) {
        fail("the watchdog", "still running after " + std::to_string(kWatchdog.count()) +
                                 " s, in phase '" + s.now.load() + "'");
      }
    });
    std::vector<std::thread> workers;
    for (int i = 0; i < settings.threads; ++i) workers.emplace_back(run_worker, std::ref(s), i);
    tell_story(s, job);
    for (auto &t : workers) t.join();
    job.finish();
  } catch (const rocl::Error &e) {
    fail("the main thread", e);
  } catch (const std::exception &e) {
    fail("the main thread", e.what());
  }
  return 0;
}
