/* reach.c - is a test host reachable over TCP, and how far? (tests/netns,
 * no rocl).
 *
 *   reach listen ADDR PORT COUNT    accepts COUNT connections, one after the
 *                                   other, and sends each line of each back
 *                                   until the peer closes (2 s at most per
 *                                   line); prints "listening ADDR PORT" once
 *                                   it listens (PORT 0: the kernel's choice)
 *   reach connect ADDR PORT TEXT    connects (2 s at most), sends TEXT and a
 *                                   newline, expects them back
 *   reach unreachable ADDR PORT     succeeds when the connection fails at
 *                                   once: no route (ENETUNREACH,
 *                                   EHOSTUNREACH) or refused, within 2 s
 *   reach rtt ADDR PORT COUNT       against reach listen: COUNT round trips
 *                                   of a line over one connection, one after
 *                                   the other; prints "rtt ADDR PORT: COUNT
 *                                   round trips, min X ms, median Y ms, max
 *                                   Z ms"
 *   reach sink ADDR PORT            accepts one connection (60 s at most),
 *                                   reads until the peer closes its side,
 *                                   checks the bytes (send's pattern) and
 *                                   answers "received N"; prints "listening
 *                                   ADDR PORT" once it listens
 *   reach send ADDR PORT BYTES      sends BYTES bytes to reach sink, closes
 *                                   its side and expects "received BYTES"
 *                                   (60 s at most); prints the rate
 *
 * Exit 0 on success, 1 with a sentence on stderr on failure, 2 on bad
 * arguments. ADDR is an IPv4 address or a name (/etc/hosts of the host). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
  kTimeoutMs = 2000,
  kListenTimeoutMs = 60000,
  kBulkTimeoutMs = 60000,
  kLineMax = 4096,
  kChunk = 65536,
  kRttMax = 100000
};

static const char *g_mode = "reach";

static void fail(const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  fprintf(stderr, "reach %s: ", g_mode);
  vfprintf(stderr, format, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static void usage(void) {
  fprintf(stderr,
          "usage: reach listen ADDR PORT COUNT\n"
          "       reach connect ADDR PORT TEXT\n"
          "       reach unreachable ADDR PORT\n"
          "       reach rtt ADDR PORT COUNT\n"
          "       reach sink ADDR PORT\n"
          "       reach send ADDR PORT BYTES\n");
  exit(2);
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The byte at offset i of what send sends and sink expects. */
static unsigned char pattern(unsigned long long i) {
  return (unsigned char)(i % 251);
}

/* A positive count from text, at most max, else usage. */
static long long parse_count(const char *text, long long max) {
  char *end = NULL;
  errno = 0;
  const long long v = strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < 1 || v > max) usage();
  return v;
}

static void no_delay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Milliseconds left until deadline, at least 0. */
static int left_ms(long long deadline) {
  const long long left = deadline - now_ms();
  return left > 0 ? (int)left : 0;
}

static void resolve(const char *addr, const char *port, struct sockaddr_storage *out,
                    socklen_t *len) {
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo *res = NULL;
  const int rc = getaddrinfo(addr, port, &hints, &res);
  if (rc != 0) fail("cannot resolve %s port %s: %s", addr, port, gai_strerror(rc));
  memcpy(out, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
}

/* Waits for events on fd until deadline; 0 when the time ran out. */
static int wait_for(int fd, short events, long long deadline) {
  struct pollfd p = {.fd = fd, .events = events, .revents = 0};
  for (;;) {
    const int rc = poll(&p, 1, left_ms(deadline));
    if (rc >= 0) return rc;
    if (errno != EINTR) fail("poll: %s", strerror(errno));
  }
}

/* Starts a connection to addr:port; returns the socket and, in *err, 0 once
 * connected, the error of a failed connection, or ETIMEDOUT when neither
 * happened within kTimeoutMs. */
static int start_connect(const char *addr, const char *port, int *err) {
  struct sockaddr_storage sa;
  socklen_t len = 0;
  resolve(addr, port, &sa, &len);
  const int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("socket: %s", strerror(errno));
  *err = 0;
  if (connect(fd, (struct sockaddr *)&sa, len) == 0) return fd;
  if (errno != EINPROGRESS) {
    *err = errno;
    return fd;
  }
  if (wait_for(fd, POLLOUT, now_ms() + kTimeoutMs) == 0) {
    *err = ETIMEDOUT;
    return fd;
  }
  socklen_t elen = sizeof *err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, err, &elen) != 0) *err = errno;
  return fd;
}

