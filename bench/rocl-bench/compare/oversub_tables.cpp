// oversub_tables.cpp - the oversub stage on the terminal (see oversub.hpp):
// the time per hop next to the kernel's own hand-offs, the message rate,
// and the MPI collectives.
#include <algorithm>
#include <cstdio>
#include <initializer_list>

#include "oversub.hpp"
#include "results.hpp"
#include "text_table.hpp"
#include "threads.hpp"

namespace rocl_bench::compare {
namespace {

// The configuration that measures `system`: futex and yield are the limits'.
std::string config_of(const std::string &system) {
  return system == "futex" || system == "yield" ? "limits" : system;
}

// "0.52 (0.5-0.61)": the median of the rounds, the min and max over every
// repetition; else timeout, n/a, failed or -.
std::string cell(const StageRun &run, const std::string &metric, const std::string &system,
                 int pairs) {
  if (oversub_timed_out(run, metric, system, pairs)) return "timeout";
  if (const Summary *s = oversub_find(run, metric, system, pairs)) {
    if (s->min == s->max) return format_figure(s->median);
    return format_figure(s->median) + " (" + format_figure(s->min) + "-" + format_figure(s->max) +
           ")";
  }
  const Config *c = run.config(config_of(system));
  if (c != nullptr && !c->unavailable.empty()) return "n/a";
  if (c != nullptr && run.result.failed.count(c->name) != 0) return "failed";
  return "-";
}

// `mine` over `base`'s median, or "".
std::string ratio(const Summary *mine, const Summary *base) {
  if (mine == nullptr || base == nullptr || !is_sane(mine->median) || !is_sane(base->median)) {
    return "";
  }
  return format_figure(mine->median / base->median);
}

struct HopRow {
  std::string metric;
  int pairs;
  std::string label;
};

std::vector<HopRow> hop_rows() {
  std::vector<HopRow> rows = {{"pingpong-onecpu", 2, "ping-pong, both on one cpu"}};
  for (int n : kOversubLoads)
    rows.push_back({"pingpong", n, "ping-pong, " + std::to_string(n) + "/cpu"});
  for (int n : kOversubLoads) rows.push_back({"ring", n, "ring, " + std::to_string(n) + "/cpu"});
  for (int b : kOversubBusy) {
    rows.push_back({"pingpong-busy", b, "ping-pong 1/cpu + " + std::to_string(b) + " busy/cpu"});
  }
  for (int b : kOversubBusy) {
    rows.push_back({"ring-busy", b, "ring 1/cpu + " + std::to_string(b) + " busy/cpu"});
  }
  return rows;
}

void print_hops(std::FILE *out, const StageRun &run) {
  const char *const systems[] = {"futex", "yield", "rocl-inproc", "rocl-shm"};
  TextTable table(
      {"point", "futex", "yield", "rocl-inproc", "rocl-shm", "inproc/futex1", "shm/futex1"});
  const Summary *futex1 = oversub_find(run, "pingpong-onecpu", "futex", 2);
  for (const auto &r : hop_rows()) {
    std::vector<std::string> row = {r.label};
    for (const char *s : systems) row.push_back(cell(run, r.metric, s, r.pairs));
    row.push_back(ratio(oversub_find(run, r.metric, "rocl-inproc", r.pairs), futex1));
    row.push_back(ratio(oversub_find(run, r.metric, "rocl-shm", r.pairs), futex1));
    table.add(row);
  }
  std::fprintf(out,
               "\noversubscribed: time per hop (one-way), us, lower is better; median of the "
               "rounds (min-max of every repetition)\n");
  table.print(out);
  std::fprintf(out,
               "  (N/cpu: N threads (rocl-inproc) or processes (rocl-shm) per usable cpu, pinned "
               "round-robin; ping-pong: N x cpus / 2 pairs at once, the mean over the pairs; ring: "
               "one token round N x cpus members; busy: plain loops pinned to each cpu beside the "
               "1/cpu run; futex/yield: two threads handing a turn over with FUTEX_WAIT/WAKE or "
               "sched_yield, no payload; rocl: 8 B; x/futex1 = the figure over futex's ping-pong "
               "on one cpu, the kernel's hand-off)\n");
}

void print_rate(std::FILE *out, const StageRun &run) {
  TextTable table({"point", "rocl-inproc"});
  for (int n : kOversubLoads) {
    table.add({std::to_string(n) + "/cpu", cell(run, "rate", "rocl-inproc", n)});
  }
  std::fprintf(out,
               "\noversubscribed: message rate of 8 B streams, N x cpus / 2 thread pairs, M msg/s "
               "(higher is better)\n");
  table.print(out);
}

void print_collectives(std::FILE *out, const StageRun &run) {
  const char *const mpis[] = {"rocl-mpi", "ompi-vader", "mpich"};
  const std::size_t cpus = usable_cpus().size();
  TextTable table(
      {"collective", "ranks", "rocl-mpi", "ompi-vader", "mpich", "rocl-mpi/best", "best"});
  for (const char *c : kOversubCollectives) {
    for (int per_cpu : kOversubRanksPerCpu) {
      std::vector<std::string> row = {c, std::to_string(per_cpu * static_cast<int>(cpus)) + " (" +
                                             std::to_string(per_cpu) + "/cpu)"};
      for (const char *m : mpis) row.push_back(cell(run, c, m, per_cpu));
      const Summary *best = nullptr;
      for (const char *m : {"ompi-vader", "mpich"}) {
        const Summary *s = oversub_find(run, c, m, per_cpu);
        if (s != nullptr && (best == nullptr || s->median < best->median)) best = s;
      }
      row.push_back(ratio(oversub_find(run, c, "rocl-mpi", per_cpu), best));
      row.push_back(best != nullptr ? best->system : "");
      table.add(row);
    }
  }
  std::fprintf(
      out,
      "\noversubscribed MPI collectives: us per call (8 B; barrier none), a fixed count of "
      "calls per run, lower is better; timeout: the run passed its time limit\n");
  table.print(out);
}

}  // namespace

const Summary *oversub_find(const StageRun &run, const std::string &metric,
                            const std::string &system, int pairs) {
  for (const auto &s : run.summary) {
    if (s.metric == metric && s.system == system && s.pairs == pairs) return &s;
  }
  return nullptr;
}

bool oversub_timed_out(const StageRun &run, const std::string &metric, const std::string &system,
                       int pairs) {
  return std::any_of(run.result.timeouts.begin(), run.result.timeouts.end(),
                     [&](const TimedOut &t) {
                       return t.metric == metric && t.system == system && t.pairs == pairs;
                     });
}

void print_oversub(std::FILE *out, const StageRun &run) {
  auto any = [&](std::initializer_list<const char *> names) {
    return std::any_of(names.begin(), names.end(),
                       [&](const char *n) { return run.config(n) != nullptr; });
  };
  if (any({"limits", "rocl-inproc", "rocl-shm"})) print_hops(out, run);
  if (any({"rocl-inproc"})) print_rate(out, run);
  if (any({"rocl-mpi", "ompi-vader", "mpich"})) print_collectives(out, run);
}

}  // namespace rocl_bench::compare
