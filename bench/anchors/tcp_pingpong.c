/* tcp_pingpong.c - the limit of a TCP path: a bare socket ping-pong and
 * stream between two hosts (or processes), measured as rocl-bench measures
 * rocl (one-way latency = round trip / 2; bandwidth in windows of messages
 * with a 1-byte ack after each window; median, min and max of --reps runs
 * of --time seconds), so that its rows sit next to rocl's and the MPIs'.
 * At its best, as rocl is at its: receives poll the socket (recv with
 * MSG_DONTWAIT in a loop, no sleep and wake-up; --block for blocking
 * receives) and connections use the congestion control rocl asks for
 * (cubic, not a system default of bbr, which paces a ping-pong's bursts).
 *
 *   tcp_pingpong serve ADDRESS PORT [--block]   (the echo/sink side; one client)
 *   tcp_pingpong run ADDRESS PORT [--sizes LIST] [--bw-sizes LIST]
 *                [--reps N] [--time S] [--window N] [--block]
 *
 * One connection, TCP_NODELAY on both sides, blocking send/recv of whole
 * messages (what a library does at best on this path, with no framing).
 * Output (stdout of `run`): '#' lines, then CSV rows
 *   benchmark,size_bytes,pairs,median,min,max,unit
 * benchmark latency (us) or bandwidth (GB/s = 1e9 B/s). Exit 1 with a
 * sentence on any error; every socket operation times out after 30 s. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum { QUIT = 0, ECHO = 1, SINK = 2 };
struct ctl {
  int64_t what, size, window, count;
};

static void die(const char *what) {
  fprintf(stderr, "tcp_pingpong: %s: %s\n", what, errno ? strerror(errno) : "failed");
  exit(1);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int g_block = 0; /* --block: blocking receives */

static void full(int fd, void *p, size_t n, int writing) {
  char *c = p;
  const double give_up = now_s() + 30;
  while (n > 0) {
    ssize_t k = writing ? send(fd, c, n, MSG_NOSIGNAL) : recv(fd, c, n, g_block ? 0 : MSG_DONTWAIT);
    if (k <= 0) {
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && !writing && !g_block && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (now_s() > give_up) die("recv: nothing for 30 s");
        continue;
      }
      if (k == 0) errno = 0;
      die(writing ? "send" : "recv (the peer went away?)");
    }
    c += k;
    n -= (size_t)k;
  }
}

static void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "cubic", 5); /* as rocl's connections */
  struct timeval tv = {30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static struct sockaddr_in address(const char *ip, const char *port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)atoi(port));
  if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
    errno = EINVAL;
    die("address");
  }
  return a;
}

static void serve(const char *ip, const char *port) {
  struct sockaddr_in a = address(ip, port);
  int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0) die("listen");
  printf("listening %s %s\n", ip, port);
  fflush(stdout);
  int fd = accept(l, NULL, NULL);
  if (fd < 0) die("accept");
  tune(fd);
  char *buf = NULL;
  size_t cap = 0;
  for (;;) {
    struct ctl c;
    full(fd, &c, sizeof c, 0);
    if (c.what == QUIT) break;
    if ((size_t)c.size > cap) {
      free(buf);
      cap = (size_t)c.size;
      buf = malloc(cap ? cap : 1);
      if (buf == NULL) die("malloc");
    }
    if (c.what == ECHO) {
      for (int64_t i = 0; i < c.count; ++i) {
        full(fd, buf, (size_t)c.size, 0);
        full(fd, buf, (size_t)c.size, 1);
      }
    } else {
      char ack = 1;
      for (int64_t i = 0; i < c.count; ++i) {
        for (int64_t w = 0; w < c.window; ++w) full(fd, buf, (size_t)c.size, 0);
        full(fd, &ack, 1, 1);
      }
    }
  }
  close(fd);
  close(l);
}