/* Writes all of buf before deadline. */
static int write_all(int fd, const char *buf, size_t n, long long deadline) {
  while (n > 0) {
    const ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
    if (w > 0) {
      buf += w;
      n -= (size_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && errno == EAGAIN) {
      if (wait_for(fd, POLLOUT, deadline) == 0) {
        errno = ETIMEDOUT;
        return -1;
      }
    } else {
      return -1;
    }
  }
  return 0;
}

/* Reads up to and with a newline into line (NUL-terminated) before
 * deadline; its length, or -1 (error, end of stream, timeout, too long). */
static ssize_t read_line(int fd, char *line, size_t cap, long long deadline) {
  size_t n = 0;
  while (n + 1 < cap) {
    const ssize_t r = recv(fd, line + n, 1, 0);
    if (r == 1) {
      if (line[n++] == '\n') {
        line[n] = '\0';
        return (ssize_t)n;
      }
    } else if (r == 0) {
      errno = 0; /* end of stream */
      return -1;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN) {
      if (wait_for(fd, POLLIN, deadline) == 0) {
        errno = ETIMEDOUT;
        return -1;
      }
    } else {
      return -1;
    }
  }
  errno = EMSGSIZE;
  return -1;
}

/* A listening socket at addr:port; prints "listening ADDR PORT". */
static int start_listen(const char *addr, const char *port) {
  struct sockaddr_storage sa;
  socklen_t len = 0;
  resolve(addr, port, &sa, &len);
  const int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("socket: %s", strerror(errno));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&sa, len) != 0)
    fail("cannot bind %s port %s: %s", addr, port, strerror(errno));
  if (listen(fd, 64) != 0) fail("listen: %s", strerror(errno));
  struct sockaddr_in bound;
  socklen_t blen = sizeof bound;
  getsockname(fd, (struct sockaddr *)&bound, &blen);
  printf("listening %s %u\n", addr, (unsigned)ntohs(bound.sin_port));
  fflush(stdout);
  return fd;
}

/* The next connection to listening socket fd, before deadline (set
 * kListenTimeoutMs ahead); a failure says what did not come. */
static int accept_by(int fd, long long deadline, const char *what) {
  for (;;) {
    const int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c >= 0) {
      no_delay(c);
      return c;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno != EAGAIN) fail("accept: %s", strerror(errno));
    if (wait_for(fd, POLLIN, deadline) == 0) fail("%s within %d s", what, kListenTimeoutMs / 1000);
  }
}

static int do_listen(const char *addr, const char *port, const char *count_text) {
  const long count = (long)parse_count(count_text, 1000000);
  const int fd = start_listen(addr, port);
  const long long deadline = now_ms() + kListenTimeoutMs;
  for (long served = 0; served < count; ++served) {
    char what[64];
    snprintf(what, sizeof what, "only %ld of %ld connections", served, count);
    const int c = accept_by(fd, deadline, what);
    /* Every line back until the peer closes; the first one must come. */
    for (long lines = 0;; ++lines) {
      char line[kLineMax];
      const long long line_deadline = now_ms() + kTimeoutMs;
      const ssize_t n = read_line(c, line, sizeof line, line_deadline);
      if (n < 0 && errno == 0 && lines > 0) break;
      if (n < 0)
        fail("connection %ld: no line %ld: %s", served + 1, lines + 1,
             errno == 0 ? "connection closed" : strerror(errno));
      if (write_all(c, line, (size_t)n, line_deadline) != 0)
        fail("connection %ld: cannot echo: %s", served + 1, strerror(errno));
    }
    close(c);
  }
  close(fd);
  return 0;
}

