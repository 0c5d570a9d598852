/* shared_cpu_ring: run under roclrun -n N (N >= 2) with every rank pinned
 * to the same cpu (the first it may run on), so that each rank's receive
 * waits for a rank queued behind it on that cpu. A token goes round the
 * ring of ranks for LAPS laps carrying its hop count; every receive has a
 * timeout, so a wake-up that is lost (a rank asleep while its message
 * waits, and nobody to wake it) fails the test instead of hanging it.
 * Run once per waiting mode (ROCL_WAIT). Exit 0 on success. */
#define _GNU_SOURCE
#include <rocl/rocl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "find_rank.h"

enum { kLaps = 2000, kTimeoutMs = 20000 };

static void pin_to_first_cpu(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CHECK(sched_getaffinity(0, sizeof set, &set) == 0, "sched_getaffinity");
  int first = 0;
  while (!CPU_ISSET(first, &set)) ++first;
  CPU_ZERO(&set);
  CPU_SET(first, &set);
  CHECK(sched_setaffinity(0, sizeof set, &set) == 0, "sched_setaffinity");
}

int main(void) {
  const int rank = start_rank("shared_cpu_ring");
  const char *size_text = getenv("ROCL_SIZE");
  const int size = size_text ? atoi(size_text) : 1;
  CHECK(size >= 2, "ROCL_SIZE >= 2");
  pin_to_first_cpu();
  CHECK(rocl_init() > 0, "rocl_init");
  const rocl_gid_t me = register_rank("shared_cpu_ring", rank);
  const rocl_gid_t next = find_rank("shared_cpu_ring", (rank + 1) % size);
  const rocl_gid_t prev = find_rank("shared_cpu_ring", (rank + size - 1) % size);
  uint64_t expect = (uint64_t)rank;
  if (rank == 0) {
    uint64_t hop = 1; /* hops the token has made when it arrives */
    CHECK(rocl_send(me, next, 1, &hop, sizeof hop) == ROCL_OK, "first send");
    expect = (uint64_t)size;
  }
  for (int lap = 0; lap < kLaps; ++lap) {
    void *p = NULL;
    size_t len = 0;
    rocl_gid_t from = 0;
    CHECK(rocl_recv(me, prev, 1, &p, &from, NULL, &len, kTimeoutMs) == ROCL_OK,
          "rocl_recv (a lost wake-up times out here)");
    uint64_t hop = 0;
    CHECK(len == sizeof hop && from == prev, "length or origin");
    memcpy(&hop, p, sizeof hop);
    rocl_bfret(p);
    CHECK(hop == expect, "hop count (a message lost, doubled or out of order)");
    expect += (uint64_t)size;
    if (rank == 0 && lap == kLaps - 1) break; /* the token stops here */
    ++hop;
    CHECK(rocl_send(me, next, 1, &hop, sizeof hop) == ROCL_OK, "rocl_send");
  }
  CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
  return 0;
}
