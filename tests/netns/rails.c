/* rails.c - messages between two hosts that share several networks (rails),
 * for rails_test.sh: run under roclrun -n 2, rank 0 and rank 1 on two test
 * hosts, over tcp with an end-point per network (ROCL_TCP_BIND=eth0,eth1),
 * so that large messages are striped over the rails and reassembled.
 *
 *   rails big [MiB]      rank 0 sends rank 1 one message of MiB (default 64)
 *                        three times; rank 1 tells it at once that it has
 *                        the message (rank 0 prints the time from the send
 *                        to that reply: "rails big: N MiB in T s = X MB/s"),
 *                        then checks every byte and sends its verdict.
 *                        Rank 0 prints "rails big: ok" once all three came
 *                        whole.
 *   rails mixed [count]  4 threads a rank, each with a resource of its own,
 *                        send count (default 3000) messages to the same
 *                        thread of the other rank while receiving its
 *                        messages: sizes from a seeded generator, half up to
 *                        1 KiB, most others up to 256 KiB, 1 in 50 of 1 to
 *                        4 MiB (striped). Each message starts with (thread,
 *                        seq, length, FNV-1a 64 of the rest); the receiver
 *                        checks each is there once, in order, whole. Each
 *                        rank prints "rails mixed: ok" with totals.
 *
 * Exit 0 on success; 1 with a sentence on stderr naming the rank, the
 * thread and what went wrong; 2 for bad arguments. Only the public API. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <rocl/rocl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
  kTagBig = 1,      /* big: the large message */
  kTagGot = 2,      /* big: the receiver has it (empty) */
  kTagVerdict = 3,  /* big: the receiver's check, "ok" or what was wrong */
  kTagData = 10,    /* mixed: a message of the stream */
  kTagDone = 11,    /* mixed: the stream's end, carrying its count */
  kRounds = 3,      /* big: messages sent */
  kThreads = 4,     /* mixed: threads a rank */
  kWindow = 8,      /* mixed: messages a thread sends ahead of its receives */
  kRecvMs = 60000,  /* every receive's timeout */
  kFindMs = 30000,  /* how long to wait for the peer's resources */
  kVerdictMax = 256 /* big: longest verdict */
};

#define MIB ((size_t)1 << 20)
#define KIB ((size_t)1 << 10)

static int g_rank = -1;

/* Prints "rails rank R: <sentence>" and ends the process at once: other
 * threads may be inside rocl calls, so no exit handlers run. */
