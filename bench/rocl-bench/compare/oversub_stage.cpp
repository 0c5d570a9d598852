// oversub_stage.cpp - the configurations of the oversub stage (see
// oversub.hpp and stages.hpp). Each point runs as a program of its own
// under its own time limit, so that a point slower than its limit is
// stopped and shown as "timeout" while the others still give figures; a
// point that timed out is not run again in later rounds.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "oversub.hpp"
#include "report.hpp"
#include "stages.hpp"

namespace rocl_bench::compare {
namespace {

// A point a program is expected to print.
struct Expected {
  std::string metric, system;
  int pairs;
};

bool timed_out_before(const RunRequest &r, const Expected &e) {
  if (r.timed_out == nullptr) return false;
  return std::any_of(r.timed_out->begin(), r.timed_out->end(), [&](const TimedOut &t) {
    return t.metric == e.metric && t.system == e.system && t.pairs == e.pairs;
  });
}

}  // namespace

std::vector<Sample> oversub_samples(const std::vector<CsvRow> &rows, const std::string &system,
                                    int round) {
  std::vector<Sample> out;
  for (const auto &r : rows) {
    const std::size_t slash = r.benchmark.find('/');
    Sample s{r.benchmark, system, r.size, r.pairs, round, r.median, r.min, r.max, r.unit};
    if (slash != std::string::npos) {
      s.system = r.benchmark.substr(0, slash);
      s.metric = r.benchmark.substr(slash + 1);
    }
    if (s.unit == "Mmsg/s") s.unit = "M msg/s";
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// Runs one program that measures `points` and adds what it gave to `out`:
// the figures printed, and for a program stopped by its time limit a
// timeout for each point it did not print. Points that timed out in an
// earlier round are not run again (a timeout "skipped"). `point`, when not
// 0, is the point of every row (mpi_bench numbers its rows by threads, 1).
// False (out.why set) when the program failed otherwise or left a point out.
bool run_points(const RunRequest &r, const Invocation &inv, const std::string &system,
                const std::vector<Expected> &points, RunOutcome &out, int point = 0) {
  auto note = [&](const Expected &e, bool skipped) {
    out.timeouts.push_back({e.metric, e.system, oversub_size(e.metric, e.system), e.pairs, r.round,
                            inv.timeout_seconds, skipped});
  };
  if (std::all_of(points.begin(), points.end(),
                  [&](const Expected &e) { return timed_out_before(r, e); })) {
    for (const auto &e : points) note(e, true);
    return true;
  }
  const ChildResult c = run_child(inv);
  // roclrun --timeout stops its job first and exits 124.
  const bool late = c.timed_out || (c.started && inv.argv.front() == r.programs.roclrun.path &&
                                    WIFEXITED(c.status) && WEXITSTATUS(c.status) == 124);
  const std::string log = read_file(inv.log);
  std::vector<Sample> got = oversub_samples(parse_rows(log), system, r.round);
  if (point != 0) {
    for (auto &s : got) s.pairs = point;
  }
  if (!c.ok() && !late) {
    const std::string line = c.started && !c.interrupted ? failure_line(log) : "";
    out.why = c.describe() + (line.empty() ? "" : ": " + line) + " (log: " + inv.log + ")";
    return false;
  }
  for (const auto &e : points) {
    const bool printed = std::any_of(got.begin(), got.end(), [&](const Sample &s) {
      return s.metric == e.metric && s.system == e.system && s.pairs == e.pairs;
    });
    if (printed) continue;
    if (!late) {
      out.why = "printed no figure for " + e.system + " " + e.metric + " " +
                std::to_string(e.pairs) + ": " + failure_line(log) + " (log: " + inv.log + ")";
      return false;
    }
    note(e, false);
  }
  for (auto &s : got) out.samples.push_back(std::move(s));
  return true;
}

// The log of one of a run's programs: <round>-oversub-<system>-<what>.log.
std::string log_of(const RunRequest &r, const std::string &what) {
  return r.scratch + "-" + what + ".log";
}

// Seconds a thread or process point may take: its planned time, ten times
// over, and the start of up to 4 x cpus processes.
double point_limit(const CompareOptions &o) {
  return 15 + 10 * (o.reps + 1.1) * o.seconds;
}

// Seconds an MPI run of one collective may take: the launch, and 5 ms per
// call on average (a busy-polling MPI oversubscribed can take a time slice
// per rank and call: it then shows as a timeout rather than hold the run).
double collective_limit(const CompareOptions &o) {
  return 5 + 1.1 * static_cast<double>(o.oversub_iters) * 0.005;
}

std::vector<OversubPoint> thread_points() {
  std::vector<OversubPoint> points = {{"pingpong-onecpu", 2}};
  for (const char *metric : {"pingpong", "ring", "rate"}) {
    for (int load : kOversubLoads) points.push_back({metric, load});
  }
  for (const char *metric : {"pingpong-busy", "ring-busy"}) {
    for (int busy : kOversubBusy) points.push_back({metric, busy});
  }
  return points;
}

std::vector<OversubPoint> process_points() {
  std::vector<OversubPoint> points = {{"pingpong-onecpu", 2}};
  for (int load : kOversubLoads) points.push_back({"ring", load});
  return points;
}

std::vector<std::string> common_args(const CompareOptions &o, const OversubPoint &p) {
  return {
      "--oversub", p.text(), "--reps", std::to_string(o.reps), "--time", std::to_string(o.seconds)};
}

RunOutcome run_threads_config(const RunRequest &r) {
  RunOutcome out;
  for (const auto &p : thread_points()) {
    Invocation inv;
    inv.argv = {r.programs.self, "compare", "--rank", "oversub-threads"};
    for (auto &a : common_args(r.options, p)) inv.argv.push_back(std::move(a));
    inv.log = log_of(r, p.text());
    inv.timeout_seconds = point_limit(r.options);
    if (!run_points(r, inv, "rocl-inproc", {{p.metric, "rocl-inproc", p.value}}, out)) return out;
  }
  out.ok = true;
  return out;
}

RunOutcome run_processes_config(const RunRequest &r) {
  RunOutcome out;
  const CompareOptions &o = r.options;
  for (const auto &p : process_points()) {
    const double limit = point_limit(o);
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.0f", limit);
    Invocation inv;
    inv.argv = {r.programs.roclrun.path,
                "--timeout",
                seconds,
                "-n",
                std::to_string(oversub_members(p, r.programs.cpus.size())),
                r.programs.self,
                "compare",
                "--rank",
                "oversub-ring"};
    for (auto &a : common_args(o, p)) inv.argv.push_back(std::move(a));
    inv.env = {{"ROCL_TRANSPORTS", "shm"}};
    inv.log = log_of(r, p.text());
    inv.timeout_seconds = limit + 5;  // roclrun stops the job first, with status 124
    if (!run_points(r, inv, "rocl-shm", {{p.metric, "rocl-shm", p.value}}, out)) return out;
  }
  out.ok = true;
  return out;
}

RunOutcome run_limits_config(const RunRequest &r) {
  RunOutcome out;
  const CompareOptions &o = r.options;
  const auto &cpus = r.programs.cpus;
  Invocation inv;
  inv.argv = {r.programs.oversub_limits.path,
              "--cpus",
              std::to_string(cpus[0]) + "," + std::to_string(cpus[1]),
              "--reps",
              std::to_string(o.reps),
              "--time",
              std::to_string(o.seconds),
              "--busy",
              join_ints(std::vector<int>(std::begin(kOversubBusy), std::end(kOversubBusy)))};
  inv.log = r.log;
  inv.timeout_seconds = point_limit(o) + 5 * 10 * (o.reps + 1.1) * o.seconds;  // five points
  std::vector<Expected> points = {
      {"pingpong-onecpu", "futex", 2}, {"pingpong", "futex", 1}, {"pingpong-onecpu", "yield", 2}};
  for (int busy : kOversubBusy) points.push_back({"pingpong-busy", "futex", busy});
  out.ok = run_points(r, inv, "futex", points, out);
  return out;
}

// mpi_bench coll (8 B, a fixed count of calls) under `launch(ranks)`, a
// run per collective and load, so that one collective's timeout leaves the
// others measured.
RunOutcome run_collectives(const RunRequest &r, const std::string &system,
                           const std::function<std::vector<std::string>(int)> &launch) {
  RunOutcome out;
  const CompareOptions &o = r.options;
  for (int per_cpu : kOversubRanksPerCpu) {
    const int ranks = per_cpu * static_cast<int>(r.programs.cpus.size());
    for (const char *c : kOversubCollectives) {
      Invocation inv;
      inv.argv = launch(ranks);
      for (const std::string &a :
           {std::string("coll"), std::string("--coll"), std::string(c), std::string("--sizes"),
            std::string("8"), std::string("--reps"), std::string("1"), std::string("--iters"),
            std::to_string(o.oversub_iters), std::string("--warmup"),
            std::to_string(std::max(1L, o.oversub_iters / 10))}) {
        inv.argv.push_back(a);
      }
      inv.log = log_of(r, std::string(c) + "-" + std::to_string(ranks));
      inv.timeout_seconds = collective_limit(o);
      if (!run_points(r, inv, system, {{c, system, per_cpu}}, out, per_cpu)) return out;
    }
  }
  out.ok = true;
  return out;
}

}  // namespace

std::vector<Config> oversub_configs(const CompareOptions &o, const Programs &p) {
  std::vector<Config> all;
  const std::string needs_two_cpus =
      p.cpus.size() < 2 ? "needs 2 usable cpus, " + std::to_string(p.cpus.size()) + " here" : "";
  auto add = [&](const char *name, const char *about, std::string why,
                 std::function<RunOutcome(const RunRequest &)> run, std::size_t expected) {
    if (why.empty()) why = needs_two_cpus;
    all.push_back({name, "", about, why, std::move(run), expected});
  };
  add("limits",
      "oversub_limits: futex and sched_yield ping-pong of two threads on one cpu, futex on two "
      "cpus, alone and beside busy loops",
      first_missing({&p.oversub_limits}), run_limits_config, 3 + std::size(kOversubBusy));
  add("rocl-inproc",
      "compare --rank oversub-threads, a program per point: threads of one process pinned "
      "round-robin, 8 B zero-copy hand-offs",
      "", run_threads_config, thread_points().size());
  add("rocl-shm",
      "compare --rank oversub-ring under roclrun, ROCL_TRANSPORTS=shm: a ring of 1, 2, 4 processes "
      "per cpu, and a ping-pong of 2 processes on one cpu",
      first_missing({&p.roclrun}), run_processes_config, process_points().size());
  const std::size_t collectives = std::size(kOversubRanksPerCpu) * std::size(kOversubCollectives);
  add(
      "rocl-mpi", "mpi_bench.rocl coll under roclrun --bind-to core, 2 and 4 ranks per cpu",
      first_missing({&p.roclrun, &p.mpi_bench_rocl}),
      [](const RunRequest &r) {
        return run_collectives(r, "rocl-mpi", [&](int ranks) {
          return std::vector<std::string>{
              r.programs.roclrun.path,       "--bind-to", "core", "-n", std::to_string(ranks),
              r.programs.mpi_bench_rocl.path};
        });
      },
      collectives);
  add(
      "ompi-vader",
      "mpi_bench.openmpi coll, pml ob1 + btl vader, --oversubscribe --bind-to "
      "core:overload-allowed",
      first_missing({&p.mpirun_openmpi, &p.mpi_bench_openmpi}),
      [](const RunRequest &r) {
        return run_collectives(r, "ompi-vader", [&](int ranks) {
          auto argv = openmpi_launch(r.programs, openmpi_mca("vader"), ranks);
          argv.push_back(r.programs.mpi_bench_openmpi.path);
          return argv;
        });
      },
      collectives);
  add(
      "mpich", "mpi_bench.mpich coll, ch4:ucx, mpiexec -bind-to core",
      first_missing({&p.mpiexec_mpich, &p.mpi_bench_mpich}),
      [](const RunRequest &r) {
        return run_collectives(r, "mpich", [&](int ranks) {
          auto argv = mpich_launch(r.programs, ranks);
          argv.push_back(r.programs.mpi_bench_mpich.path);
          return argv;
        });
      },
      collectives);
  return keep_selected(o, std::move(all));
}

}  // namespace rocl_bench::compare
