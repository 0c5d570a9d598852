// mpi_suite.hpp - `rocl-bench mpi`: bench/mpi's OSU-style suite (program
// mpi_bench, built by CMake against rocl's MPI, Open MPI and MPICH into
// compare/anchors/) under each MPI, in interleaved rounds, with compare's
// machinery: child processes under a time limit, rounds with a rotating
// order, the statistics, one table per benchmark with the ratio of the
// subject to the best other MPI, the goals of stage mpi (goals.txt), a CSV
// and gnuplot plots.
#pragma once

#include <string>
#include <vector>

namespace rocl_bench::compare {

struct MpiOptions {
  std::vector<std::string> mpis;     // rocl, openmpi, openmpi-ucx, mpich (configurations)
  std::vector<std::string> benches;  // mpi_bench's names (coll = barrier, bcast, reduce, allreduce)
  int rounds = 3;
  bool quick = false;
  std::string mt_mode = "tag";
  std::string subject = "rocl";
  std::string out = "rocl-bench-mpi";
  std::string anchors, roclrun, goals;
  bool plots = true;
  std::vector<std::string> extra;  // after --: to every mpi_bench run
};

// The arguments after "mpi". Returns "" or what is wrong. --quick means
// one round (unless --rounds) and mpi_bench --quick.
std::string parse_mpi_options(const std::vector<std::string> &args, MpiOptions &out);

extern const char kMpiUsage[];

// argv[0] is "mpi". Returns the exit status: 0; 1 when a run failed; 2 for
// a bad command line; 130 when interrupted.
int mpi_main(int argc, char **argv);

}  // namespace rocl_bench::compare
