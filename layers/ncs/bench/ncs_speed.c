/* ncs_speed: the speed of NCS's user threads, the figures `rocl-bench ncs`
 * shows (docs/ncs.md, "Benchmarks"), each beside an anchor measured in the
 * same run:
 *
 *   ncs_speed local [--reps N] [--time S]
 *     alone; pins itself to the first cpu it may use. Two user threads of
 *     one priority:
 *       ncs/switch           they call NCS_yield in turn: time per switch
 *                            from one user thread to the other
 *       ncs/wake-local       8 B ping-pong, NCS_send to a thread blocked in
 *                            NCS_recv: from the send until the receive
 *                            returns (round trip / 2)
 *       futex/handoff-onecpu the anchor: two kernel threads on that cpu
 *                            hand a turn back and forth with FUTEX_WAIT and
 *                            FUTEX_WAKE: one hand-off (round trip / 2)
 *   roclrun --bind-to core -n 2 ncs_speed remote [--reps N] [--time S]
 *     one user thread in each process:
 *       ncs/wake-remote      8 B ping-pong between them: from the send
 *                            until the receiver, blocked in NCS_recv in
 *                            the other process, returns (round trip / 2)
 *       rocl/pingpong        the anchor: the same between two rocl
 *                            resources of the same processes, with the
 *                            rocl calls NCS makes (rocl_bfget, a copy,
 *                            rocl_bftoret + rocl_send; rocl_recv, a copy,
 *                            rocl_bfret) and nothing of NCS's own
 *
 * Each figure is measured --reps times for --time seconds (CLOCK_MONOTONIC
 * around batches of 16 steps) after a warm-up of a tenth of that; the
 * figures take turns within each repetition, so that a slow spell of the
 * machine touches them alike. Output (rank 0): '#' comments, then
 * rocl-bench's rows benchmark,size_bytes,pairs,median,min,max,unit in us.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <ncs.h>
#include <pthread.h>
#include <rocl/rocl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { kMaxReps = 1000, kBatch = 16 };

/* What the driving thread sends its partner: a ping is any other value. */
static const uint64_t kYieldPhase = UINT64_MAX;
static const uint64_t kRoclPhase = UINT64_MAX - 1;
static const uint64_t kQuit = UINT64_MAX - 2;
/* The rocl ping-pong's tags. */
enum { kPingTag = 1, kStopTag = 2 };

static int g_reps = 5;
static double g_seconds = 0.2;

static void die(const char *what, int rc, const char *why) {
  fprintf(stderr, "ncs_speed: %s failed: %d (%s)\n", what, rc, why);
  exit(1);
}

static void check_ncs(const char *what, int rc) {
  if (rc < 0) die(what, rc, NCS_strerror(rc));
}

