/* delayline.c - a fixed delay between two TAP devices, in user space
 * (tests/netns, no rocl): what netem's delay would do, which this kernel
 * does not have. hosts.sh --delay puts one between two bridges.
 *
 *   delayline --a TAPNAME --b TAPNAME --delay-ms D [--queue-bytes N]
 *
 * Creates the TAP devices A and B (IFF_TAP | IFF_NO_PI; they go when the
 * program exits) in the network namespace it runs in, and writes every
 * Ethernet frame read from one into the other D ms (fractional: 2.5; 0 to
 * 60000) after it was read, in order, each direction on its own. A
 * direction holds up to N bytes of frames (default 8 MiB, at least 64 KiB);
 * a frame that does not fit is dropped and counted (tail drop). Once both
 * devices exist it prints "delayline: ready" on stdout; the caller then
 * attaches and raises them (ip link set A master br0 up). SIGTERM or
 * SIGINT: it prints its counters on stderr and exits 0; frames still held
 * are lost.
 *
 * One thread: epoll on the two devices, a signalfd and a timerfd set to the
 * next frame's due time (CLOCK_MONOTONIC, absolute), so it sleeps when idle
 * and a frame leaves about 0.1 ms after its time. One read and one write
 * per frame, without offloads: the kernel hands it frames of at most the
 * MTU (1500 bytes), and its writes carry each frame through the bridge
 * into the receiving host's stack on its own cpu time. Measured with
 * iperf3 (TCP one way across, D = 1 ms) on a 2-cpu machine: about 1 Gbit/s
 * with a cpu to itself, which it then keeps busy, and 600 to 740 Mbit/s
 * with the cpus shared with a compiler (docs/testing.md, "Delay between
 * two sites"). Beyond what it carries frames wait, then drop, in the TAP
 * device's queue (1000 frames), as at a router.
 *
 * Exit 0 after SIGTERM/SIGINT, 1 with a sentence on stderr on failure, 2 on
 * bad arguments. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <net/if.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_tun.h>

enum {
  kFrameMax = 65536 + 64, /* a read never truncates a frame, whatever the MTU */
  kBatch = 64,            /* frames read from one device before looking around */
};
static const double kDelayMaxMs = 60000;
static const size_t kQueueDefault = 8u << 20;
static const size_t kQueueMin = 64u << 10;
static const size_t kQueueMax = 1u << 30;

enum { kEventA, kEventB, kEventTimer, kEventSignal };

/* A frame held: when it is due and its length; its bytes are in the ring. */
struct held {
  int64_t due_ns;
  uint32_t len;
};

/* One direction: frames read from `in`, written to `out` when due. The
 * frames' bytes are a ring of `cap` bytes (from `head`, `used` of them),
 * their due times and lengths a growing ring of `held`. */
struct direction {
  const char *in_name, *out_name;
  int in, out;
  unsigned char *bytes;
  size_t cap, head, used, peak;
  struct held *held;
  size_t held_cap, held_head, held_count;
  unsigned long long frames, passed, passed_bytes, dropped, dropped_bytes, lost;
};

static int64_t g_delay_ns;