static void die(const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  fprintf(stderr, "rails rank %d: ", g_rank);
  vfprintf(stderr, format, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(NULL);
  _exit(1);
}

/* Dies unless rc is ROCL_OK, naming what failed and rocl's own sentence. */
static void check(int rc, const char *what) {
  if (rc != ROCL_OK) die("%s failed: %s (%s)", what, rocl_strerror(rc), rocl_last_error());
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t fnv1a64(const unsigned char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/* ---- finding the peer ----------------------------------------------------- */

static rocl_attrl_t *resource_attrs(int rank, int thread) {
  char rank_text[16], thread_text[16];
  snprintf(rank_text, sizeof rank_text, "%d", rank);
  snprintf(thread_text, sizeof thread_text, "%d", thread);
  rocl_attrl_t *a = rocl_new_attrl(0);
  if (a == NULL) die("rocl_new_attrl: out of memory");
  check(rocl_add_attr(a, "type", "rails", 5), "rocl_add_attr(type)");
  check(rocl_add_attr(a, "rank", rank_text, (int)strlen(rank_text)), "rocl_add_attr(rank)");
  check(rocl_add_attr(a, "thread", thread_text, (int)strlen(thread_text)), "rocl_add_attr(thread)");
  return a;
}

/* Registers {type=rails, rank, thread}: this rank's resource for thread. */
static rocl_gid_t register_resource(int thread) {
  rocl_attrl_t *a = resource_attrs(g_rank, thread);
  const int64_t gid = rocl_register(a);
  rocl_kill_attrl(a);
  if (gid <= 0)
    die("rocl_register (thread %d) failed: %s (%s)", thread, rocl_strerror((int)gid),
        rocl_last_error());
  return (rocl_gid_t)gid;
}

/* The other rank's resource for thread, once it is in the job's directory. */
static rocl_gid_t find_peer(int thread) {
  rocl_attrl_t *q = resource_attrs(1 - g_rank, thread);
  int rc = rocl_query_wait(q, 1, kFindMs);
  if (rc < 0)
    die("rank %d's resource for thread %d did not appear within %d s: %s (%s)", 1 - g_rank, thread,
        kFindMs / 1000, rocl_strerror(rc), rocl_last_error());
  rocl_gid_t gid = ROCL_NULL_GID;
  check(rocl_query(&gid, q), "rocl_query (the peer's resource)");
  rocl_kill_attrl(q);
  return gid;
}

/* Receives a message with tag from peer on me, within kRecvMs; dies naming
 * what was awaited otherwise. The buffer is the caller's. */
static void *receive(rocl_gid_t me, rocl_gid_t peer, int tag, size_t *len, const char *what) {
  void *p = NULL;
  const int rc = rocl_recv(me, peer, tag, &p, NULL, NULL, len, kRecvMs);
  if (rc == ROCL_ETIMEDOUT) die("%s: nothing came within %d s", what, kRecvMs / 1000);
  if (rc != ROCL_OK)
    die("receiving %s failed: %s (%s)", what, rocl_strerror(rc), rocl_last_error());
  return p;
}

/* Sends a pool buffer of len bytes, consumed by the send (no copy). */
static void send_buffer(rocl_gid_t me, rocl_gid_t peer, int tag, void *buf, size_t len,
                        const char *what) {
  check(rocl_bftoret(buf), "rocl_bftoret");
  const int rc = rocl_send(me, peer, tag, buf, len);
  if (rc != ROCL_OK) {
    const char *sentence = rocl_last_error();
    die("sending %s (%zu B) failed: %s (%s)", what, len, rocl_strerror(rc), sentence);
  }
}

static void *get_buffer(size_t len) {
  void *p = rocl_bfget(len);
  if (p == NULL) die("rocl_bfget(%zu) failed: %s", len, rocl_last_error());
  return p;
}

/* ---- big: one large message at a time ------------------------------------- */

/* Word i of round's pattern: differs by round and by position. */
static uint64_t big_word(int round, size_t i) {
  return splitmix64(((uint64_t)round << 48) ^ i);
}

static void fill_big(unsigned char *p, size_t n, int round) {
  for (size_t i = 0; i < n / 8; ++i) {
    const uint64_t w = big_word(round, i);
    memcpy(p + 8 * i, &w, 8);
  }
}

/* Writes into verdict "ok", or where the bytes first differ and how many
 * 8-byte words do. n is a multiple of 8. */
static void check_big(const unsigned char *p, size_t n, int round, char *verdict, size_t cap) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n / 8; ++i) {
    const uint64_t want = big_word(round, i);
    if (memcmp(p + 8 * i, &want, 8) != 0 && bad++ == 0) first = 8 * i;
  }
  if (bad == 0)
    snprintf(verdict, cap, "ok");
  else
    snprintf(verdict, cap,
             "round %d: %zu of %zu 8-byte words differ from what was sent, the first at byte "
             "%zu (%.2f MiB in)",
             round + 1, bad, n / 8, first, (double)first / (double)MIB);
}

/* The network of every large message's buffer (rocl_bfnet), or NULL. */
static const char *g_buffer_network;

static void big_sender(rocl_gid_t me, rocl_gid_t peer, size_t mib) {
  const size_t n = mib * MIB;
  for (int round = 0; round < kRounds; ++round) {
    unsigned char *buf = get_buffer(n);
    if (g_buffer_network != NULL) check(rocl_bfnet(buf, g_buffer_network), "rocl_bfnet");
    fill_big(buf, n, round);
    const double start = now_s();
    send_buffer(me, peer, kTagBig, buf, n, "the large message");
    check(rocl_bfret(receive(me, peer, kTagGot, NULL, "rank 1's word that it has the message")),
          "rocl_bfret");
    const double secs = now_s() - start;
    printf("rails big: %zu MiB in %.3f s = %.1f MB/s\n", mib, secs, (double)n / secs / 1e6);
    fflush(stdout);
    size_t len = 0;
    char *verdict = receive(me, peer, kTagVerdict, &len, "rank 1's verdict");
    if (len != 2 || memcmp(verdict, "ok", 2) != 0)
      die("rank 1 found the message damaged: %.*s", (int)len, verdict);
    check(rocl_bfret(verdict), "rocl_bfret");
  }
  printf("rails big: ok (%d messages of %zu MiB from rank 0 to rank 1, every byte checked)\n",
         kRounds, mib);
}

static void big_receiver(rocl_gid_t me, rocl_gid_t peer, size_t mib) {
  const size_t n = mib * MIB;
  for (int round = 0; round < kRounds; ++round) {
    size_t len = 0;
    unsigned char *p = receive(me, peer, kTagBig, &len, "the large message");
    check(rocl_send(me, peer, kTagGot, NULL, 0), "rocl_send (got it)");
    char verdict[kVerdictMax];
    if (len != n)
      snprintf(verdict, sizeof verdict, "round %d: %zu bytes arrived, %zu were sent", round + 1,
               len, n);
    else
      check_big(p, n, round, verdict, sizeof verdict);
    check(rocl_bfret(p), "rocl_bfret");
    check(rocl_send(me, peer, kTagVerdict, verdict, strlen(verdict)), "rocl_send (verdict)");
    if (strcmp(verdict, "ok") != 0) {
      fprintf(stderr, "rails rank 1: the large message was damaged: %s\n", verdict);
      rocl_exit(); /* delivers the verdict */
      exit(1);
    }
    printf("rails big: round %d: %zu MiB intact\n", round + 1, mib);
  }
}

/* ---- mixed: 4 threads, sizes small to striped ------------------------------- */

struct header {
  uint32_t thread; /* the sender's thread */
  uint32_t seq;    /* 0, 1, ... per (sender, receiver) pair */
  uint64_t len;    /* the whole message's length */
  uint64_t sum;    /* FNV-1a 64 of the bytes after the header */
};

/* The sizes of one sender thread's messages, in order: both ranks draw
 * them, the sender to send, the receiver to check. */
struct sizes {
  uint64_t state;
};

static struct sizes sizes_of(int rank, int thread) {
  struct sizes s = {splitmix64(UINT64_C(0x7261696c73) + (uint64_t)rank * 100u + (uint64_t)thread)};
  return s;
}

static size_t next_size(struct sizes *s) {
  const uint64_t r = splitmix64(s->state++);
  const uint64_t pick = r % 100, more = r >> 8;
  if (pick < 50) return sizeof(struct header) + more % (KIB - sizeof(struct header) + 1);
  if (pick < 98) return KIB + 1 + more % (256 * KIB - KIB);
  return MIB + more % (3 * MIB + 1);
}

static void fill_message(unsigned char *p, size_t len, int rank, int thread, uint32_t seq) {
  const uint64_t seed = ((uint64_t)rank << 40) ^ ((uint64_t)thread << 32) ^ seq;
  unsigned char *body = p + sizeof(struct header);
  const size_t n = len - sizeof(struct header);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t w = splitmix64(seed * 0x1000003ull + i);
    memcpy(body + i, &w, n - i < 8 ? n - i : 8);
  }
  const struct header h = {(uint32_t)thread, seq, len, fnv1a64(body, n)};
  memcpy(p, &h, sizeof h);
}

