// goals.cpp - the goals of issue 5, judged on a comparison's figures (see
// results.hpp): each printed ok or MISS with the points that met it, or
// "not judged" when a side of it was not measured.
#include <algorithm>
#include <cstdio>
#include <set>

#include "report.hpp"
#include "results.hpp"

namespace rocl_bench::compare {
namespace {

struct Verdict {
  int met = 0, points = 0;
  std::string worst;  // the point furthest from the goal
};

void print_verdict(std::FILE *out, const char *goal, const Verdict &v) {
  if (v.points == 0) {
    std::fprintf(out, "  %-5s %s (not judged: a side was not measured)\n", "-", goal);
    return;
  }
  std::fprintf(out, "  %-5s %s (%d of %d point(s)%s%s)\n", v.met == v.points ? "ok" : "MISS", goal,
               v.met, v.points, v.worst.empty() ? "" : "; worst: ", v.worst.c_str());
}

// rocl's figure against `factor` x the best of `anchors`, at every size of
// the p2p metric. Lower is better for latency: rocl x factor <= best.
Verdict judge_sizes(const StageRun &run, const std::string &metric, const std::string &subject,
                    const std::vector<std::string> &anchors, double factor, Figure f) {
  Verdict v;
  std::set<std::size_t> sizes;
  for (const auto &s : run.summary) {
    if (s.metric == metric && s.system == subject) sizes.insert(s.size);
  }
  double worst = -1;
  for (std::size_t size : sizes) {
    const Summary *mine = run.find(metric, subject, size);
    const Summary *best = best_of(run.summary, metric, anchors, size, 1, f);
    if (mine == nullptr || best == nullptr) continue;
    ++v.points;
    const double m = figure_of(*mine, f), b = figure_of(*best, f);
    // how far rocl is from the goal: > 1 misses
    const double gap = lower_is_better(metric) ? m * factor / b : b * factor / m;
    if (gap <= 1) ++v.met;
    if (gap > worst) {
      worst = gap;
      v.worst = format_size(size) + " rocl " + format_figure(m) + " vs " + best->system + " " +
                format_figure(b);
    }
  }
  return v;
}

// The most rounds a point of `run` was measured in.
int rounds_of(const StageRun &run) {
  int n = 0;
  for (const auto &s : run.summary) n = std::max(n, s.rounds);
  return n;
}

// The p2p goals, judged on figure `f` of rocl's systems and the anchors.
void print_p2p_goals(std::FILE *out, const StageRun &p2p, Figure f) {
  const auto shm = anchors_in(p2p, "shm");
  // rocl-bench's buffer API, then rocl's MPI (the anchors' own program,
  // mpi_pingpong): each judged on lines of its own, never merged.
  struct Way {
    std::string label, shm, tcp;
    std::string shm_no_acks;  // its stream without acks, "" for none
  };
  for (const Way &w : {Way{"", "rocl-shm", "rocl-tcp", "rocl-shm-noack"},
                       Way{"rocl's MPI: ", "rocl-mpi-shm", "rocl-mpi-tcp", ""}}) {
    print_verdict(out, (w.label + "shm latency <= best shared-memory anchor at every size").c_str(),
                  judge_sizes(p2p, "latency", w.shm, shm, 1, f));
    print_verdict(
        out, (w.label + "shm bandwidth >= best shared-memory anchor at every size").c_str(),
        judge_sizes(p2p, "bandwidth", w.shm, anchors_like(p2p, "bandwidth", w.shm, shm), 1, f));
    if (!w.shm_no_acks.empty()) {  // ucx_perftest's stream, without acks, beside rocl's without
      print_verdict(out, "shm bandwidth without acks >= ucx_perftest's (no acks) at every size",
                    judge_sizes(p2p, "bandwidth", w.shm_no_acks,
                                anchors_like(p2p, "bandwidth", w.shm_no_acks, shm), 1, f));
    }
    print_verdict(out, (w.label + "tcp latency <= Open MPI's tcp path at every size").c_str(),
                  judge_sizes(p2p, "latency", w.tcp, {"ompi-tcp"}, 1, f));
  }
  print_verdict(out, "inproc latency 100x below ZeroMQ inproc at every size",
                judge_sizes(p2p, "latency", "rocl-inproc", {"zmq-inproc"}, 100, f));
}

}  // namespace

// The p2p goals are judged twice when there was more than one round: on
// the medians of the rounds (the tables' figures), then on each system's
// best round, rocl's and the anchors' alike. On a VM whose slow phases
// (2-5x, seconds long) hit some rounds of some systems only, the medians
// say which system the phases hit most; the best rounds compare each
// system at its fastest.
void print_goals(std::FILE *out, const Results &results, bool quick) {
  std::fprintf(out, "\ngoals (issue 5)%s:\n",
               quick ? ", judged on --quick figures (one short repetition: not a verdict)" : "");
  bool judged_twice = false;
  if (const StageRun *p2p = results.find("p2p")) {
    const int rounds = rounds_of(*p2p);
    judged_twice = rounds > 1;
    if (judged_twice) std::fprintf(out, "  on the medians of the rounds (the tables' figures):\n");
    print_p2p_goals(out, *p2p, Figure::kMedian);
    if (judged_twice) {
      std::fprintf(out, "  on each system's best round (its fastest of the %d):\n", rounds);
      print_p2p_goals(out, *p2p, Figure::kBestRound);
    }
  }
  if (judged_twice && (results.find("threads") != nullptr || results.find("sustain") != nullptr)) {
    std::fprintf(out, "  on the medians of the rounds:\n");  // the goals below
  }
  if (const StageRun *threads = results.find("threads")) {
    Verdict v;
    const Summary *mine = threads->find("threads", "rocl-shm", 8, 8);
    const Summary *best =
        best_of(threads->summary, "threads", {"ompi-vader", "ompi-ucx", "mpich"}, 8, 8);
    if (mine != nullptr && best != nullptr) {
      v.points = 1;
      v.met = mine->median >= 3 * best->median ? 1 : 0;
      v.worst = "rocl " + format_figure(mine->median) + " vs " + best->system + " " +
                format_figure(best->median) + " M msg/s";
    }
    print_verdict(out, "8 thread pairs: message rate >= 3x the better MPI", v);
  }
  if (const StageRun *sustain = results.find("sustain")) {
    const auto figures = sustainability(*sustain);
    for (const auto &[transport, mpi] :
         {std::pair<std::string, std::string>{"shm", "ompi-vader"}, {"tcp", "ompi-tcp"}}) {
      Verdict v;
      double rocl = 0, other = 0;
      for (const auto &s : figures) {
        if (s.config.rfind("rocl-" + transport + "-", 0) == 0) rocl = std::max(rocl, s.geomean);
        if (s.config == mpi) other = s.geomean;
      }
      if (rocl > 0 && other > 0) {
        v.points = 1;
        v.met = rocl >= other ? 1 : 0;
        v.worst = "rocl " + format_figure(rocl) + " vs " + mpi + " " + format_figure(other);
      }
      const std::string goal =
          "sustainability geomean over " + transport + " >= Open MPI's (" + mpi + ")";
      print_verdict(out, goal.c_str(), v);
    }
  }
}

}  // namespace rocl_bench::compare