static void fail(const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  fputs("delayline: ", stderr);
  vfprintf(stderr, format, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static void usage(void) {
  fprintf(stderr, "usage: delayline --a TAPNAME --b TAPNAME --delay-ms D [--queue-bytes N]\n");
  exit(2);
}

static void bad_argument(const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  fputs("delayline: ", stderr);
  vfprintf(stderr, format, ap);
  fputc('\n', stderr);
  va_end(ap);
  usage();
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Creates TAP device `name` here; its descriptor, non-blocking. */
static int open_tap(const char *name) {
  const int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail("cannot open /dev/net/tun: %s", strerror(errno));
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
  if (ioctl(fd, TUNSETIFF, &ifr) != 0)
    fail("cannot create the TAP device %s: %s%s", name, strerror(errno),
         errno == EBUSY || errno == EINVAL ? " (a device of that name exists?)" : "");
  return fd;
}

static void direction_init(struct direction *d, const char *in_name, int in, const char *out_name,
                           int out, size_t cap) {
  memset(d, 0, sizeof *d);
  d->in_name = in_name;
  d->out_name = out_name;
  d->in = in;
  d->out = out;
  d->cap = cap;
  d->bytes = malloc(cap);
  d->held_cap = 1024;
  d->held = malloc(d->held_cap * sizeof *d->held);
  if (d->bytes == NULL || d->held == NULL) fail("cannot allocate a queue of %zu bytes", cap);
}

/* Room for one more frame in d->held, or false. */
static int held_room(struct direction *d) {
  if (d->held_count < d->held_cap) return 1;
  struct held *grown = malloc(2 * d->held_cap * sizeof *grown);
  if (grown == NULL) return 0;
  for (size_t i = 0; i < d->held_count; ++i) grown[i] = d->held[(d->held_head + i) % d->held_cap];
  free(d->held);
  d->held = grown;
  d->held_head = 0;
  d->held_cap *= 2;
  return 1;
}

/* Holds frame (len bytes, read at `now`) until its due time, or drops it. */
static void hold(struct direction *d, const unsigned char *frame, size_t len, int64_t now) {
  ++d->frames;
  if (len > d->cap - d->used || !held_room(d)) {
    ++d->dropped;
    d->dropped_bytes += len;
    return;
  }
  const size_t at = (d->head + d->used) % d->cap;
  const size_t first = len < d->cap - at ? len : d->cap - at;
  memcpy(d->bytes + at, frame, first);
  memcpy(d->bytes, frame + first, len - first);
  d->used += len;
  if (d->used > d->peak) d->peak = d->used;
  d->held[(d->held_head + d->held_count) % d->held_cap] =
      (struct held){.due_ns = now + g_delay_ns, .len = (uint32_t)len};
  ++d->held_count;
}

/* Reads up to kBatch frames from d->in (all it has, if fewer). */
static void take_in(struct direction *d, unsigned char *frame) {
  for (int i = 0; i < kBatch; ++i) {
    const ssize_t n = read(d->in, frame, kFrameMax);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      fail("cannot read from %s: %s", d->in_name, strerror(errno));
    }
    if (n > 0) hold(d, frame, (size_t)n, now_ns());
  }
}

/* Writes the frames due by `now` to d->out, oldest first. A frame the
 * device refuses (down, say) is lost and counted. */
static void give_out(struct direction *d, int64_t now) {
  while (d->held_count > 0 && d->held[d->held_head].due_ns <= now) {
    const size_t len = d->held[d->held_head].len;
    const size_t first = len < d->cap - d->head ? len : d->cap - d->head;
    struct iovec parts[2] = {{d->bytes + d->head, first}, {d->bytes, len - first}};
    ssize_t w;
    do {
      w = writev(d->out, parts, first < len ? 2 : 1);
    } while (w < 0 && errno == EINTR);
    if (w == (ssize_t)len) {
      ++d->passed;
      d->passed_bytes += len;
    } else {
      ++d->lost;
    }
    d->head = (d->head + len) % d->cap;
    d->used -= len;
    d->held_head = (d->held_head + 1) % d->held_cap;
    --d->held_count;
  }
}

static void report(const struct direction *d) {
  fprintf(stderr,
          "delayline: %s->%s: %llu frames read, %llu passed (%llu bytes), %llu dropped (queue "
          "full, %llu bytes), %llu lost (write failed), %zu held at exit; queue peak %zu of %zu "
          "bytes\n",
          d->in_name, d->out_name, d->frames, d->passed, d->passed_bytes, d->dropped,
          d->dropped_bytes, d->lost, d->held_count, d->peak, d->cap);
}

/* "12.5" as a number from lo to hi, or NAN. */
static double parse_number(const char *text, double lo, double hi) {
  char *end = NULL;
  errno = 0;
  const double v = strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(v >= lo && v <= hi)) return NAN;
  return v;
}

int main(int argc, char **argv) {
  const char *name_a = NULL, *name_b = NULL, *delay_text = NULL;
  size_t queue_bytes = kQueueDefault;
  for (int i = 1; i < argc; ++i) {
    const char *opt = argv[i];
    if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0) {
      printf("usage: delayline --a TAPNAME --b TAPNAME --delay-ms D [--queue-bytes N]\n");
      return 0;
    }
    if (i + 1 >= argc) bad_argument("%s needs a value", opt);
    const char *value = argv[++i];
    if (strcmp(opt, "--a") == 0) {
      name_a = value;
    } else if (strcmp(opt, "--b") == 0) {
      name_b = value;
    } else if (strcmp(opt, "--delay-ms") == 0) {
      delay_text = value;
    } else if (strcmp(opt, "--queue-bytes") == 0) {
      const double q = parse_number(value, (double)kQueueMin, (double)kQueueMax);
      if (isnan(q) || q != floor(q))
        bad_argument("--queue-bytes must be a whole number of bytes from %zu to %zu, not '%s'",
                     kQueueMin, kQueueMax, value);
      queue_bytes = (size_t)q;
    } else {
      bad_argument("unknown option '%s'", opt);
    }
  }
  if (name_a == NULL || name_b == NULL || delay_text == NULL)
    bad_argument("--a, --b and --delay-ms are needed");
  const char *names[2] = {name_a, name_b};
  for (int i = 0; i < 2; ++i) {
    if (names[i][0] == '\0' || strlen(names[i]) >= IFNAMSIZ || strpbrk(names[i], "%/: \t\n"))
      bad_argument("bad device name '%s': 1 to %d characters, none of %%/: or spaces", names[i],
                   IFNAMSIZ - 1);
  }
  if (strcmp(name_a, name_b) == 0) bad_argument("--a and --b name the same device '%s'", name_a);
  const double delay_ms = parse_number(delay_text, 0, kDelayMaxMs);
  if (isnan(delay_ms))
    bad_argument("--delay-ms must be a number of milliseconds from 0 to %.0f, not '%s'",
                 kDelayMaxMs, delay_text);
  g_delay_ns = llround(delay_ms * 1e6);

  /* SIGTERM and SIGINT through a signalfd, blocked first: ignored ones (a
   * background job of a script ignores SIGINT) still arrive while blocked. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  if (sigprocmask(SIG_BLOCK, &stop, NULL) != 0) fail("sigprocmask: %s", strerror(errno));
  const int sfd = signalfd(-1, &stop, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) fail("signalfd: %s", strerror(errno));
  const int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (tfd < 0) fail("timerfd_create: %s", strerror(errno));

  const int fa = open_tap(name_a), fb = open_tap(name_b);
  struct direction ab, ba;
  direction_init(&ab, name_a, fa, name_b, fb, queue_bytes);
  direction_init(&ba, name_b, fb, name_a, fa, queue_bytes);
  unsigned char *frame = malloc(kFrameMax);
  if (frame == NULL) fail("cannot allocate a frame buffer");

  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) fail("epoll_create1: %s", strerror(errno));
  const int fds[4] = {fa, fb, tfd, sfd};
  for (int i = 0; i < 4; ++i) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) != 0) fail("epoll_ctl: %s", strerror(errno));
  }
  printf("delayline: ready\n");
  fflush(stdout);

  int64_t armed = 0; /* the timer's due time, 0: disarmed */
  for (;;) {
    struct epoll_event events[4];
    const int n = epoll_wait(ep, events, 4, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("epoll_wait: %s", strerror(errno));
    }
    for (int i = 0; i < n; ++i) {
      switch (events[i].data.u32) {
        case kEventA:
          take_in(&ab, frame);
          break;
        case kEventB:
          take_in(&ba, frame);
          break;
        case kEventTimer: {
          uint64_t expirations;
          if (read(tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
            fail("cannot read the timer: %s", strerror(errno));
          armed = -1; /* fired: set it again whatever comes next */
          break;
        }
        case kEventSignal: {
          struct signalfd_siginfo si;
          if (read(sfd, &si, sizeof si) != sizeof si) break;
          fprintf(stderr, "delayline: %s, stopping\n", strsignal((int)si.ssi_signo));
          report(&ab);
          report(&ba);
          return 0;
        }
      }
    }
    const int64_t now = now_ns();
    give_out(&ab, now);
    give_out(&ba, now);
    int64_t next = 0;
    if (ab.held_count > 0) next = ab.held[ab.held_head].due_ns;
    if (ba.held_count > 0 && (next == 0 || ba.held[ba.held_head].due_ns < next))
      next = ba.held[ba.held_head].due_ns;
    if (next != armed) {
      struct itimerspec when;
      memset(&when, 0, sizeof when);
      when.it_value.tv_sec = next / 1000000000;
      when.it_value.tv_nsec = next % 1000000000;
      if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &when, NULL) != 0)
        fail("cannot set the timer: %s", strerror(errno));
      armed = next;
    }
  }
}
