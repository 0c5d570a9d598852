// rank_setup.cpp - what both of compare's rocl ranks do first (see
// rocl_ranks.hpp).
#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "check.hpp"
#include "rocl_ranks.hpp"
#include "threads.hpp"

namespace rocl_bench::compare {

int job_rank() {
  const char *rank = std::getenv("ROCL_RANK");
  const char *size = std::getenv("ROCL_SIZE");
  if (rank == nullptr || size == nullptr || std::strcmp(size, "2") != 0 ||
      (std::strcmp(rank, "0") != 0 && std::strcmp(rank, "1") != 0)) {
    die("compare --rank is compare's own: it runs it under roclrun -n 2");
  }
  return rank[0] - '0';
}

void pin_process_to_rank_cpu(int rank) {
  const std::vector<int> cpus = usable_cpus();
  if (cpus.size() < 2) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus[static_cast<std::size_t>(rank)], &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) {
    std::fprintf(stderr, "rocl-bench: warning: cannot pin rank %d to cpu %d: %s\n", rank,
                 cpus[static_cast<std::size_t>(rank)], std::strerror(errno));
  }
}

}  // namespace rocl_bench::compare
