// rocl_ranks.hpp - compare's own rocl jobs: the two ranks that
//   roclrun -n 2 rocl-bench compare --rank ports|sustain ...
// runs (stage.hpp's rocl_job starts them). Each rank pins its whole process
// to its cpu (rank r on the r-th usable cpu) before rocl_init, so that
// rocl's own threads share it, registers its resources ({type=rocl-bench,
// role, index}) and finds the other rank's in the job's directory. Rank 0
// drives and prints its rows on stdout (roclrun puts "[0] " before them);
// rank 1 serves. Any rocl error ends the rank with rocl-bench's
// "<call> failed" message and status 1.
#pragma once

#include "compare_options.hpp"

namespace rocl_bench::compare {

// Message rate from one resource of rank 0 to R resources of rank 1, for
// each R of o.ports: 8 B messages (rocl_send copies them) sent round-robin
// to the R destinations, in windows of max(64, R) rounded up to a multiple
// of R, an ack after each window; rank 1's one thread receives them in the
// same order. Rows "ports,8,R,median,min,max,M msg/s".
int ports_rank_main(const CompareOptions &o);

// The sustainability benchmark of bench/anchors/sustain_kernel.h with rocl:
// rank 0 pings with a pool buffer (bftoret + send), rank 1 sends the
// received buffer straight back; control and results go as small messages
// of their own tags.
int sustain_rank_main(const CompareOptions &o);

// Shared by both: ROCL_RANK of a 2-rank job (dies otherwise), and pinning
// the whole process to the rank's cpu.
int job_rank();
void pin_process_to_rank_cpu(int rank);

}  // namespace rocl_bench::compare