struct stream {
  int thread;
  rocl_gid_t me, peer;
  unsigned count;
  struct sizes out, in; /* sizes we send, sizes the peer sends */
  /* totals */
  unsigned received, striped;
  uint64_t bytes_in, bytes_out;
};

static void send_message(struct stream *s, uint32_t seq) {
  const size_t len = next_size(&s->out);
  unsigned char *buf = get_buffer(len);
  fill_message(buf, len, g_rank, s->thread, seq);
  send_buffer(s->me, s->peer, kTagData, buf, len, "a message of the mixed stream");
  s->bytes_out += len;
}

/* Receives message seq of the peer's stream and checks it. */
static void receive_message(struct stream *s, uint32_t seq) {
  char what[96];
  snprintf(what, sizeof what, "thread %d: message %u from rank %d thread %d", s->thread, seq,
           1 - g_rank, s->thread);
  size_t len = 0;
  unsigned char *p = receive(s->me, s->peer, kTagData, &len, what);
  const size_t want_len = next_size(&s->in);
  struct header h = {0, 0, 0, 0};
  if (len < sizeof h) die("%s: %zu bytes arrived, fewer than a header", what, len);
  memcpy(&h, p, sizeof h);
  if (h.seq != seq)
    die("thread %d: expected seq %u from rank %d thread %d, got seq %u (%zu B): %s", s->thread, seq,
        1 - g_rank, s->thread, h.seq, len,
        h.seq < seq ? "a duplicate or out of order" : "messages lost or out of order");
  if (h.thread != (uint32_t)s->thread) die("%s: it says it came from thread %u", what, h.thread);
  if (h.len != len || len != want_len)
    die("%s: %zu bytes arrived, its header says %llu, %zu were sent", what, len,
        (unsigned long long)h.len, want_len);
  if (fnv1a64(p + sizeof h, len - sizeof h) != h.sum)
    die("%s (%zu B): its bytes differ from what was sent (checksum)", what, len);
  check(rocl_bfret(p), "rocl_bfret");
  ++s->received;
  s->bytes_in += len;
  if (len >= MIB) ++s->striped;
}

