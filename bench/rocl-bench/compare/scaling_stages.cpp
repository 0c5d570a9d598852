// scaling_stages.cpp - the thread-scaling and port-scaling stages (see
// stages.hpp): message rate as thread pairs, and as destination resources,
// grow.
#include <algorithm>

#include "report.hpp"
#include "stages.hpp"

namespace rocl_bench::compare {
namespace {

// mpi_bench mt_rate (MPI_THREAD_MULTIPLE, one 8 B stream per thread pair).
RunOutcome run_mt_rate(const RunRequest &r, const std::string &system,
                       std::vector<std::string> argv) {
  const CompareOptions &o = r.options;
  for (const std::string &a :
       {std::string("mt_rate"), std::string("--threads"), join_ints(o.pairs), std::string("--reps"),
        std::to_string(o.reps), std::string("--time"), std::to_string(o.seconds)}) {
    argv.push_back(a);
  }
  // mt_rate stops a run at 5 x --time when threads outnumber the cpus.
  Invocation inv{std::move(argv), {}, r.log, run_timeout(o, o.pairs.size(), 5 * o.seconds)};
  return run_and_collect(inv, "", [&](const std::vector<CsvRow> &rows) {
    return thread_samples(rows, system, r.round);
  });
}

}  // namespace

std::vector<Config> thread_configs(const CompareOptions &o, const Programs &p) {
  std::vector<Config> all;
  all.push_back({"rocl-shm", "",
                 "rocl-bench rate --transport shm --pairs: P sender threads in rank 0, P "
                 "receivers in rank 1, one resource pair each",
                 first_missing({&p.roclrun}), [](const RunRequest &r) {
                   const CompareOptions &o = r.options;
                   Invocation inv;
                   inv.argv = {r.programs.self, "rate",
                               "--transport",   "shm",
                               "--pairs",       join_ints(o.pairs),
                               "--reps",        std::to_string(o.reps),
                               "--time",        std::to_string(o.seconds),
                               "--csv",         r.scratch + ".csv",
                               "--roclrun",     r.programs.roclrun.path};
                   inv.log = r.log;
                   inv.timeout_seconds = run_timeout(o, o.pairs.size(), o.seconds);
                   return run_and_collect(inv, r.scratch + ".csv",
                                          [&](const std::vector<CsvRow> &rows) {
                                            return thread_samples(rows, "rocl-shm", r.round);
                                          });
                 }});
  for (const char *config : {"vader", "ucx"}) {
    const std::string name = std::string("ompi-") + config;
    all.push_back({name, "",
                   std::string("mpi_bench mt_rate, Open MPI ") +
                       (config == std::string("vader") ? "pml ob1 + btl vader" : "pml ucx") +
                       ", MPI_THREAD_MULTIPLE",
                   first_missing({&p.mpirun_openmpi, &p.mpi_bench_openmpi}),
                   [name, config = std::string(config)](const RunRequest &r) {
                     auto argv = openmpi_launch(r.programs, openmpi_mca(config));
                     argv.push_back(r.programs.mpi_bench_openmpi.path);
                     return run_mt_rate(r, name, argv);
                   }});
  }
  all.push_back({"mpich", "", "mpi_bench mt_rate, MPICH ch4:ucx, MPI_THREAD_MULTIPLE",
                 first_missing({&p.mpiexec_mpich, &p.mpi_bench_mpich}), [](const RunRequest &r) {
                   auto argv = mpich_launch(r.programs);
                   argv.push_back(r.programs.mpi_bench_mpich.path);
                   return run_mt_rate(r, "mpich", argv);
                 }});
  for (auto &c : all) c.expected = o.pairs.size();
  return keep_selected(o, std::move(all));
}

std::vector<Config> port_configs(const CompareOptions &o, const Programs &p) {
  std::vector<Config> all;
  for (const char *transport : {"shm", "tcp"}) {
    const std::string name = std::string("rocl-") + transport;
    all.push_back(
        {name, "",
         std::string("compare --rank ports under roclrun, ROCL_TRANSPORTS=") + transport +
             ": one sender resource in rank 0, 8 B messages round-robin to R resources of rank 1",
         first_missing({&p.roclrun}), [name, t = std::string(transport)](const RunRequest &r) {
           const CompareOptions &o = r.options;
           const Invocation inv =
               rocl_job(r, "ports", t, run_timeout(o, o.ports.size(), o.seconds),
                        {"--ports", join_ints(o.ports), "--reps", std::to_string(o.reps), "--time",
                         std::to_string(o.seconds)});
           return run_and_collect(inv, "", [&](const std::vector<CsvRow> &rows) {
             return plain_samples(rows, name, r.round);
           });
         }});
  }
  for (auto &c : all) c.expected = o.ports.size();
  return keep_selected(o, std::move(all));
}

}  // namespace rocl_bench::compare