static void check_rocl(const char *what, int rc) {
  if (rc < 0) die(what, rc, rocl_last_error());
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs batch(ctx) (kBatch steps, returning how many units they were) until
 * `seconds` have passed; returns microseconds per unit. */
static double run_for(double seconds, long (*batch)(void *), void *ctx) {
  long units = 0;
  const double start = now();
  double elapsed = 0;
  do {
    units += batch(ctx);
    elapsed = now() - start;
  } while (elapsed < seconds);
  return elapsed / (double)units * 1e6;
}

/* ---- the peer a user thread talks to ------------------------------------------ */

struct Peer {
  int my_thread, my_process;
  int thread, process;
  rocl_gid_t my_resource, resource; /* the rocl ping-pong's (remote only) */
};

static void send8(const struct Peer *p, uint64_t v) {
  check_ncs("NCS_send", NCS_send(p->my_thread, p->my_process, p->thread, p->process, &v, sizeof v));
}

static uint64_t recv8(const struct Peer *p) {
  uint64_t v = 0;
  void *data = &v;
  size_t size = sizeof v;
  check_ncs("NCS_recv", NCS_recv(p->thread, p->process, p->my_thread, p->my_process, &data, &size));
  return v;
}

/* The rocl calls NCS makes for a message: a pool buffer, a copy into it,
 * the buffer handed to rocl_send. */
static void rocl_send8(const struct Peer *p, int tag, uint64_t v) {
  void *b = rocl_bfget(sizeof v);
  if (b == NULL) die("rocl_bfget", ROCL_ENOMEM, rocl_last_error());
  memcpy(b, &v, sizeof v);
  check_rocl("rocl_bftoret", rocl_bftoret(b));
  check_rocl("rocl_send", rocl_send(p->my_resource, p->resource, tag, b, sizeof v));
}

/* rocl_recv, a copy out, the buffer back to the pool; returns the tag. */
static int rocl_recv8(const struct Peer *p, uint64_t *v) {
  void *b = NULL;
  int tag = 0;
  check_rocl("rocl_recv",
             rocl_recv(p->my_resource, p->resource, ROCL_ANY_TAG, &b, NULL, &tag, NULL, -1));
  memcpy(v, b, sizeof *v);
  check_rocl("rocl_bfret", rocl_bfret(b));
  return tag;
}

/* ---- the partner: follows what the driving thread asks --------------------------- */

static atomic_int g_stop_yielding;

static void partner(void *arg) {
  const struct Peer *p = arg;
  for (;;) {
    const uint64_t v = recv8(p);
    if (v == kQuit) return;
    if (v == kYieldPhase) {
      while (!atomic_load(&g_stop_yielding)) NCS_yield();
    } else if (v == kRoclPhase) {
      uint64_t ping = 0;
      while (rocl_recv8(p, &ping) == kPingTag) rocl_send8(p, kPingTag, ping);
    } else {
      send8(p, v);
    }
  }
}

/* ---- the figures, one batch each ------------------------------------------------- */

static long yield_batch(void *arg) {
  (void)arg;
  for (int i = 0; i < kBatch; ++i) NCS_yield();
  return 2 * kBatch; /* each yield is answered by the partner's */
}

static double measure_switch(const struct Peer *p, double seconds) {
  atomic_store(&g_stop_yielding, 0);
  send8(p, kYieldPhase);
  NCS_yield(); /* the partner takes the message and starts yielding */
  const double us = run_for(seconds, yield_batch, NULL);
  atomic_store(&g_stop_yielding, 1);
  NCS_yield(); /* it sees the flag and waits for the next message */
  return us;
}

static long ncs_pingpong_batch(void *arg) {
  const struct Peer *p = arg;
  for (uint64_t i = 0; i < kBatch; ++i) {
    send8(p, i);
    if (recv8(p) != i) die("ping-pong", -1, "the echo is not the ping");
  }
  return 2 * kBatch; /* one-way trips */
}

static double measure_ncs_pingpong(const struct Peer *p, double seconds) {
  return run_for(seconds, ncs_pingpong_batch, (void *)p);
}

static long rocl_pingpong_batch(void *arg) {
  const struct Peer *p = arg;
  for (uint64_t i = 0; i < kBatch; ++i) {
    uint64_t echo = 0;
    rocl_send8(p, kPingTag, i);
    if (rocl_recv8(p, &echo) != kPingTag || echo != i) die("rocl ping-pong", -1, "a wrong echo");
  }
  return 2 * kBatch;
}

static double measure_rocl_pingpong(const struct Peer *p, double seconds) {
  send8(p, kRoclPhase);
  const double us = run_for(seconds, rocl_pingpong_batch, (void *)p);
  rocl_send8(p, kStopTag, 0);
  return us;
}

/* The anchor of the switch: two kernel threads of one cpu. The turn is odd
 * when the pinging side has handed it over, even when the echo has handed
 * it back; kFutexStop ends the echo. */
static const uint32_t kFutexStop = 0x80000000u;
static const uint32_t kFutexMask = 0x7fffffffu;

struct Turn {
  _Alignas(64) _Atomic uint32_t word;
  uint32_t next;
};

static uint32_t futex_wait_for(struct Turn *t, uint32_t expected) {
  for (;;) {
    const uint32_t v = atomic_load_explicit(&t->word, memory_order_acquire);
    if (v == expected || v == kFutexStop) return v;
    syscall(SYS_futex, &t->word, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
  }
}

static void futex_hand_over(struct Turn *t, uint32_t v) {
  atomic_store_explicit(&t->word, v, memory_order_release);
  syscall(SYS_futex, &t->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *futex_echo(void *arg) {
  struct Turn *t = arg;
  for (uint32_t expected = 1;; expected = (expected + 2) & kFutexMask) {
    if (futex_wait_for(t, expected) == kFutexStop) return NULL;
    futex_hand_over(t, (expected + 1) & kFutexMask);
  }
}

static long futex_batch(void *arg) {
  struct Turn *t = arg;
  for (int i = 0; i < kBatch; ++i) {
    futex_hand_over(t, (t->next + 1) & kFutexMask);
    futex_wait_for(t, (t->next + 2) & kFutexMask);
    t->next = (t->next + 2) & kFutexMask;
  }
  return 2 * kBatch;
}

/* The echo thread inherits the caller's affinity: the one cpu local mode
 * pinned the process to. */
static double measure_futex(const struct Peer *p, double seconds) {
  (void)p;
  struct Turn t = {.next = 0};
  atomic_init(&t.word, 0);
  pthread_t echo;
  const int rc = pthread_create(&echo, NULL, futex_echo, &t);
  if (rc != 0) die("pthread_create", rc, strerror(rc));
  const double us = run_for(seconds, futex_batch, &t);
  atomic_store(&t.word, kFutexStop);
  syscall(SYS_futex, &t.word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  pthread_join(echo, NULL);
  return us;
}

/* ---- the runs -------------------------------------------------------------------------- */

struct Figure {
  const char *name;
  size_t size;
  double (*measure)(const struct Peer *, double);
  double us[kMaxReps];
};

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void print_rows(struct Figure *figures, int n) {
  printf("benchmark,size_bytes,pairs,median,min,max,unit\n");
  for (int f = 0; f < n; ++f) {
    double *us = figures[f].us;
    qsort(us, (size_t)g_reps, sizeof *us, by_value);
    const double median = g_reps % 2 ? us[g_reps / 2] : (us[g_reps / 2 - 1] + us[g_reps / 2]) / 2;
    printf("%s,%zu,1,%.9g,%.9g,%.9g,us\n", figures[f].name, figures[f].size, median, us[0],
           us[g_reps - 1]);
  }
  fflush(stdout);
}

/* Warms each figure up, then measures them in turn, --reps times. */
static void measure_all(const struct Peer *p, struct Figure *figures, int n) {
  for (int f = 0; f < n; ++f) figures[f].measure(p, g_seconds / 10);
  for (int rep = 0; rep < g_reps; ++rep) {
    for (int f = 0; f < n; ++f) figures[f].us[rep] = figures[f].measure(p, g_seconds);
  }
}

static struct Figure g_local[] = {
    {"ncs/switch", 0, measure_switch, {0}},
    {"ncs/wake-local", 8, measure_ncs_pingpong, {0}},
    {"futex/handoff-onecpu", 0, measure_futex, {0}},
};
static struct Figure g_remote[] = {
    {"ncs/wake-remote", 8, measure_ncs_pingpong, {0}},
    {"rocl/pingpong", 8, measure_rocl_pingpong, {0}},
};

static void drive(void *arg) {
  const struct Peer *p = arg;
  if (p->process == p->my_process) {
    measure_all(p, g_local, 3);
  } else {
    measure_all(p, g_remote, 2);
  }
  send8(p, kQuit);
}

/* The first cpu this process may use, now its only one; -1 if unknown. */
static int pin_to_first_cpu(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 ? cpu : -1;
  }
  return -1;
}

static void run_local(void) {
  const int cpu = pin_to_first_cpu();
  check_ncs("NCS_init", NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST));
  printf("# ncs_speed local: one process on cpu %d; %d rep(s) of %g s per figure\n", cpu, g_reps,
         g_seconds);
  struct Peer driver = {0, 0, 1, 0, ROCL_NULL_GID, ROCL_NULL_GID};
  struct Peer follower = {1, 0, 0, 0, ROCL_NULL_GID, ROCL_NULL_GID};
  check_ncs("NCS_t_create", NCS_t_create(drive, &driver, 8));
  check_ncs("NCS_t_create", NCS_t_create(partner, &follower, 8));
  check_ncs("NCS_start", NCS_start());
  print_rows(g_local, 3);
  check_ncs("NCS_finalize", NCS_finalize());
}

/* {type=ncs_speed, rank=R}: a rank's resource for the rocl ping-pong. */
static rocl_attrl_t *rank_attrs(int rank) {
  char text[16];
  snprintf(text, sizeof text, "%d", rank);
  rocl_attrl_t *a = rocl_new_attrl(256);
  rocl_add_attr(a, "type", "ncs_speed", 9);
  rocl_add_attr(a, "rank", text, (int)strlen(text));
  return a;
}

/* This process's resource for the rocl ping-pong, and the other's. */
static void rocl_pair(int me, rocl_gid_t *mine, rocl_gid_t *other) {
  rocl_attrl_t *a = rank_attrs(me);
  const int64_t gid = rocl_register(a);
  if (gid <= 0) die("rocl_register", (int)gid, rocl_last_error());
  *mine = (rocl_gid_t)gid;
  rocl_kill_attrl(a);
  a = rank_attrs(1 - me);
  check_rocl("rocl_query_wait", rocl_query_wait(a, 1, 60000));
  check_rocl("rocl_query", rocl_query(other, a));
  rocl_kill_attrl(a);
}

static void run_remote(void) {
  check_ncs("NCS_init", NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST));
  const int me = NCS_get_my_id();
  if (NCS_get_num_processes() != 2) {
    fprintf(stderr, "ncs_speed remote: wants 2 processes (roclrun -n 2), not %d\n",
            NCS_get_num_processes());
    exit(2);
  }
  struct Peer p = {0, me, 0, 1 - me, ROCL_NULL_GID, ROCL_NULL_GID};
  rocl_pair(me, &p.my_resource, &p.resource);
  const char *transports = getenv("ROCL_TRANSPORTS");
  if (me == 0) {
    printf(
        "# ncs_speed remote: 2 processes, rank 0 on cpu %d; ROCL_TRANSPORTS=%s; %d rep(s) of "
        "%g s per figure\n",
        sched_getcpu(), transports ? transports : "(unset: shm on one host)", g_reps, g_seconds);
  }
  check_ncs("NCS_t_create", NCS_t_create(me == 0 ? drive : partner, &p, 8));
  check_ncs("NCS_start", NCS_start());
  if (me == 0) print_rows(g_remote, 2);
  check_rocl("rocl_delete", rocl_delete(p.my_resource));
  check_ncs("NCS_finalize", NCS_finalize());
}

static void usage(const char *why) {
  fprintf(stderr,
          "ncs_speed: %s\nusage: ncs_speed local [--reps N] [--time S]\n"
          "       roclrun --bind-to core -n 2 ncs_speed remote [--reps N] [--time S]\n",
          why);
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "local") != 0 && strcmp(argv[1], "remote") != 0)) {
    usage("local or remote first");
  }
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) usage("a value after each option");
    char *end = NULL;
    if (strcmp(argv[i], "--reps") == 0) {
      g_reps = (int)strtol(argv[i + 1], &end, 10);
      if (*end != '\0' || g_reps < 1 || g_reps > kMaxReps) usage("--reps takes 1 to 1000");
    } else if (strcmp(argv[i], "--time") == 0) {
      g_seconds = strtod(argv[i + 1], &end);
      if (*end != '\0' || !(g_seconds > 0) || g_seconds > 3600) usage("--time takes seconds > 0");
    } else {
      usage("unknown option");
    }
  }
  if (strcmp(argv[1], "local") == 0) {
    run_local();
  } else {
    run_remote();
  }
  return 0;
}