/* After the stream: the peer's end says how many it sent, and nothing
 * follows it (a message sent twice would be there). */
static void finish_stream(struct stream *s) {
  uint32_t count = s->count;
  check(rocl_send(s->me, s->peer, kTagDone, &count, sizeof count), "rocl_send (end)");
  size_t len = 0;
  char what[64];
  snprintf(what, sizeof what, "thread %d: the end of rank %d's stream", s->thread, 1 - g_rank);
  void *p = receive(s->me, s->peer, kTagDone, &len, what);
  uint32_t sent = 0;
  if (len == sizeof sent) memcpy(&sent, p, sizeof sent);
  check(rocl_bfret(p), "rocl_bfret");
  if (len != sizeof sent || sent != s->count)
    die("%s: it sent %u messages, %u received", what, sent, s->received);
  void *extra = NULL;
  size_t extra_len = 0;
  const int rc = rocl_recv(s->me, s->peer, kTagData, &extra, NULL, NULL, &extra_len, 0);
  if (rc == ROCL_OK) {
    struct header h = {0, 0, 0, 0};
    if (extra_len >= sizeof h) memcpy(&h, extra, sizeof h);
    die("thread %d: a message after all %u from rank %d thread %d: seq %u (%zu B), sent twice?",
        s->thread, s->count, 1 - g_rank, s->thread, h.seq, extra_len);
  }
  if (rc != ROCL_ETIMEDOUT)
    die("thread %d: looking for messages after the end: %s (%s)", s->thread, rocl_strerror(rc),
        rocl_last_error());
}

static void *run_stream(void *arg) {
  struct stream *s = arg;
  s->me = register_resource(s->thread);
  s->peer = find_peer(s->thread);
  s->out = sizes_of(g_rank, s->thread);
  s->in = sizes_of(1 - g_rank, s->thread);
  for (uint32_t seq = 0; seq < s->count; ++seq) {
    send_message(s, seq);
    if (seq >= kWindow) receive_message(s, seq - kWindow);
  }
  for (uint32_t seq = s->count > kWindow ? s->count - kWindow : 0; seq < s->count; ++seq)
    receive_message(s, seq);
  finish_stream(s);
  return NULL;
}

