/* anchor_pingpong.c - see anchor_pingpong.h. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include "anchor_pingpong.h"
#include "anchor_common.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMaxSizes = 64, kAddrCap = 512 };

#define MAX_IN_FLIGHT ((size_t)256 << 20)
#define MAX_VOLUME (64.0 * 1024 * 1024 * 1024) /* bytes per latency repetition */
#define MAX_ROUND_TRIPS 5000000L

struct options {
  const char *transport;
  size_t sizes[kMaxSizes], bw_sizes[kMaxSizes];
  int nsizes, nbw;
  int reps;
  double seconds;
  int window;
  int cpus[2]; /* -1: not pinned */
};

static const struct anchor_lib *g_lib;
static _Thread_local int g_rank;

void anchor_die(const char *format, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, format);
  vsnprintf(text, sizeof text, format, ap);
  va_end(ap);
  fprintf(stderr, "%s (rank %d): %s\n", g_lib != NULL ? g_lib->program : "anchor", g_rank, text);
  fflush(stdout);
  exit(1);
}

/* ---- the command line ------------------------------------------------------ */

static void usage(FILE *out) {
  fprintf(out,
          "usage: %s --transport inproc|ipc|tcp [--sizes LIST] [--bw-sizes LIST] [--reps N]\n"
          "       [--time S] [--window N] [--cpus A,B | --no-pin] [--quick]\n"
          "  one-way latency (ping-pong / 2) and windowed bandwidth, rocl-bench's way;\n"
          "  sizes like 8,4K,1M [1,4,...,16M]; bandwidth sizes [the latency sizes];\n"
          "  5 reps of 0.2 s; window 64; rank 0 on the first usable cpu, rank 1 on the\n"
          "  second; --quick: sizes 8,64K, 1 rep of 0.02 s\n",
          g_lib->program);
}

static void bad_usage(const char *what, const char *arg) {
  fprintf(stderr, "%s: %s '%s'\n", g_lib->program, what, arg);
  usage(stderr);
  exit(2);
}

static int parse_list(const char *text, size_t *out) {
  int n = 0;
  const char *p = text;
  while (*p != '\0') {
    char *end = NULL;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 1) bad_usage("bad size list", text);
    if (*end == 'K' || *end == 'k')
      v <<= 10, ++end;
    else if (*end == 'M' || *end == 'm')
      v <<= 20, ++end;
    else if (*end == 'G' || *end == 'g')
      v <<= 30, ++end;
    if (n == kMaxSizes || (*end != ',' && *end != '\0')) bad_usage("bad size list", text);
    out[n++] = (size_t)v;
    p = *end == ',' ? end + 1 : end;
  }
  if (n == 0) bad_usage("empty size list", text);
  return n;
}

static void default_cpus(int cpus[2]) {
  cpu_set_t set;
  int found = 0;
  cpus[0] = cpus[1] = -1;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus[found++] = cpu;
  }
  if (found < 2) cpus[0] = cpus[1] = -1;
}

static void parse_options(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  for (size_t s = 1; s <= ((size_t)16 << 20); s *= 4) o->sizes[o->nsizes++] = s;
  o->reps = 5;
  o->seconds = 0.2;
  o->window = 64;
  default_cpus(o->cpus);
  int quick = 0, sizes_set = 0, reps_set = 0, time_set = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    } else if (strcmp(a, "--quick") == 0) {
      quick = 1;
    } else if (strcmp(a, "--no-pin") == 0) {
      o->cpus[0] = o->cpus[1] = -1;
    } else if (v == NULL) {
      bad_usage("unknown or incomplete argument", a);
    } else if (strcmp(a, "--transport") == 0) {
      if (strcmp(v, "inproc") != 0 && strcmp(v, "ipc") != 0 && strcmp(v, "tcp") != 0)
        bad_usage("--transport takes inproc, ipc or tcp, not", v);
      o->transport = v, ++i;
    } else if (strcmp(a, "--sizes") == 0) {
      o->nsizes = parse_list(v, o->sizes), sizes_set = 1, ++i;
    } else if (strcmp(a, "--bw-sizes") == 0) {
      o->nbw = parse_list(v, o->bw_sizes), ++i;
    } else if (strcmp(a, "--reps") == 0 && atoi(v) > 0) {
      o->reps = atoi(v), reps_set = 1, ++i;
    } else if (strcmp(a, "--time") == 0 && atof(v) > 0) {
      o->seconds = atof(v), time_set = 1, ++i;
    } else if (strcmp(a, "--window") == 0 && atoi(v) > 0) {
      o->window = atoi(v), ++i;
    } else if (strcmp(a, "--cpus") == 0 && sscanf(v, "%d,%d", &o->cpus[0], &o->cpus[1]) == 2 &&
               o->cpus[0] >= 0 && o->cpus[1] >= 0) {
      ++i;
    } else {
      bad_usage("unknown or incomplete argument", a);
    }
  }
  if (o->transport == NULL) bad_usage("--transport is required", "");
  if (quick) {
    if (!sizes_set) o->sizes[0] = 8, o->sizes[1] = 64 << 10, o->nsizes = 2;
    if (!reps_set) o->reps = 1;
    if (!time_set) o->seconds = 0.02;
  }
  if (o->nbw == 0) {
    memcpy(o->bw_sizes, o->sizes, sizeof o->sizes);
    o->nbw = o->nsizes;
  }
}

