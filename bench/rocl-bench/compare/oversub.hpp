// oversub.hpp - the oversub stage: how rocl does when threads and
// processes share cpus, next to what the kernel alone gives (futex and
// sched_yield hand-offs) and to the MPIs' collectives.
//
// A point is a metric and a number (Sample::pairs):
//   pingpong N         N threads per cpu, in N x cpus / 2 ping-pong pairs
//                      running at once, pinned round-robin (a pair's two
//                      threads on different cpus); us per hop (one-way),
//                      the mean over the pairs
//   pingpong-onecpu 2  one pair, both sides on the first cpu
//   ring N             a token passed around N x cpus threads (processes),
//                      pinned round-robin; us per hop
//   rate N             rocl-bench's rate with N x cpus / 2 pairs; M msg/s
//   pingpong-busy B,   pingpong 1 and ring 1 with B busy loops pinned to
//   ring-busy B        each cpu, started before and stopped after the run
//   barrier, bcast, reduce, allreduce N
//                      mpi_bench coll (8 B) with N x cpus ranks; us per call
// Systems: futex and yield (oversub_limits, config "limits"), rocl-inproc
// (threads of one process: compare --rank oversub-threads), rocl-shm
// (processes under roclrun: compare --rank oversub-ring), rocl-mpi,
// ompi-vader and mpich (mpi_bench).
#pragma once

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compare_options.hpp"
#include "output_parse.hpp"
#include "stats.hpp"

namespace rocl_bench::compare {

struct StageRun;

struct OversubPoint {
  std::string metric;
  int value = 1;
  // "ring:2"
  std::string text() const { return metric + ":" + std::to_string(value); }
};

// "ring:2" -> {ring, 2}; nullopt unless a metric of the stage's rocl points
// (pingpong, pingpong-onecpu, ring, rate, pingpong-busy, ring-busy) and a
// number from 1 to 64.
std::optional<OversubPoint> parse_oversub_point(std::string_view text);

// The loads, per cpu, of the stage.
inline constexpr int kOversubLoads[] = {1, 2, 4};     // pingpong, ring, rate
inline constexpr int kOversubBusy[] = {1, 2};         // busy loops per cpu
inline constexpr int kOversubRanksPerCpu[] = {2, 4};  // MPI collectives
inline constexpr const char *kOversubCollectives[] = {"barrier", "bcast", "reduce", "allreduce"};

// Threads or processes a point runs on `cpus` cpus: ring N -> N x cpus
// (at least 2), pingpong and rate N -> pairs max(1, N x cpus / 2) x 2,
// pingpong-onecpu -> 2, the busy points -> those of load 1.
int oversub_members(const OversubPoint &p, std::size_t cpus);

// The cpu of member i (thread or rank) of a point: the first cpu for
// pingpong-onecpu, else cpus[i mod cpus].
int oversub_cpu(const OversubPoint &p, const std::vector<int> &cpus, int member);

// The payload of a point's figures (Sample::size): 0 for futex, yield and
// barrier, else 8.
std::size_t oversub_size(const std::string &metric, const std::string &system);

// The samples of an oversub program's rows: a row named "futex/pingpong"
// is system futex, metric pingpong; one named "ring" is `system`'s ring.
std::vector<Sample> oversub_samples(const std::vector<CsvRow> &rows, const std::string &system,
                                    int round);

// compare --rank oversub-threads --oversub POINT: the point between threads
// of this process (rocl-inproc); prints its row. Exit status 0, or dies.
int oversub_threads_main(const CompareOptions &o);

// compare --rank oversub-ring --oversub POINT under roclrun -n N: a ring
// (or a ping-pong when N = 2) between the job's processes, rank 0 printing
// its row; each rank pins itself to oversub_cpu before rocl_init.
int oversub_ring_main(const CompareOptions &o);

// The stage's tables: time per hop, rate, MPI collectives.
void print_oversub(std::FILE *out, const StageRun &run);

// The summary of (metric, system, pairs) whatever its size, or nullptr;
// whether that point timed out in some round.
const Summary *oversub_find(const StageRun &run, const std::string &metric,
                            const std::string &system, int pairs);
bool oversub_timed_out(const StageRun &run, const std::string &metric, const std::string &system,
                       int pairs);

}  // namespace rocl_bench::compare
