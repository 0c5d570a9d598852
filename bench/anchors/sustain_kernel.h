/* sustain_kernel.h - the compute loop of the sustainability benchmark
 * (RoCL paper, section 5.2), shared by rocl's side (bench/rocl-bench/compare/
 * sustain_rank.cpp) and the MPI anchor (bench/anchors/mpi_sustain.c), so
 * that both count the same work.
 *
 * One "unit" is SUSTAIN_VECTOR multiply-adds over a vector that stays in the
 * L1 cache (4 KiB): pure cpu work, about a microsecond, no memory traffic
 * that could slow the messages down. A compute thread runs units until told
 * to stop and reports units per second.
 *
 * The benchmark, per rank (2 processes, each pinned to its own cpu, each
 * with a compute thread and the thread that communicates, both on that cpu):
 *   compute alone          both ranks run the compute thread for --time s,
 *                          nothing else; Ex_0 = units/s of both ranks
 *   round trip alone       rank 0 pings rank 1 (SIZE bytes, rank 1 sends
 *                          each message straight back) for --time s;
 *                          Rt_0 = seconds per round trip
 *   both                   the compute threads run while the ping-pong
 *                          does: Ex_cs and Rt_cs
 * The rows (rank 0, CSV benchmark,size_bytes,pairs,median,min,max,unit):
 *   compute-alone, compute-with-pingpong   M units/s (both ranks together)
 *   rtt-alone, rtt-with-compute            us per round trip
 * Each ping carries a flag in its first byte: SUSTAIN_GO_ON, or SUSTAIN_LAST
 * on the last one of a run, after which the echo side stops too. */
#ifndef ROCL_BENCH_SUSTAIN_KERNEL_H
#define ROCL_BENCH_SUSTAIN_KERNEL_H

enum { SUSTAIN_VECTOR = 512 };
enum { SUSTAIN_GO_ON = 'g', SUSTAIN_LAST = 'l' };
/* What rank 0 tells rank 1 before each phase. */
enum { SUSTAIN_COMPUTE = 1, SUSTAIN_PINGPONG = 2, SUSTAIN_BOTH = 3, SUSTAIN_QUIT = 4 };

/* One unit of work on v (SUSTAIN_VECTOR doubles); returns a value to keep,
 * so that the compiler cannot drop the loop. */
static inline double sustain_unit(double *v) {
  double sum = 0;
  for (int i = 0; i < SUSTAIN_VECTOR; ++i) {
    v[i] = v[i] * 0.9999999 + 1e-7;
    sum += v[i];
  }
  return sum;
}

#endif
