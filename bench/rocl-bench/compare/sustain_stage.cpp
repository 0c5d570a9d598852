// sustain_stage.cpp - the sustainability stage (see stages.hpp and
// bench/anchors/sustain_kernel.h): rocl in both progress modes over shm and
// tcp, and Open MPI over vader and tcp.
#include "stages.hpp"

namespace rocl_bench::compare {

std::vector<Config> sustain_configs(const CompareOptions &o, const Programs &p) {
  std::vector<Config> all;
  const std::string needs_two_cpus =
      p.cpus.size() < 2 ? "needs 2 usable cpus, " + std::to_string(p.cpus.size()) + " here" : "";
  auto sustain_args = [](const CompareOptions &o) {
    return std::vector<std::string>{"--sustain-time", std::to_string(o.sustain_seconds),
                                    "--sustain-size", std::to_string(o.sustain_size),
                                    "--reps",         std::to_string(o.reps)};
  };
  for (const char *transport : {"shm", "tcp"}) {
    for (const char *mode : {"poll", "thread"}) {
      const std::string name = std::string("rocl-") + transport + "-" + mode;
      const bool thread = mode == std::string("thread");
      std::string why = first_missing({&p.roclrun});
      if (why.empty()) why = needs_two_cpus;
      all.push_back(
          {name, "",
           std::string("compare --rank sustain under roclrun, ROCL_TRANSPORTS=") + transport +
               (thread ? ", ROCL_SPIN_US=0 (callers sleep, the transport's thread delivers)"
                       : ", default ROCL_SPIN_US (callers poll the transport)"),
           why, [name, t = std::string(transport), thread, sustain_args](const RunRequest &r) {
             const CompareOptions &o = r.options;
             Invocation inv =
                 rocl_job(r, "sustain", t, run_timeout(o, 3, o.sustain_seconds), sustain_args(o));
             if (thread) inv.env.emplace_back("ROCL_SPIN_US", "0");
             return run_and_collect(inv, "", [&](const std::vector<CsvRow> &rows) {
               return plain_samples(rows, name, r.round);
             });
           }});
    }
  }
  for (const char *config : {"vader", "tcp"}) {
    const std::string name = std::string("ompi-") + config;
    all.push_back({name, "",
                   std::string("mpi_sustain, Open MPI ") +
                       (config == std::string("vader") ? "pml ob1 + btl vader"
                                                       : "pml ob1 + btl tcp over lo") +
                       ", blocking calls poll",
                   first_missing({&p.mpirun_openmpi, &p.mpi_sustain_openmpi}),
                   [name, config = std::string(config), sustain_args](const RunRequest &r) {
                     const CompareOptions &o = r.options;
                     auto argv = openmpi_launch(r.programs, openmpi_mca(config));
                     argv.push_back(r.programs.mpi_sustain_openmpi.path);
                     for (const std::string &a :
                          {std::string("--time"), std::to_string(o.sustain_seconds),
                           std::string("--size"), std::to_string(o.sustain_size),
                           std::string("--reps"), std::to_string(o.reps)}) {
                       argv.push_back(a);
                     }
                     Invocation inv{argv, {}, r.log, run_timeout(o, 3, o.sustain_seconds)};
                     return run_and_collect(inv, "", [&](const std::vector<CsvRow> &rows) {
                       return plain_samples(rows, name, r.round);
                     });
                   }});
  }
  for (auto &c : all) c.expected = 4;  // compute and round trip, alone and together
  return keep_selected(o, std::move(all));
}

}  // namespace rocl_bench::compare