static int do_connect(const char *addr, const char *port, const char *text) {
  if (strchr(text, '\n') != NULL || strlen(text) + 2 > kLineMax) usage();
  int err = 0;
  const int fd = start_connect(addr, port, &err);
  if (err != 0) fail("cannot connect to %s port %s: %s", addr, port, strerror(err));
  char sent[kLineMax];
  const int n = snprintf(sent, sizeof sent, "%s\n", text);
  const long long deadline = now_ms() + kTimeoutMs;
  if (write_all(fd, sent, (size_t)n, deadline) != 0)
    fail("cannot send to %s port %s: %s", addr, port, strerror(errno));
  char got[kLineMax];
  if (read_line(fd, got, sizeof got, deadline) < 0)
    fail("no echo from %s port %s: %s", addr, port,
         errno == 0 ? "connection closed" : strerror(errno));
  if (strcmp(got, sent) != 0)
    fail("%s port %s echoed \"%.*s\", not \"%s\"", addr, port, (int)strcspn(got, "\n"), got, text);
  close(fd);
  printf("reached %s port %s: \"%s\" came back\n", addr, port, text);
  return 0;
}

static int do_unreachable(const char *addr, const char *port) {
  int err = 0;
  const int fd = start_connect(addr, port, &err);
  close(fd);
  switch (err) {
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ECONNREFUSED:
      printf("%s port %s is unreachable: %s\n", addr, port, strerror(err));
      return 0;
    case 0:
      fail("connected to %s port %s, which should be unreachable", addr, port);
      break;
    case ETIMEDOUT:
      fail(
          "%s port %s was neither reached nor refused within %d s: a route leads somewhere "
          "(out of the test networks?) or nobody on its subnet answers",
          addr, port, kTimeoutMs / 1000);
      break;
    default:
      fail("connecting to %s port %s failed otherwise: %s", addr, port, strerror(err));
  }
  return 1;
}

static int compare_ns(const void *a, const void *b) {
  const long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

static int do_rtt(const char *addr, const char *port, const char *count_text) {
  const int count = (int)parse_count(count_text, kRttMax);
  int err = 0;
  const int fd = start_connect(addr, port, &err);
  if (err != 0) fail("cannot connect to %s port %s: %s", addr, port, strerror(err));
  no_delay(fd);
  long long *rtt = malloc((size_t)count * sizeof *rtt);
  if (rtt == NULL) fail("out of memory");
  for (int i = 0; i < count; ++i) {
    char sent[64], got[kLineMax];
    const int n = snprintf(sent, sizeof sent, "round trip %d\n", i + 1);
    const long long start = now_ns();
    const long long deadline = now_ms() + kTimeoutMs;
    if (write_all(fd, sent, (size_t)n, deadline) != 0)
      fail("cannot send to %s port %s: %s", addr, port, strerror(errno));
    if (read_line(fd, got, sizeof got, deadline) < 0)
      fail("round trip %d: no echo from %s port %s: %s", i + 1, addr, port,
           errno == 0 ? "connection closed" : strerror(errno));
    rtt[i] = now_ns() - start;
    if (strcmp(got, sent) != 0)
      fail("round trip %d: %s port %s echoed otherwise", i + 1, addr, port);
  }
  close(fd);
  qsort(rtt, (size_t)count, sizeof *rtt, compare_ns);
  printf("rtt %s %s: %d round trips, min %.3f ms, median %.3f ms, max %.3f ms\n", addr, port, count,
         rtt[0] / 1e6, rtt[count / 2] / 1e6, rtt[count - 1] / 1e6);
  free(rtt);
  return 0;
}

static int do_sink(const char *addr, const char *port) {
  const int fd = start_listen(addr, port);
  const int c = accept_by(fd, now_ms() + kListenTimeoutMs, "no connection");
  close(fd);
  const long long deadline = now_ms() + kBulkTimeoutMs;
  static unsigned char buf[kChunk];
  unsigned long long total = 0;
  for (;;) {
    const ssize_t r = recv(c, buf, sizeof buf, 0);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) fail("after %llu bytes: %s", total, strerror(errno));
      if (wait_for(c, POLLIN, deadline) == 0)
        fail("after %llu bytes, the rest did not come within %d s", total, kBulkTimeoutMs / 1000);
      continue;
    }
    for (ssize_t i = 0; i < r; ++i) {
      if (buf[i] != pattern(total + (unsigned long long)i))
        fail("byte %llu is %u, not %u", total + (unsigned long long)i, buf[i],
             pattern(total + (unsigned long long)i));
    }
    total += (unsigned long long)r;
  }
  char line[64];
  const int n = snprintf(line, sizeof line, "received %llu\n", total);
  if (write_all(c, line, (size_t)n, now_ms() + kTimeoutMs) != 0)
    fail("cannot answer: %s", strerror(errno));
  close(c);
  return 0;
}