/* Seconds for `count` round trips (ECHO) or windows (SINK). */
static double run_once(int fd, char *buf, int what, size_t size, long window, long count) {
  struct ctl c = {what, (int64_t)size, window, count};
  full(fd, &c, sizeof c, 1);
  const double t0 = now_s();
  if (what == ECHO) {
    for (long i = 0; i < count; ++i) {
      full(fd, buf, size, 1);
      full(fd, buf, size, 0);
    }
  } else {
    char ack;
    for (long i = 0; i < count; ++i) {
      for (long w = 0; w < window; ++w) full(fd, buf, size, 1);
      full(fd, &ack, 1, 0);
    }
  }
  return now_s() - t0;
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Calibrates a count lasting `seconds`, then `reps` timed runs; prints the
 * row (per = the unit's value of one run: us one-way or GB/s). */
static void point(int fd, char *buf, int what, size_t size, long window, int reps, double seconds) {
  long count = 8;
  double t;
  while ((t = run_once(fd, buf, what, size, window, count)) < seconds / 10 && count < (1L << 30)) {
    count *= 4;
  }
  count = (long)((double)count * seconds / (t > 1e-9 ? t : 1e-9));
  if (count < 1) count = 1;
  double v[64];
  if (reps > 64) reps = 64;
  for (int r = 0; r < reps; ++r) {
    t = run_once(fd, buf, what, size, window, count);
    v[r] = what == ECHO ? t / (double)count / 2 * 1e6
                        : (double)size * (double)window * (double)count / t / 1e9;
  }
  qsort(v, (size_t)reps, sizeof v[0], cmp);
  printf("%s,%zu,1,%.4f,%.4f,%.4f,%s\n", what == ECHO ? "latency" : "bandwidth", size, v[reps / 2],
         v[0], v[reps - 1], what == ECHO ? "us" : "GB/s");
  fflush(stdout);
}

static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (*end == 'K') v *= 1024;
  if (*end == 'M') v *= 1024 * 1024;
  return (size_t)v;
}

static int parse_list(char *list, size_t *out, int cap) {
  int n = 0;
  for (char *t = strtok(list, ","); t != NULL && n < cap; t = strtok(NULL, ",")) {
    out[n++] = parse_size(t);
  }
  return n;
}

int main(int argc, char **argv) {
  for (int i = 4; i < argc; ++i) {
    if (strcmp(argv[i], "--block") == 0) g_block = 1;
  }
  if (argc >= 4 && strcmp(argv[1], "serve") == 0) {
    serve(argv[2], argv[3]);
    return 0;
  }
  if (argc < 4 || strcmp(argv[1], "run") != 0) {
    fprintf(stderr, "usage: tcp_pingpong serve ADDRESS PORT | run ADDRESS PORT [options]\n");
    return 2;
  }
  size_t sizes[32] = {8, 1 << 20}, bw[32] = {1 << 20};
  int nsizes = 2, nbw = 1, reps = 5;
  long window = 64;
  double seconds = 0.2;
  for (int i = 4; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--block") == 0) {
      --i; /* a flag: no value */
      continue;
    }
    if (strcmp(argv[i], "--sizes") == 0)
      nsizes = parse_list(argv[i + 1], sizes, 32);
    else if (strcmp(argv[i], "--bw-sizes") == 0)
      nbw = parse_list(argv[i + 1], bw, 32);
    else if (strcmp(argv[i], "--reps") == 0)
      reps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--time") == 0)
      seconds = atof(argv[i + 1]);
    else if (strcmp(argv[i], "--window") == 0)
      window = atol(argv[i + 1]);
  }
  struct sockaddr_in a = address(argv[2], argv[3]);
  int fd = -1;
  for (int tries = 0; tries < 100; ++tries) { /* the server may still be starting */
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) break;
    close(fd);
    fd = -1;
    usleep(20000);
  }
  if (fd < 0) die("connect");
  tune(fd);
  size_t most = 1;
  for (int i = 0; i < nsizes; ++i) most = sizes[i] > most ? sizes[i] : most;
  for (int i = 0; i < nbw; ++i) most = bw[i] > most ? bw[i] : most;
  char *buf = calloc(1, most);
  if (buf == NULL) die("calloc");
  printf(
      "# bare TCP socket, TCP_NODELAY, cubic, %s receives, %s:%s; %d reps of %.2f s, "
      "window %ld\n",
      g_block ? "blocking" : "polling", argv[2], argv[3], reps, seconds, window);
  printf("benchmark,size_bytes,pairs,median,min,max,unit\n");
  for (int i = 0; i < nsizes; ++i) point(fd, buf, ECHO, sizes[i], window, reps, seconds);
  for (int i = 0; i < nbw; ++i) point(fd, buf, SINK, bw[i], window, reps, seconds);
  struct ctl quit = {QUIT, 0, 0, 0};
  full(fd, &quit, sizeof quit, 1);
  close(fd);
  free(buf);
  return 0;
}