/* ---- the measuring side (rank 0) -------------------------------------------- */

/* rocl-bench's window rule: at most MAX_IN_FLIGHT bytes of power-of-two
 * blocks (payload + 192 bytes of header, at least 256) in flight. */
static int window_for(size_t size, int window) {
  size_t block = 256;
  while (block < size + 192) block *= 2;
  size_t fit = MAX_IN_FLIGHT / block;
  if (fit < 1) fit = 1;
  return (size_t)window < fit ? window : (int)fit;
}

struct point {
  void *ep;
  size_t size;
  int window;
};

static double latency_run(struct point *p, long n) {
  struct anchor_ctl c = {ANCHOR_ECHO, (int64_t)p->size, 1, n};
  g_lib->send_ctl(p->ep, &c);
  return g_lib->ping(p->ep, p->size, n);
}

static double bandwidth_run(struct point *p, long n) {
  struct anchor_ctl c = {ANCHOR_SINK, (int64_t)p->size, p->window, n};
  g_lib->send_ctl(p->ep, &c);
  return g_lib->stream(p->ep, p->size, p->window, n);
}

static void drive(void *ep, const struct options *o) {
  double *samples = calloc((size_t)o->reps, sizeof *samples);
  if (samples == NULL) anchor_die("out of memory");
  for (int s = 0; s < o->nsizes; ++s) {
    struct point p = {ep, o->sizes[s], 1};
    if (s == 0) { /* just connected: an untimed warm-up */
      struct point w = {ep, 8, 1};
      anchor_plan(latency_run, &w, o->seconds < 0.05 ? o->seconds : 0.05, MAX_ROUND_TRIPS);
    }
    long most = (long)(MAX_VOLUME / (double)p.size);
    if (most < 1000) most = 1000;
    if (most > MAX_ROUND_TRIPS) most = MAX_ROUND_TRIPS;
    const long n = anchor_plan(latency_run, &p, o->seconds, most);
    for (int r = 0; r < o->reps; ++r) samples[r] = latency_run(&p, n) / (double)n / 2 * 1e6;
    anchor_print_row("latency", p.size, samples, o->reps, "us");
  }
  for (int s = 0; s < o->nbw; ++s) {
    struct point p = {ep, o->bw_sizes[s], window_for(o->bw_sizes[s], o->window)};
    const long n = anchor_plan(bandwidth_run, &p, o->seconds, 1L << 30);
    for (int r = 0; r < o->reps; ++r) {
      const double t = bandwidth_run(&p, n);
      samples[r] = (double)n * p.window * (double)p.size / t / 1e9;
    }
    anchor_print_row("bandwidth", p.size, samples, o->reps, "GB/s");
  }
  struct anchor_ctl quit = {ANCHOR_QUIT, 0, 0, 0};
  g_lib->send_ctl(ep, &quit);
  free(samples);
}

/* ---- the serving side (rank 1) ---------------------------------------------- */

static void serve(void *ep) {
  for (;;) {
    struct anchor_ctl c;
    g_lib->recv_ctl(ep, &c);
    switch (c.what) {
      case ANCHOR_QUIT:
        return;
      case ANCHOR_ECHO:
        g_lib->echo(ep, c.count);
        break;
      case ANCHOR_SINK:
        g_lib->sink(ep, (int)c.window, c.count);
        break;
      default:
        anchor_die("unknown control message %lld", (long long)c.what);
    }
  }
}

static void pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (rc != 0)
    fprintf(stderr, "%s: warning: cannot pin to cpu %d: %s\n", g_lib->program, cpu, strerror(rc));
}

/* ---- inproc: two threads ---------------------------------------------------- */

struct rendezvous {
  pthread_mutex_t lock;
  pthread_cond_t ready;
  void *ctx;
  int cpu;
  char addr[kAddrCap];
};

