// limits.hpp - the physical limits next to which every system is read:
//   memcpy     one memcpy of each size on the first cpu (source and
//              destination buffers of that size, reused, so small sizes
//              stay in the caches as a message buffer would): its time (the
//              "latency" rows, us) and GB/s (the "bandwidth" rows)
//   cacheline  one cache line handed back and forth between two threads
//              pinned to the first two cpus (each waits for the other's
//              write, spinning), one-way = round trip / 2 (a "latency" row
//              of size 64): the floor of any message between two cores
// Measured in this process, between the runs of the others.
#pragma once

#include "stage.hpp"

namespace rocl_bench::compare {

RunOutcome run_limits(const RunRequest &r);

// Where the two cpus are now: the median one-way time (us) of three short
// cache-line hand-offs between cpus[0] and cpus[1] (about 10 ms in all,
// calibration included); 0 with fewer than two cpus. run_stage takes one
// just before and one just after every run (see CpuProbe in stage.hpp).
constexpr double kCpuProbeSeconds = 0.002;
double probe_cpus(const std::vector<int> &cpus);

}  // namespace rocl_bench::compare
