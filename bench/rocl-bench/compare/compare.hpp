// compare.hpp - `rocl-bench compare`: rocl next to every anchor in one run.
//
// rocl-bench's main() hands the arguments after "compare" here. The parts:
//   compare_options  the command line
//   stages, *_stage  which systems each stage measures and how (one table)
//   stage            the interleaved rounds, one program run at a time, a
//                    cpu probe (limits) just before and after each
//   child_process    running a program in its own group, under a time limit
//   output_parse     reading the programs' rows
//   limits, ucx_perftest_run, rocl_ranks (ports_rank, sustain_rank)
//                    the measurements that are not a program of their own
//   results, tables, cpu_probes, results_csv, plots, text_table
//                    what is shown
//   goals            the goals file (goals.txt) and the verdicts
//   against          --against: this build's rocl next to another build's
// `rocl-bench mpi` (mpi_suite.hpp) runs bench/mpi's suite with the same parts.
// docs/tools.md and docs/performance.md describe it for users.
#pragma once

#include <cstdio>

namespace rocl_bench::compare {

struct Programs;

// The machine (cpu model, usable cpus, kernel, time) and the load average,
// two lines at the top of compare's and mpi's output.
void print_machine(std::FILE *out, const Programs &p);

// argv[0] is "compare". Returns the exit status: 0, 1 when a run failed
// (or, with --quick, printed a figure that is not a positive number), 2 for
// a bad command line, 130 when interrupted.
int compare_main(int argc, char **argv);

}  // namespace rocl_bench::compare
