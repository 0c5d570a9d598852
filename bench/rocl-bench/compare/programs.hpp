// programs.hpp - where the programs a comparison runs are: rocl-bench itself
// and roclrun, the anchors built with rocl (compare/anchors/ in the build
// tree: zmq_pingpong, nng_pingpong, mpi_pingpong.<mpi> (also .rocl, built
// against rocl's MPI), mpi_bench.<mpi>,
// mpi_sustain.openmpi) and the installed launchers and tools (mpirun.openmpi,
// mpiexec.mpich, ucx_perftest, gnuplot). Each missing piece carries the
// sentence that says why, shown as the n/a reason of the rows that need it.
#pragma once

#include <string>
#include <vector>

#include "compare_options.hpp"

namespace rocl_bench::compare {

// A program: its path, or why there is none.
struct Program {
  std::string path;
  std::string missing;  // set when path is empty
  bool found() const { return !path.empty(); }
};

struct Programs {
  std::string self;  // this rocl-bench
  Program roclrun;
  std::string anchors;  // folder of the built anchors
  Program zmq_pingpong, nng_pingpong;
  Program mpi_pingpong_openmpi, mpi_pingpong_mpich;
  Program mpi_pingpong_rocl;  // the same program built against rocl's MPI
  Program mpi_bench_openmpi, mpi_bench_mpich, mpi_bench_rocl;
  Program mpi_sustain_openmpi;
  Program oversub_limits;  // the futex and sched_yield hand-offs (stage oversub)
  Program mpirun_openmpi, mpiexec_mpich;
  Program ucx_perftest;
  Program gnuplot;
  bool has_ucx_transport = false;  // the library was built with its ucx transport
  std::vector<int> cpus;           // usable cpus; the two sides of a pair go on cpus[0] and cpus[1]
};

Programs locate_programs(const CompareOptions &o);

// The first program of `needed` that is missing, as its reason; "" if none.
std::string first_missing(std::initializer_list<const Program *> needed);

// Open MPI's mpirun with the options this machine needs (root, oversubscribe,
// one core per rank, two on a core when the ranks outnumber the cpus), then
// `mca` (e.g. {"--mca", "btl", "self,vader"}).
std::vector<std::string> openmpi_launch(const Programs &p, const std::vector<std::string> &mca,
                                        int ranks = 2);

// MPICH's mpiexec, one core per rank, started by fork.
std::vector<std::string> mpich_launch(const Programs &p, int ranks = 2);

// The Open MPI component options of a configuration: vader, tcp, ucx.
std::vector<std::string> openmpi_mca(const std::string &config);

}  // namespace rocl_bench::compare
