// process_bench.hpp - rocl benchmarks between two processes over one
// transport (rocl-bench --transport shm|tcp).
//
// How it runs: rocl-bench (the "parent", which does not join the job) starts
//   roclrun --timeout T -n 2 <this executable> --process-rank <t> ...
// with ROCL_TRANSPORTS=<t> in the environment of the ranks, waits for it and
// reads back the rows that rank 0 wrote to a temporary CSV. Each rank pins
// itself to its cpu (sched_setaffinity before rocl_init, so rocl's own
// threads share it), registers {type=rocl-bench, role=rank<r>, index=k}
// resources and finds the other rank's in the job's directory. Rank 0
// drives: it tells rank 1 what to serve next (a command message), runs the
// measured side and reports; rank 1 echoes or drains. The message loops are
// the thread benchmarks' (bench_kernels.hpp), so the figures compare.
//
// Why roclrun and not the Launcher library: rocl-bench then uses nothing but
// rocl.h and runs its ranks exactly as a user's program runs, through the
// documented command line; the Launcher and the directory server stay
// private to src/ and roclrun.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bench_runner.hpp"
#include "report.hpp"

namespace rocl_bench {

// One run over one transport.
struct ProcessRun {
  std::string transport;                // "shm" or "tcp": ROCL_TRANSPORTS of both ranks
  std::vector<std::string> benchmarks;  // among "latency", "bandwidth", "rate"
  BenchOptions options;
  std::string roclrun;  // the parent: roclrun to use ("" = find_roclrun(""))
};

// Whether `name` is a transport the process mode runs over ("shm", "tcp").
bool is_process_transport(std::string_view name);

// Whether `name` is a benchmark that runs between processes.
bool is_process_benchmark(std::string_view name);

// roclrun: `explicit_path` if not empty; else $ROCLRUN if set; else
// "roclrun" next to this executable, then ../../tools/roclrun/roclrun (the
// build tree: <build>/bench/rocl-bench/ to <build>/tools/roclrun/), then
// PATH. Dies with roclrun_not_found() when there is none.
std::string find_roclrun(const std::string &explicit_path);
// The same search without an explicit path; "" when there is none.
std::string locate_roclrun();
// Why locate_roclrun() found none: the places it looked, what to do.
std::string roclrun_not_found();

// The parent's side: runs the job and returns rank 0's rows, named
// "<transport>-<benchmark>". Returns false (with the reason on stderr) if
// the job failed; `rows` then holds the benchmarks that finished before.
bool run_in_processes(const ProcessRun &run, std::vector<Row> &rows);

// A rank's side (rocl-bench --process-rank <t> --rows-out FILE under
// roclrun -n 2): rank 0 writes its rows to rows_out. Returns the exit status.
int process_rank_main(const ProcessRun &run, const std::string &rows_out);

}  // namespace rocl_bench
