// mpi_suite.cpp - see mpi_suite.hpp: the command line, the jobs, the run,
// the tables.
#include "mpi_suite.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "compare.hpp"
#include "goals.hpp"
#include "report.hpp"
#include "results.hpp"
#include "text_table.hpp"

namespace rocl_bench::compare {

const char kMpiUsage[] =
    "usage: rocl-bench mpi [OPTIONS] [-- MPI_BENCH_ARGS...]\n"
    "bench/mpi's suite (mpi_bench: OSU-style latency, bw, bibw, mbw_mr, mt_latency,\n"
    "mt_rate, mt_mprobe_rate, coll: barrier, bcast, reduce, allreduce; rma: put, get,\n"
    "acc, fop, cas latency, put and get bandwidth) under rocl's MPI (roclrun),\n"
    "Open MPI and MPICH, in interleaved\n"
    "rounds: one table per benchmark with the ratio of the subject to the best\n"
    "other MPI, the goals of stage mpi, a CSV and plots.\n"
    "\n"
    "  --mpis LIST     rocl,openmpi,mpich [all three]; openmpi means two\n"
    "                  configurations, openmpi (pml ob1, btl self,vader) and\n"
    "                  openmpi-ucx (pml ucx); openmpi-ob1 or openmpi-ucx names one\n"
    "  --bench LIST    latency,bw,bibw,mbw_mr,mt_latency,mt_rate,mt_mprobe_rate,coll,\n"
    "                  rma [all]\n"
    "  --rounds N      interleaved rounds, the order rotating [3; --quick: 1]\n"
    "  --quick         mpi_bench --quick: a few points, one short repetition\n"
    "  --mt-mode M     tag or comm, for mt_latency and mt_rate [tag]\n"
    "  --subject NAME  whose ratio to the best of the others the tables show [rocl]\n"
    "  --out DIR       mpi.csv, the plots and logs/ [rocl-bench-mpi]\n"
    "  --anchors DIR   the mpi_bench programs [compare/anchors next to rocl-bench]\n"
    "  --roclrun PATH  the roclrun of rocl's runs [as rocl-bench --transport finds it]\n"
    "  --goals FILE    the goals judged after the tables [goals.txt next to rocl-bench]\n"
    "  --no-plots      no gnuplot\n"
    "  -- ARGS         passed to every mpi_bench run (e.g. -- --reps 3 --time 0.1)\n"
    "\n"
    "Jobs per MPI and round: the single-threaded benchmarks (2 ranks), the\n"
    "multithreaded ones (2 ranks, MPI_THREAD_MULTIPLE), mbw_mr with 4 ranks and\n"
    "the one-sided ones (2 ranks; Open MPI with osc sm,pt2pt),\n"
    "each rank on a core of its own. Exit status: 0, 1 if a run failed, 2 for a\n"
    "bad command line, 130 when interrupted.\n";

namespace {

const char *const kMpis[] = {"rocl", "openmpi", "openmpi-ucx", "mpich"};
const char *const kBenches[] = {"latency",        "bw",   "bibw", "mbw_mr", "mt_latency", "mt_rate",
                                "mt_mprobe_rate", "coll", "rma"};
// What --bench rma runs: the one-sided benchmarks (bench/mpi/rma.c).
const char *const kRmaBenches[] = {"put_latency", "get_latency", "acc_latency", "fop_latency",
                                   "cas_latency", "put_bw",      "get_bw"};

bool known(const char *const (&names)[4], const std::string &n) {
  return std::find(std::begin(names), std::end(names), n) != std::end(names);
}

std::string join_words(const std::vector<std::string> &words, const char *separator = ",") {
  std::string text;
  for (const auto &w : words) text += (text.empty() ? "" : separator) + w;
  return text;
}

void add_unique(std::vector<std::string> &list, const std::string &name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

// One job of every round: the benchmarks one mpi_bench run measures.
struct Job {
  std::string name;  // single, threaded, mbw4
  int ranks;
  std::vector<std::string> args;
};

std::vector<Job> jobs_of(const MpiOptions &o) {
  std::vector<std::string> single, threaded;
  bool rma = false;
  for (const auto &b : o.benches) {
    if (b == "rma") {
      rma = true;
    } else {
      (b.starts_with("mt_") ? threaded : single).push_back(b);
    }
  }
  std::vector<Job> jobs;
  if (!single.empty()) jobs.push_back({"single", 2, single});
  if (!threaded.empty()) {
    threaded.insert(threaded.end(), {"--mt-mode", o.mt_mode});
    jobs.push_back({"threaded", 2, threaded});
  }
  if (std::find(o.benches.begin(), o.benches.end(), "mbw_mr") != o.benches.end()) {
    jobs.push_back({"mbw4", 4, {"mbw_mr"}});  // two pairs
  }
  if (rma) jobs.push_back({"rma", 2, {std::begin(kRmaBenches), std::end(kRmaBenches)}});
  return jobs;
}

std::vector<std::string> launcher(const Programs &p, const std::string &mpi, const Job &job) {
  const int ranks = job.ranks;
  if (mpi == "rocl") {
    return {p.roclrun.path, "--bind-to",           "core",
            "-n",           std::to_string(ranks), p.mpi_bench_rocl.path};
  }
  if (mpi == "mpich") {
    auto argv = mpich_launch(p, ranks);
    argv.push_back(p.mpi_bench_mpich.path);
    return argv;
  }
  auto mca = openmpi_mca(mpi == "openmpi" ? "vader" : "ucx");
  if (job.name == "rma") {
    // Open MPI's one-sided on shared memory is its osc sm (pt2pt for what sm
    // does not take); its default, osc rdma, is slower here and crashes in
    // MPI_Compare_and_swap over vader's emulated atomics.
    mca.insert(mca.end(), {"--mca", "osc", "sm,pt2pt"});
  }
  auto argv = openmpi_launch(p, mca, ranks);
  argv.push_back(p.mpi_bench_openmpi.path);
  return argv;
}

std::vector<Config> mpi_configs(const MpiOptions &o, const Programs &p, const Job &job) {
  std::vector<Config> configs;
  for (const auto &mpi : o.mpis) {
    std::string why, about;
    if (mpi == "rocl") {
      why = first_missing({&p.roclrun, &p.mpi_bench_rocl});
      about = "mpi_bench.rocl under roclrun --bind-to core";
    } else if (mpi == "mpich") {
      why = first_missing({&p.mpiexec_mpich, &p.mpi_bench_mpich});
      about = "mpi_bench.mpich under mpiexec.mpich -bind-to core (ch4:ucx)";
    } else {
      why = first_missing({&p.mpirun_openmpi, &p.mpi_bench_openmpi});
      about = mpi == "openmpi" ? "mpi_bench.openmpi, pml ob1 + btl self,vader"
                               : "mpi_bench.openmpi, pml ucx";
    }
    configs.push_back({mpi, "", about, why, [&o, job, mpi](const RunRequest &r) {
                         Invocation inv;
                         inv.argv = launcher(r.programs, mpi, job);
                         inv.argv.insert(inv.argv.end(), job.args.begin(), job.args.end());
                         if (o.quick) inv.argv.emplace_back("--quick");
                         inv.argv.insert(inv.argv.end(), o.extra.begin(), o.extra.end());
                         inv.log = r.log;
                         inv.timeout_seconds = o.quick ? 120 : 1800;
                         return run_and_collect(inv, "", [&](const std::vector<CsvRow> &rows) {
                           return plain_samples(rows, mpi, r.round);
                         });
                       }});
  }
  return configs;
}

// ---- the tables ------------------------------------------------------------------

}  // namespace

const char *const kMpiMetrics[22] = {"latency",
                                     "bw",
                                     "bibw",
                                     "mbw_mr",
                                     "mbw_mr_rate",
                                     "mt_latency",
                                     "mt_latency_comm",
                                     "mt_rate",
                                     "mt_rate_comm",
                                     "mt_mprobe_rate",
                                     "mt_mprobe_rate_comm",
                                     "barrier",
                                     "bcast",
                                     "reduce",
                                     "allreduce",
                                     "put_latency",
                                     "get_latency",
                                     "acc_latency",
                                     "fop_latency",
                                     "cas_latency",
                                     "put_bw",
                                     "get_bw"};

namespace {

std::string title_of(const std::string &bench) {
  static const std::pair<const char *, const char *> titles[] = {
      {"latency", "one-way ping-pong latency"},
      {"bw", "one-way bandwidth (osu_bw)"},
      {"bibw", "bidirectional bandwidth (osu_bibw)"},
      {"mbw_mr", "multi-pair bandwidth (osu_mbw_mr), threads = pairs"},
      {"mbw_mr_rate", "multi-pair message rate (osu_mbw_mr), threads = pairs"},
      {"mt_latency", "multithreaded 8 B latency, mean over the thread pairs"},
      {"mt_rate", "multithreaded 8 B message rate, all pairs"},
      {"mt_mprobe_rate", "multithreaded 8 B message rate, received with Mprobe + Mrecv"},
      {"put_latency", "MPI_Put + MPI_Win_flush (osu_put_latency)"},
      {"get_latency", "MPI_Get + MPI_Win_flush (osu_get_latency)"},
      {"acc_latency", "MPI_Accumulate SUM + MPI_Win_flush (osu_acc_latency)"},
      {"fop_latency", "MPI_Fetch_and_op + MPI_Win_flush (osu_fop_latency)"},
      {"cas_latency", "MPI_Compare_and_swap + MPI_Win_flush (osu_cas_latency)"},
      {"put_bw", "a window of MPI_Put, then a flush (osu_put_bw)"},
      {"get_bw", "a window of MPI_Get, then a flush (osu_get_bw)"},
      {"barrier", "MPI_Barrier"},
      {"bcast", "MPI_Bcast"},
      {"reduce", "MPI_Reduce (double, SUM, to rank 0)"},
      {"allreduce", "MPI_Allreduce (double, SUM)"}};
  const std::string base = bench.ends_with("_comm") ? bench.substr(0, bench.size() - 5) : bench;
  for (const auto &[name, title] : titles) {
    if (base == name) return title;
  }
  return bench;
}

std::string point_label(const std::string &bench, std::size_t size, int threads) {
  if (bench.starts_with("mt_")) return std::to_string(threads);
  if (bench.starts_with("mbw_mr")) return std::to_string(threads) + "p " + format_size(size);
  return format_size(size);
}

void print_mpi_tables(std::FILE *out, const StageRun &run, const MpiOptions &o) {
  std::vector<std::string> benches;
  for (const auto &s : run.summary) add_unique(benches, s.metric);
  std::stable_sort(benches.begin(), benches.end(), [](const auto &a, const auto &b) {
    auto rank = [](const std::string &x) {
      return std::find(std::begin(kMpiMetrics), std::end(kMpiMetrics), x) - std::begin(kMpiMetrics);
    };
    return rank(a) < rank(b);
  });
  std::vector<std::string> others;
  for (const auto &c : run.configs) {
    if (c.name != o.subject) others.push_back(c.name);
  }
  for (const auto &bench : benches) {
    std::set<std::pair<std::size_t, int>>
        points;  // (threads, size) for mt_ and mbw, else (size, threads)
    std::string unit;
    const bool by_threads = bench.starts_with("mt_") || bench.starts_with("mbw_mr");
    for (const auto &s : run.summary) {
      if (s.metric != bench) continue;
      unit = s.unit;
      points.emplace(by_threads ? std::pair{static_cast<std::size_t>(s.pairs), int(s.size)}
                                : std::pair{s.size, s.pairs});
    }
    std::vector<std::string> header = {bench.starts_with("mt_") ? "threads" : "size"};
    for (const auto &c : run.configs) header.push_back(c.name);
    header.push_back(o.subject + "/best");
    header.emplace_back("best of the others");
    TextTable table(header);
    for (const auto &[a, b] : points) {
      const std::size_t size = by_threads ? static_cast<std::size_t>(b) : a;
      const int threads = by_threads ? static_cast<int>(a) : b;
      std::vector<std::string> row = {point_label(bench, size, threads)};
      for (const auto &c : run.configs) row.push_back(run.cell(bench, c.name, size, threads));
      const Summary *mine = run.find(bench, o.subject, size, threads);
      const Summary *best = best_of(run.summary, bench, others, size, threads);
      row.push_back(mine && best ? format_figure(mine->median / best->median) + "x" : "n/a");
      row.push_back(best ? format_figure(best->median) + " " + best->system : "n/a");
      table.add(row);
    }
    std::fprintf(out, "\n%s: %s; %s, %s is better; median of %d round(s)\n", bench.c_str(),
                 title_of(bench).c_str(), unit.c_str(), lower_is_better(bench) ? "lower" : "higher",
                 o.rounds);
    table.print(out);
  }
  std::vector<std::string> notes;
  for (const auto &c : run.configs) {
    if (!c.unavailable.empty()) notes.push_back(c.name + ": n/a, " + c.unavailable);
  }
  for (const auto &[name, why] : run.result.failed) notes.push_back(name + ": FAILED, " + why);
  if (notes.empty()) return;
  std::fprintf(out, "\nnot measured or failed:\n");
  for (const auto &n : notes) std::fprintf(out, "  %s\n", n.c_str());
}

// The subject over the best other MPI at each point, as compare.csv's ratio rows.
bool append_ratio_rows(const std::string &path, const StageRun &run, const MpiOptions &o) {
  std::FILE *f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return false;
  std::vector<std::string> others;
  for (const auto &c : run.configs) {
    if (c.name != o.subject) others.push_back(c.name);
  }
  for (const auto &s : run.summary) {
    if (s.system != o.subject) continue;
    const Summary *best = best_of(run.summary, s.metric, others, s.size, s.pairs);
    if (best == nullptr) continue;
    const double r = s.median / best->median;
    std::fprintf(f, "mpi,%s,%s/%s,,%zu,%d,all,%.9g,%.9g,%.9g,ratio\n", s.metric.c_str(),
                 s.system.c_str(), best->system.c_str(), s.size, s.pairs, r, r, r);
  }
  return std::fclose(f) == 0;
}

const std::vector<PlotSpec> kMpiPlots = {
    {"mpi", "latency", "latency", "message size (bytes)", "one-way latency (us)", false},
    {"mpi", "bw", "bandwidth", "message size (bytes)", "bandwidth (GB/s = 1e9 B/s)", false},
};

void draw_plots(const MpiOptions &o, const Programs &p, const Results &merged,
                const std::string &logs) {
  if (!o.plots || interrupted()) return;
  if (!p.gnuplot.found()) {
    std::printf("plots: none, %s\n", p.gnuplot.missing.c_str());
    return;
  }
  std::vector<std::string> pngs;
  const std::string why = write_plots(o.out, merged, kMpiPlots, "rocl-bench mpi", p.gnuplot.path,
                                      logs + "/gnuplot.log", pngs);
  std::printf("plots:%s", why.empty() ? "" : (" failed, " + why).c_str());
  for (const auto &png : pngs) std::printf(" %s", png.c_str());
  std::printf("\n");
}

// Every job's figures under one stage "mpi": the tables and the goals
// see the MPIs, whichever job measured a benchmark.
StageRun merged_run(const Results &jobs, const std::vector<Config> &configs) {
  StageRun all;
  all.stage = "mpi";
  all.configs = configs;
  for (const auto &job : jobs.stages) {
    all.summary.insert(all.summary.end(), job.summary.begin(), job.summary.end());
    all.result.samples.insert(all.result.samples.end(), job.result.samples.begin(),
                              job.result.samples.end());
    for (const auto &[name, why] : job.result.failed) {
      all.result.failed[name] +=
          (all.result.failed[name].empty() ? "" : "; ") + job.stage + ": " + why;
    }
  }
  return all;
}

int run_suite(const MpiOptions &o) {
  catch_interrupts();
  CompareOptions co;  // what the shared machinery reads of it: the rounds
  co.rounds = o.rounds;
  co.quick = o.quick;
  co.anchors = o.anchors;
  co.roclrun = o.roclrun;
  const Programs programs = locate_programs(co);
  std::string goals_path = o.goals.empty() ? default_goals_path() : o.goals;
  std::vector<Goal> goals;
  if (!goals_path.empty()) {
    if (const std::string why = load_goals(goals_path, goals); !why.empty()) {
      std::fprintf(stderr, "rocl-bench mpi: %s\n", why.c_str());
      return 2;
    }
  }
  const std::string logs = o.out + "/logs";
  std::error_code ec;
  std::filesystem::create_directories(logs, ec);
  if (ec) {
    std::fprintf(stderr, "rocl-bench mpi: cannot make %s: %s\n", logs.c_str(),
                 ec.message().c_str());
    return 1;
  }
  std::printf("rocl-bench mpi: bench/mpi's suite under each MPI, in interleaved rounds\n");
  print_machine(stdout, programs);
  std::printf("settings: %d round(s); MPIs %s; benchmarks %s; mt-mode %s%s%s\n", o.rounds,
              join_words(o.mpis).c_str(), join_words(o.benches).c_str(), o.mt_mode.c_str(),
              o.quick ? "; mpi_bench --quick" : "",
              o.extra.empty() ? "" : ("; mpi_bench " + join_words(o.extra, " ")).c_str());
  std::fflush(stdout);

  Results jobs;
  std::vector<Config> columns;
  for (const auto &job : jobs_of(o)) {
    jobs.stages.push_back({job.name, mpi_configs(o, programs, job), {}, {}});
    if (columns.empty()) columns = jobs.stages.back().configs;
  }
  int total = 0;
  for (const auto &run : jobs.stages) total += planned_runs(run.configs, co);
  Progress progress(total);
  for (auto &run : jobs.stages) {
    if (interrupted()) break;
    run_stage(run.stage, run.configs, co, programs, logs, progress, run.result);
    run.summary = summarize_rounds(run.result.samples);
  }

  Results merged;
  merged.stages.push_back(merged_run(jobs, columns));
  print_mpi_tables(stdout, merged.stages[0], o);
  print_goals(stdout, merged, goals, goals_path, o.quick);
  const std::string csv = o.out + "/mpi.csv";
  if (!write_results_csv(csv, jobs) || !append_ratio_rows(csv, merged.stages[0], o)) {
    std::fprintf(stderr, "rocl-bench mpi: cannot write %s: %s\n", csv.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::printf("\nCSV: %s (stage = the job: single, threaded, mbw4, rma; then %s's ratios)\n",
              csv.c_str(), o.subject.c_str());
  draw_plots(o, programs, merged, logs);
  std::fflush(stdout);
  if (interrupted()) {
    std::fprintf(stderr, "rocl-bench mpi: interrupted; the tables show what ran before\n");
    return 130;
  }
  const auto &failed = merged.stages[0].result.failed;
  for (const auto &[name, why] : failed) {
    std::fprintf(stderr, "rocl-bench mpi: %s failed: %s\n", name.c_str(), why.c_str());
  }
  return failed.empty() ? 0 : 1;
}

}  // namespace

std::string parse_mpi_options(const std::vector<std::string> &args, MpiOptions &out) {
  MpiOptions o;
  bool rounds_given = false;
  std::vector<std::string> mpis = {"rocl", "openmpi", "mpich"};
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    auto take = [&]() -> const std::string * { return i + 1 < args.size() ? &args[++i] : nullptr; };
    if (arg == "--") {
      o.extra.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    } else if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--no-plots") {
      o.plots = false;
    } else if (arg == "--mpis" || arg == "--bench") {
      const std::string *v = take();
      if (v == nullptr || split_list(*v).empty()) return arg + " wants a list of names";
      (arg == "--mpis" ? mpis : o.benches) = split_list(*v);
    } else if (arg == "--rounds") {
      const std::string *v = take();
      const auto n = v ? parse_size_list(*v) : std::nullopt;
      if (!n || n->size() != 1 || n->front() > 1000)
        return "--rounds wants a number from 1 to 1000";
      o.rounds = static_cast<int>(n->front());
      rounds_given = true;
    } else if (arg == "--mt-mode" || arg == "--subject" || arg == "--out" || arg == "--anchors" ||
               arg == "--roclrun" || arg == "--goals") {
      const std::string *v = take();
      if (v == nullptr || v->empty()) return arg + " wants a value";
      std::string &field = arg == "--mt-mode"   ? o.mt_mode
                           : arg == "--subject" ? o.subject
                           : arg == "--out"     ? o.out
                           : arg == "--anchors" ? o.anchors
                           : arg == "--roclrun" ? o.roclrun
                                                : o.goals;
      field = *v;
    } else {
      return "unknown argument '" + arg + "'";
    }
  }
  for (const auto &m : mpis) {
    if (m == "openmpi") {
      add_unique(o.mpis, "openmpi");
      add_unique(o.mpis, "openmpi-ucx");
    } else if (m == "openmpi-ob1") {
      add_unique(o.mpis, "openmpi");
    } else if (known(kMpis, m)) {
      add_unique(o.mpis, m);
    } else {
      return "--mpis: no MPI '" + m + "' (rocl, openmpi, openmpi-ob1, openmpi-ucx, mpich)";
    }
  }
  if (o.benches.empty()) o.benches.assign(std::begin(kBenches), std::end(kBenches));
  for (const auto &b : o.benches) {
    if (std::find(std::begin(kBenches), std::end(kBenches), b) == std::end(kBenches)) {
      return "--bench: no benchmark '" + b +
             "' (latency, bw, bibw, mbw_mr, mt_latency, mt_rate, mt_mprobe_rate, coll, rma)";
    }
  }
  if (o.mt_mode != "tag" && o.mt_mode != "comm") {
    return "--mt-mode takes tag or comm, not '" + o.mt_mode + "'";
  }
  if (o.quick && !rounds_given) o.rounds = 1;
  out = std::move(o);
  return "";
}

int mpi_main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto &a : args) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") {
      std::fputs(kMpiUsage, stdout);
      return 0;
    }
  }
  MpiOptions o;
  const std::string error = parse_mpi_options(args, o);
  if (!error.empty()) {
    std::fprintf(stderr, "rocl-bench mpi: %s (see rocl-bench mpi --help)\n", error.c_str());
    return 2;
  }
  return run_suite(o);
}

}  // namespace rocl_bench::compare
