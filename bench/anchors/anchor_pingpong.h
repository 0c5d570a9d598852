/* anchor_pingpong.h - what the messaging-library anchors of rocl-bench
 * compare (zmq_pingpong.c, nng_pingpong.c) share: the command line, the
 * two sides (threads of one process for inproc, a forked process for ipc
 * and tcp), the measuring loop and the output. A library supplies the
 * message loops through struct anchor_lib; anchor_pingpong.c does the rest,
 * measuring exactly as rocl-bench and mpi_pingpong.c do (same sizes, same
 * windows, same calibration, same statistics), so that the rows sit in one
 * table.
 *
 * Rank 0 (the caller's thread, pinned to the first cpu) drives and prints;
 * rank 1 (a thread for inproc, a child process for ipc/tcp, pinned to the
 * second cpu) listens and serves what rank 0's control messages ask for:
 *   ECHO n        n round trips: receive a message, send it straight back
 *   SINK w n      n windows of w messages, a 1-byte ack after each window
 *   QUIT
 * Output (stdout of rank 0): '#' lines (library, transport, settings), then
 * CSV rows benchmark,size_bytes,pairs,median,min,max,unit with benchmark
 * latency (one-way = round trip / 2, us) or bandwidth (GB/s = 1e9 B/s).
 * Errors: "<program> (rank r): what failed" on stderr, exit status 1; every
 * receive has a 30 s timeout, and the child dies with its parent. */
#ifndef ROCL_BENCH_ANCHOR_PINGPONG_H
#define ROCL_BENCH_ANCHOR_PINGPONG_H

#include <stddef.h>
#include <stdint.h>

#include "anchor_common.h" /* anchor_clock_s for the libraries' loops */

enum { ANCHOR_QUIT = 0, ANCHOR_ECHO = 1, ANCHOR_SINK = 2 };

/* Milliseconds any receive or send may block before the anchor gives up. */
enum { ANCHOR_TIMEOUT_MS = 30000 };

/* A control message from rank 0 to rank 1. */
struct anchor_ctl {
  int64_t what; /* ANCHOR_* */
  int64_t size; /* message bytes */
  int64_t window;
  int64_t count; /* round trips (ECHO) or windows (SINK) */
};

/* One library's side of the anchor. `ep` is what listen/dial returned.
 * Every function dies (anchor_die) on an error. */
struct anchor_lib {
  const char *program; /* "zmq_pingpong": names the program in messages */
  /* "ZeroMQ 4.3.4" */
  void (*version)(char *text, size_t cap);
  /* One per process (inproc: shared by both threads); may return NULL. */
  void *(*context_new)(void);
  void (*context_free)(void *ctx);
  /* Rank 1: a socket bound for `transport` (inproc, ipc, tcp); writes the
   * address rank 0 dials into addr. */
  void *(*listen)(void *ctx, const char *transport, char *addr, size_t cap);
  /* Rank 0: a socket connected to addr. */
  void *(*dial)(void *ctx, const char *addr);
  void (*close)(void *ep);
  void (*send_ctl)(void *ep, const struct anchor_ctl *c);
  void (*recv_ctl)(void *ep, struct anchor_ctl *c);
  /* Rank 0: n round trips of `size` bytes; returns the seconds they took. */
  double (*ping)(void *ep, size_t size, long n);
  /* Rank 1: n round trips, each message sent straight back. */
  void (*echo)(void *ep, long n);
  /* Rank 0: n windows of `window` messages, waiting for the ack after each;
   * returns the seconds. */
  double (*stream)(void *ep, size_t size, int window, long n);
  /* Rank 1: n windows of `window` messages, an ack after each. */
  void (*sink)(void *ep, int window, long n);
};

/* Runs the anchor: parses argv, runs both ranks, prints the rows. Returns
 * the exit status (2 for a bad command line). */
int anchor_main(int argc, char **argv, const struct anchor_lib *lib);

/* "<program> (rank r): <message>" on stderr, then exit(1). */
void anchor_die(const char *format, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
