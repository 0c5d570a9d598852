/* main.c - mpi_bench, an OSU-style MPI benchmark suite in one program: the
 * same C11 source measures rocl's MPI, Open MPI and MPICH.
 *
 * README
 * ------
 * Build: bench/rocl-bench/compare/CMakeLists.txt builds mpi_bench.rocl
 *   (against rocl's MPI), mpi_bench.openmpi and mpi_bench.mpich (with
 *   mpicc.openmpi / mpicc.mpich) into <build>/bench/rocl-bench/compare/anchors/.
 * Run (2 ranks; mbw_mr with any even number, coll with any >= 2; A = that folder):
 *   mpirun.openmpi -np 2 --bind-to core A/mpi_bench.openmpi latency bw --quick
 *   mpiexec.mpich -n 2 -bind-to core A/mpi_bench.mpich mt_rate --threads 1,8
 *   <build>/tools/roclrun/roclrun -n 4 A/mpi_bench.rocl mbw_mr
 *   rocl-bench mpi: all of them, all MPIs, interleaved rounds, one table.
 * Benchmarks (several may be named at once; run in the order given):
 *   latency bw bibw mbw_mr   pt2pt.c   (osu_latency, osu_bw, osu_bibw, osu_mbw_mr)
 *   mt_latency mt_rate mt_mprobe_rate
 *                            mt.c      (threads; MPI_THREAD_MULTIPLE)
 *   coll                     coll.c    (barrier, bcast, reduce, allreduce)
 *   overlap                  coll.c    (osu_iallreduce: Iallreduce hidden behind computation)
 *   put_latency get_latency acc_latency fop_latency cas_latency put_bw get_bw
 *                            rma.c     (osu_put_latency ... osu_get_bw: one-sided)
 * Options: --sizes LIST (e.g. 8,4K,64K,1M; for every benchmark named),
 *   --threads LIST [1,2,4,8], --mt-mode tag|comm [tag], --window N [64],
 *   --reps N [5], --time S [0.2], --iters N (a fixed count per repetition
 *   instead of --time) with --warmup N [N / 10], --quick (a few points, 1 rep
 *   of 0.02 s), --coll LIST (coll: only some of barrier,bcast,reduce,allreduce).
 * Output (stdout of rank 0): '#' lines (the MPI, the settings), then CSV
 *   benchmark,size_bytes,threads,median,min,max,unit
 *   with unit us, GB/s (1e9 B/s) or Mmsg/s; threads is the threads per
 *   rank (mt_*), the pairs (mbw_mr) or 1. common.c says how a point is
 *   measured. A benchmark whose data arrive wrong stops the job with a
 *   message and a non-zero status (MPI_Abort): no figures for a broken MPI.
 * MPI calls: only MPI_Init, MPI_Init_thread, MPI_Finalize, MPI_Comm_rank,
 *   MPI_Comm_size, MPI_Comm_dup, MPI_Comm_split, MPI_Comm_free, MPI_Wtime,
 *   MPI_Send, MPI_Recv, MPI_Isend, MPI_Irecv, MPI_Wait, MPI_Waitall,
 *   MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Iallreduce,
 *   MPI_Get_processor_name, MPI_Get_version, MPI_Abort, MPI_Query_thread,
 *   MPI_Win_allocate, MPI_Win_free, MPI_Win_lock, MPI_Win_unlock,
 *   MPI_Win_flush, MPI_Put, MPI_Get, MPI_Accumulate, MPI_Fetch_and_op,
 *   MPI_Compare_and_swap, MPI_Mprobe, MPI_Mrecv:
 *   the subset rocl's MPI implements. Keep it so. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef BENCH_MPI_NAME
#define BENCH_MPI_NAME "unnamed"
#endif

/* Decided before MPI starts (the options are parsed after): only a job
 * with a multithreaded benchmark asks for MPI_THREAD_MULTIPLE, because the
 * libraries take locks on every call at that level and the single-threaded
 * figures would pay for them. */
static int wants_threads(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "mt_", 3) == 0) return 1;
  }
  return 0;
}

static void start_mpi(int *argc, char ***argv, int threaded) {
  if (!threaded) {
    CHECK(MPI_Init(argc, argv));
    return;
  }
  int provided = MPI_THREAD_SINGLE;
  CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  if (provided != MPI_THREAD_MULTIPLE) {
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    die("MPI_Init_thread granted thread level %d, not MPI_THREAD_MULTIPLE (%d): the mt_* "
        "benchmarks cannot run",
        provided, MPI_THREAD_MULTIPLE);
  }
}