static void mixed(unsigned count) {
  struct stream streams[kThreads];
  pthread_t threads[kThreads];
  const double start = now_s();
  for (int t = 0; t < kThreads; ++t) {
    memset(&streams[t], 0, sizeof streams[t]);
    streams[t].thread = t;
    streams[t].count = count;
    const int rc = pthread_create(&threads[t], NULL, run_stream, &streams[t]);
    if (rc != 0) die("pthread_create: %s", strerror(rc));
  }
  unsigned received = 0, striped = 0;
  uint64_t bytes_in = 0, bytes_out = 0;
  for (int t = 0; t < kThreads; ++t) {
    const int rc = pthread_join(threads[t], NULL);
    if (rc != 0) die("pthread_join: %s", strerror(rc));
    received += streams[t].received;
    striped += streams[t].striped;
    bytes_in += streams[t].bytes_in;
    bytes_out += streams[t].bytes_out;
  }
  const double secs = now_s() - start;
  printf(
      "rails mixed: ok: %d threads, %u messages received (%.1f MiB, %u of at least 1 MiB), "
      "%.1f MiB sent, in %.2f s; each once, in order, whole\n",
      kThreads, received, (double)bytes_in / (double)MIB, striped, (double)bytes_out / (double)MIB,
      secs);
}

/* ---- main ----------------------------------------------------------------- */

static void usage(void) {
  fprintf(stderr,
          "usage: rails big [MiB [NETWORK]] | rails mixed [count]   (under roclrun -n 2)\n"
          "  NETWORK: rank 0's resource sends over that network alone (rocl_route);\n"
          "  buffer:NETWORK: its buffers do (rocl_bfnet)\n");
  exit(2);
}

/* argv[2] as a number in 1..max, or def without it. */
static unsigned long number_arg(int argc, char **argv, unsigned long def, unsigned long max) {
  if (argc < 3) return def;
  char *end = NULL;
  const unsigned long v = strtoul(argv[2], &end, 10);
  if (*end != '\0' || v < 1 || v > max) usage();
  return v;
}

int main(int argc, char **argv) {
  if (argc < 2) usage();
  const int big = strcmp(argv[1], "big") == 0;
  if (!big && strcmp(argv[1], "mixed") != 0) usage();
  const unsigned long n =
      big ? number_arg(argc, argv, 64, 1024) : number_arg(argc, argv, 3000, 1000000);
  const char *rank = getenv("ROCL_RANK"), *size = getenv("ROCL_SIZE");
  if (rank == NULL || size == NULL || strcmp(size, "2") != 0) {
    fprintf(stderr, "rails: run it under roclrun -n 2 (ROCL_RANK, ROCL_SIZE=2)\n");
    return 2;
  }
  g_rank = atoi(rank) == 0 ? 0 : 1;
  const int64_t context = rocl_init();
  if (context <= 0)
    die("rocl_init failed: %s (%s)", rocl_strerror((int)context), rocl_last_error());
  if ((big && argc > 4) || (!big && argc > 3)) usage();
  if (big) {
    const rocl_gid_t me = register_resource(0), peer = find_peer(0);
    if (g_rank == 0 && argc == 4) {
      /* A network that is not there is refused, naming those that are;
       * "buffer:NET" names the buffers' network instead of the resource's. */
      const int by_buffer = strncmp(argv[3], "buffer:", 7) == 0;
      const char *network = by_buffer ? argv[3] + 7 : argv[3];
      void *probe = get_buffer(16);
      const int refused =
          by_buffer ? rocl_bfnet(probe, "no-such-network") : rocl_route(me, "no-such-network");
      if (refused != ROCL_EINVAL) die("a network that does not exist was accepted");
      if (strstr(rocl_last_error(), "no-such-network") == NULL)
        die("the refusal does not name the network: %s", rocl_last_error());
      check(rocl_bfret(probe), "rocl_bfret");
      if (by_buffer)
        g_buffer_network = network;
      else
        check(rocl_route(me, network), "rocl_route");
      printf("rails big: rank 0 sends over %s (%s)\n", network,
             by_buffer ? "rocl_bfnet" : "rocl_route");
    }
    if (g_rank == 0)
      big_sender(me, peer, n);
    else
      big_receiver(me, peer, n);
  } else {
    mixed((unsigned)n);
  }
  check(rocl_exit(), "rocl_exit");
  return 0;
}
