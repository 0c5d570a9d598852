// ncs_suite.hpp - `rocl-bench ncs`: the speed of NCS's user threads
// (layers/ncs/bench/ncs_speed.c): a switch between two user threads and
// the wake-up of a thread blocked in NCS_recv when its message arrives,
// from a thread of its process and from another process, each judged
// against the goal the NCS layer was given and set beside an anchor of the
// same run (the kernel's futex hand-off on one cpu; plain rocl between the
// same two processes). With --tables, also the NCS paper's tables 1-3
// (examples/ncs/tables.sh, as root).
#pragma once

#include <string>
#include <vector>

namespace rocl_bench::compare {

struct NcsOptions {
  int reps = 5;
  double seconds = 0.2;
  bool quick = false;
  std::string transport = "shm";  // ROCL_TRANSPORTS of the two processes
  std::string program;            // --program: ncs_speed
  std::string roclrun;
  std::string out = "rocl-bench-ncs";
  bool tables = false;
  std::vector<std::string> tables_args;  // after --tables: to tables.sh
};

// The arguments after "ncs". Returns "" or what is wrong. --quick means one
// repetition of 0.02 s unless --reps or --time say otherwise.
std::string parse_ncs_options(const std::vector<std::string> &args, NcsOptions &out);

extern const char kNcsUsage[];

// argv[0] is "ncs". Returns the exit status: 0 (a goal missed too); 1 when
// a run failed or left a figure out, or the tables failed; 2 for a bad
// command line; 130 when interrupted.
int ncs_main(int argc, char **argv);

}  // namespace rocl_bench::compare