static int do_send(const char *addr, const char *port, const char *bytes_text) {
  const unsigned long long bytes = (unsigned long long)parse_count(bytes_text, 1LL << 40);
  int err = 0;
  const int fd = start_connect(addr, port, &err);
  if (err != 0) fail("cannot connect to %s port %s: %s", addr, port, strerror(err));
  const long long start = now_ns();
  const long long deadline = now_ms() + kBulkTimeoutMs;
  static unsigned char buf[kChunk];
  for (unsigned long long sent = 0; sent < bytes;) {
    const size_t n = bytes - sent < kChunk ? (size_t)(bytes - sent) : kChunk;
    for (size_t i = 0; i < n; ++i) buf[i] = pattern(sent + i);
    if (write_all(fd, (const char *)buf, n, deadline) != 0)
      fail("after %llu bytes to %s port %s: %s", sent, addr, port, strerror(errno));
    sent += n;
  }
  shutdown(fd, SHUT_WR);
  char got[kLineMax], want[64];
  snprintf(want, sizeof want, "received %llu\n", bytes);
  if (read_line(fd, got, sizeof got, deadline) < 0)
    fail("no answer from %s port %s: %s", addr, port,
         errno == 0 ? "connection closed" : strerror(errno));
  if (strcmp(got, want) != 0)
    fail("%s port %s answered \"%.*s\" to %llu bytes", addr, port, (int)strcspn(got, "\n"), got,
         bytes);
  const double s = (now_ns() - start) / 1e9;
  close(fd);
  printf("sent %llu bytes to %s port %s in %.3f s: %.1f Mbit/s\n", bytes, addr, port, s,
         bytes * 8 / s / 1e6);
  return 0;
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  if (argc < 2) usage();
  g_mode = argv[1];
  if (strcmp(argv[1], "listen") == 0 && argc == 5) return do_listen(argv[2], argv[3], argv[4]);
  if (strcmp(argv[1], "connect") == 0 && argc == 5) return do_connect(argv[2], argv[3], argv[4]);
  if (strcmp(argv[1], "unreachable") == 0 && argc == 4) return do_unreachable(argv[2], argv[3]);
  if (strcmp(argv[1], "rtt") == 0 && argc == 5) return do_rtt(argv[2], argv[3], argv[4]);
  if (strcmp(argv[1], "sink") == 0 && argc == 4) return do_sink(argv[2], argv[3]);
  if (strcmp(argv[1], "send") == 0 && argc == 5) return do_send(argv[2], argv[3], argv[4]);
  usage();
  return 2;
}
