/* zmq_pingpong.c - the ZeroMQ anchor of rocl-bench compare: one-way latency
 * and bandwidth between two ZMQ_PAIR sockets over inproc (two threads of
 * one process, one context), ipc or tcp (two processes on 127.0.0.1).
 * anchor_pingpong.h says how it measures and what it prints.
 *
 * The loops are libzmq's own perf tools' (local_lat/remote_lat,
 * local_thr/remote_thr): the ping side sends one zmq_msg_t and receives the
 * answer into it, the echo side sends the received message straight back
 * (no copy in ZeroMQ), a stream allocates a message per send
 * (zmq_msg_init_size, payload not written), the receiver closes it.
 *
 * Built by bench/rocl-bench/compare/CMakeLists.txt when libzmq3-dev is
 * installed; run e.g.
 *   zmq_pingpong --transport inproc --sizes 8,64K --reps 3 --time 0.1 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "anchor_pingpong.h"

static void zcheck(int rc, const char *call) {
  if (rc < 0) anchor_die("%s failed: %s", call, zmq_strerror(zmq_errno()));
}

static void version(char *text, size_t cap) {
  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
  snprintf(text, cap, "ZeroMQ %d.%d.%d", major, minor, patch);
}

static void *context_new(void) {
  void *ctx = zmq_ctx_new();
  if (ctx == NULL) anchor_die("zmq_ctx_new failed: %s", zmq_strerror(zmq_errno()));
  return ctx;
}

static void context_free(void *ctx) {
  zcheck(zmq_ctx_term(ctx), "zmq_ctx_term");
}

static void *new_socket(void *ctx) {
  void *s = zmq_socket(ctx, ZMQ_PAIR);
  if (s == NULL) anchor_die("zmq_socket failed: %s", zmq_strerror(zmq_errno()));
  const int timeout = ANCHOR_TIMEOUT_MS, linger = 0;
  zcheck(zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeout, sizeof timeout), "zmq_setsockopt RCVTIMEO");
  zcheck(zmq_setsockopt(s, ZMQ_SNDTIMEO, &timeout, sizeof timeout), "zmq_setsockopt SNDTIMEO");
  zcheck(zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger), "zmq_setsockopt LINGER");
  return s;
}

static void *zlisten(void *ctx, const char *transport, char *addr, size_t cap) {
  void *s = new_socket(ctx);
  if (strcmp(transport, "inproc") == 0) {
    snprintf(addr, cap, "inproc://rocl-bench-anchor");
  } else if (strcmp(transport, "ipc") == 0) {
    const char *tmp = getenv("TMPDIR");
    snprintf(addr, cap, "ipc://%s/rocl-bench-zmq-%ld.sock", tmp != NULL && *tmp ? tmp : "/tmp",
             (long)getpid());
  } else {
    snprintf(addr, cap, "tcp://127.0.0.1:*");
  }
  zcheck(zmq_bind(s, addr), "zmq_bind");
  size_t len = cap;
  zcheck(zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, addr, &len), "zmq_getsockopt LAST_ENDPOINT");
  return s;
}

static void *zdial(void *ctx, const char *addr) {
  void *s = new_socket(ctx);
  zcheck(zmq_connect(s, addr), "zmq_connect");
  return s;
}

static void zclose(void *s) {
  zcheck(zmq_close(s), "zmq_close");
}

static void send_ctl(void *s, const struct anchor_ctl *c) {
  zcheck(zmq_send(s, c, sizeof *c, 0), "zmq_send (control)");
}

static void recv_ctl(void *s, struct anchor_ctl *c) {
  const int n = zmq_recv(s, c, sizeof *c, 0);
  zcheck(n, "zmq_recv (control)");
  if (n != (int)sizeof *c) anchor_die("a control message of %d bytes", n);
}

static double ping(void *s, size_t size, long n) {
  zmq_msg_t msg;
  zcheck(zmq_msg_init_size(&msg, size), "zmq_msg_init_size");
  memset(zmq_msg_data(&msg), 0x5a, size);
  const double t0 = anchor_clock_s();
  for (long i = 0; i < n; ++i) {
    zcheck(zmq_msg_send(&msg, s, 0), "zmq_msg_send");
    zcheck(zmq_msg_recv(&msg, s, 0), "zmq_msg_recv");
    if (zmq_msg_size(&msg) != size)
      anchor_die("sent %zu bytes, %zu came back", size, zmq_msg_size(&msg));
  }
  const double t = anchor_clock_s() - t0;
  zmq_msg_close(&msg);
  return t;
}

static void echo(void *s, long n) {
  zmq_msg_t msg;
  zmq_msg_init(&msg);
  for (long i = 0; i < n; ++i) {
    zcheck(zmq_msg_recv(&msg, s, 0), "zmq_msg_recv");
    zcheck(zmq_msg_send(&msg, s, 0), "zmq_msg_send");
  }
  zmq_msg_close(&msg);
}

static double stream(void *s, size_t size, int window, long n) {
  char ack;
  const double t0 = anchor_clock_s();
  for (long w = 0; w < n; ++w) {
    for (int i = 0; i < window; ++i) {
      zmq_msg_t msg;
      zcheck(zmq_msg_init_size(&msg, size), "zmq_msg_init_size");
      zcheck(zmq_msg_send(&msg, s, 0), "zmq_msg_send");
    }
    zcheck(zmq_recv(s, &ack, 1, 0), "zmq_recv (ack)");
  }
  return anchor_clock_s() - t0;
}

static void sink(void *s, int window, long n) {
  zmq_msg_t msg;
  zmq_msg_init(&msg);
  const char ack = 'a';
  for (long w = 0; w < n; ++w) {
    for (int i = 0; i < window; ++i) zcheck(zmq_msg_recv(&msg, s, 0), "zmq_msg_recv");
    zcheck(zmq_send(s, &ack, 1, 0), "zmq_send (ack)");
  }
  zmq_msg_close(&msg);
}

int main(int argc, char **argv) {
  static const struct anchor_lib lib = {
      "zmq_pingpong", version,  context_new, context_free, zlisten, zdial, zclose,
      send_ctl,       recv_ctl, ping,        echo,         stream,  sink,
  };
  return anchor_main(argc, argv, &lib);
}