/* A few collectives with known answers before anything is timed: the
 * measuring loop itself relies on MPI_Barrier and MPI_Allreduce MAX. */
static void check_basics(void) {
  int mine = g_rank + 1, sum = 0, top = -1, token = g_rank == 0 ? 4242 + g_size : 0;
  CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  if (sum != g_size * (g_size + 1) / 2)
    die("MPI_Allreduce SUM gave %d, expected %d", sum, g_size * (g_size + 1) / 2);
  CHECK(MPI_Reduce(&g_rank, &top, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD));
  if (g_rank == 0 && top != g_size - 1) die("MPI_Reduce MAX gave %d, expected %d", top, g_size - 1);
  CHECK(MPI_Bcast(&token, 1, MPI_INT, 0, MPI_COMM_WORLD));
  if (token != 4242 + g_size) die("MPI_Bcast gave %d, expected %d", token, 4242 + g_size);
  CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

static void print_list(const char *label, const int *v, int n) {
  printf("%s", label);
  for (int i = 0; i < n; ++i) printf("%s%d", i ? "," : "", v[i]);
}

static void print_header(const struct options *o, const char **benches, int nbenches,
                         int threaded) {
  if (g_rank != 0) return;
  int version = 0, subversion = 0, len = 0;
  char host[MPI_MAX_PROCESSOR_NAME + 1] = "";
  CHECK(MPI_Get_version(&version, &subversion));
  CHECK(MPI_Get_processor_name(host, &len));
  printf("# mpi_bench: MPI %s (standard %d.%d), %d ranks on %s\n", BENCH_MPI_NAME, version,
         subversion, g_size, host);
  printf("# thread level: %s\n", threaded ? "MPI_THREAD_MULTIPLE" : "MPI_Init (single)");
  if (o->iters > 0) {
    printf("# %d rep(s) of %ld iterations per point after %ld untimed; window %d", o->reps,
           o->iters, o->warmup, o->window);
  } else {
    printf("# %d rep(s) of ~%g s per point; window %d", o->reps, o->seconds, o->window);
  }
  print_list("; threads ", o->threads, o->nthreads);
  printf("; mt-mode %s%s\n", o->per_thread_comm ? "comm" : "tag", o->quick ? "; quick" : "");
  printf("# benchmarks:");
  for (int i = 0; i < nbenches; ++i) printf(" %s", benches[i]);
  printf("\nbenchmark,size_bytes,threads,median,min,max,unit\n");
  fflush(stdout);
}

static void run_benchmark(const char *name, const struct options *o) {
  static const struct {
    const char *name;
    void (*run)(const struct options *);
  } table[] = {{"latency", bench_latency},
               {"bw", bench_bw},
               {"bibw", bench_bibw},
               {"mbw_mr", bench_mbw_mr},
               {"mt_latency", bench_mt_latency},
               {"mt_rate", bench_mt_rate},
               {"mt_mprobe_rate", bench_mt_mprobe_rate},
               {"coll", bench_coll},
               {"overlap", bench_overlap},
               {"put_latency", bench_put_latency},
               {"get_latency", bench_get_latency},
               {"acc_latency", bench_acc_latency},
               {"fop_latency", bench_fop_latency},
               {"cas_latency", bench_cas_latency},
               {"put_bw", bench_put_bw},
               {"get_bw", bench_get_bw}};
  for (size_t i = 0; i < sizeof table / sizeof *table; ++i) {
    if (strcmp(name, table[i].name) == 0) {
      table[i].run(o);
      return;
    }
  }
  die("no benchmark '%s'", name);
}

int main(int argc, char **argv) {
  const int threaded = wants_threads(argc, argv);
  start_mpi(&argc, &argv, threaded);
  CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &g_rank));
  CHECK(MPI_Comm_size(MPI_COMM_WORLD, &g_size));
  struct options o;
  const char *benches[kMaxList];
  int nbenches = 0;
  parse_options(argc, argv, &o, benches, &nbenches);
  check_basics();
  CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &g_comm));
  print_header(&o, benches, nbenches, threaded);
  for (int i = 0; i < nbenches; ++i) run_benchmark(benches[i], &o);
  CHECK(MPI_Comm_free(&g_comm));
  CHECK(MPI_Barrier(MPI_COMM_WORLD));
  MPI_Finalize();
  return 0;
}
