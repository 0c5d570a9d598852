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
//   results, tables, cpu_probes, goals, results_csv, plots, text_table
//                    what is shown
// docs/tools.md and docs/performance.md describe it for users.
#pragma once

namespace rocl_bench::compare {

// argv[0] is "compare". Returns the exit status: 0, 1 when a run failed
// (or, with --quick, printed a figure that is not a positive number), 2 for
// a bad command line, 130 when interrupted.
int compare_main(int argc, char **argv);

}  // namespace rocl_bench::compare
