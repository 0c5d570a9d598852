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

}  // namespace rocl_bench::compare