static void *rank1_thread(void *arg) {
  struct rendezvous *rv = arg;
  g_rank = 1;
  pin(rv->cpu);
  char addr[kAddrCap];
  void *ep = g_lib->listen(rv->ctx, "inproc", addr, sizeof addr);
  pthread_mutex_lock(&rv->lock);
  snprintf(rv->addr, sizeof rv->addr, "%s", addr);
  pthread_cond_signal(&rv->ready);
  pthread_mutex_unlock(&rv->lock);
  serve(ep);
  g_lib->close(ep);
  return NULL;
}

static void run_threads(const struct options *o) {
  struct rendezvous rv = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, o->cpus[1],
                          ""};
  rv.ctx = g_lib->context_new();
  pthread_t thread;
  if (pthread_create(&thread, NULL, rank1_thread, &rv) != 0) anchor_die("pthread_create failed");
  pthread_mutex_lock(&rv.lock);
  while (rv.addr[0] == '\0') pthread_cond_wait(&rv.ready, &rv.lock);
  pthread_mutex_unlock(&rv.lock);
  void *ep = g_lib->dial(rv.ctx, rv.addr);
  drive(ep, o);
  pthread_join(thread, NULL);
  g_lib->close(ep);
  g_lib->context_free(rv.ctx);
}

/* ---- ipc, tcp: two processes ------------------------------------------------ */

static void run_child(const struct options *o, int out, pid_t parent) {
  g_rank = 1;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  pin(o->cpus[1]);
  void *ctx = g_lib->context_new();
  char addr[kAddrCap];
  void *ep = g_lib->listen(ctx, o->transport, addr, sizeof addr);
  const size_t len = strlen(addr) + 1;
  if (write(out, addr, len) != (ssize_t)len) anchor_die("cannot pass the address to rank 0");
  close(out);
  serve(ep);
  g_lib->close(ep);
  g_lib->context_free(ctx);
  _exit(0);
}

/* Reads the child's address (NUL-terminated) within the timeout. */
static void read_address(int in, char *addr, size_t cap) {
  size_t got = 0;
  const double deadline = anchor_clock_s() + ANCHOR_TIMEOUT_MS / 1000.0;
  while (got == 0 || addr[got - 1] != '\0') {
    struct pollfd p = {in, POLLIN, 0};
    const int left = (int)((deadline - anchor_clock_s()) * 1000);
    if (left <= 0 || poll(&p, 1, left) == 0) anchor_die("rank 1 gave no address in time");
    const ssize_t n = read(in, addr + got, cap - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) anchor_die("rank 1 ended before it gave its address");
    got += (size_t)n;
    if (got == cap && addr[got - 1] != '\0') anchor_die("rank 1's address is too long");
  }
}

static void wait_child(pid_t child) {
  const double deadline = anchor_clock_s() + ANCHOR_TIMEOUT_MS / 1000.0;
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(child, &status, WNOHANG);
    if (r == child) break;
    if (r < 0 && errno != EINTR) anchor_die("waitpid: %s", strerror(errno));
    if (anchor_clock_s() > deadline) {
      kill(child, SIGKILL);
      anchor_die("rank 1 did not exit after QUIT");
    }
    usleep(1000);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    anchor_die("rank 1 ended with %s %d", WIFEXITED(status) ? "status" : "signal",
               WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  }
}

static void run_processes(const struct options *o) {
  int fds[2];
  if (pipe(fds) != 0) anchor_die("pipe: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) anchor_die("fork: %s", strerror(errno));
  if (child == 0) {
    close(fds[0]);
    run_child(o, fds[1], parent);
  }
  close(fds[1]);
  char addr[kAddrCap];
  read_address(fds[0], addr, sizeof addr);
  close(fds[0]);
  void *ctx = g_lib->context_new();
  void *ep = g_lib->dial(ctx, addr);
  drive(ep, o);
  wait_child(child);
  g_lib->close(ep);
  g_lib->context_free(ctx);
}

int anchor_main(int argc, char **argv, const struct anchor_lib *lib) {
  g_lib = lib;
  struct options o;
  parse_options(argc, argv, &o);
  char version[128];
  lib->version(version, sizeof version);
  printf("# library: %s; transport %s\n", version, o.transport);
  printf("# %d rep(s) of ~%.3g s per point; window %d; ", o.reps, o.seconds, o.window);
  if (o.cpus[0] >= 0) {
    printf("rank 0 on cpu %d, rank 1 on cpu %d\n", o.cpus[0], o.cpus[1]);
  } else {
    printf("not pinned\n");
  }
  printf("benchmark,size_bytes,pairs,median,min,max,unit\n");
  fflush(stdout);
  pin(o.cpus[0]);
  if (strcmp(o.transport, "inproc") == 0) {
    run_threads(&o);
  } else {
    run_processes(&o);
  }
  return 0;
}
