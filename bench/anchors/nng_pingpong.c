/* nng_pingpong.c - the NNG anchor of rocl-bench compare: one-way latency and
 * bandwidth between two pair1 sockets over inproc (two threads of one
 * process), ipc or tcp (two processes on 127.0.0.1). anchor_pingpong.h says
 * how it measures and what it prints.
 *
 * The loops follow NNG's own perf tool: the ping side sends one nng_msg and
 * receives the answer in its place, the echo side sends the received
 * message straight back (no copy in NNG), a stream allocates a message per
 * send (nng_msg_alloc, payload not written), the receiver frees it. Send
 * and receive queues hold 128 messages, so that a window of 64 is in flight.
 *
 * Built by bench/rocl-bench/compare/CMakeLists.txt when libnng-dev is
 * installed; run e.g.
 *   nng_pingpong --transport tcp --sizes 8,64K --reps 3 --time 0.1 */
#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anchor_pingpong.h"

enum { kQueue = 128 };

struct endpoint {
  nng_socket socket;
};

static void ncheck(int rc, const char *call) {
  if (rc != 0) anchor_die("%s failed: %s", call, nng_strerror(rc));
}

static void version(char *text, size_t cap) {
  snprintf(text, cap, "NNG %s", nng_version());
}

/* NNG has no context object: its transports are process-wide. */
static void *context_new(void) {
  return NULL;
}

static void context_free(void *ctx) {
  (void)ctx;
}

static struct endpoint *new_endpoint(void) {
  struct endpoint *e = calloc(1, sizeof *e);
  if (e == NULL) anchor_die("out of memory");
  ncheck(nng_pair1_open(&e->socket), "nng_pair1_open");
  ncheck(nng_socket_set_ms(e->socket, NNG_OPT_RECVTIMEO, ANCHOR_TIMEOUT_MS), "set RECVTIMEO");
  ncheck(nng_socket_set_ms(e->socket, NNG_OPT_SENDTIMEO, ANCHOR_TIMEOUT_MS), "set SENDTIMEO");
  ncheck(nng_socket_set_int(e->socket, NNG_OPT_SENDBUF, kQueue), "set SENDBUF");
  ncheck(nng_socket_set_int(e->socket, NNG_OPT_RECVBUF, kQueue), "set RECVBUF");
  return e;
}

static void *nlisten(void *ctx, const char *transport, char *addr, size_t cap) {
  (void)ctx;
  struct endpoint *e = new_endpoint();
  if (strcmp(transport, "inproc") == 0) {
    snprintf(addr, cap, "inproc://rocl-bench-anchor-%ld", (long)getpid());
  } else if (strcmp(transport, "ipc") == 0) {
    const char *tmp = getenv("TMPDIR");
    snprintf(addr, cap, "ipc://%s/rocl-bench-nng-%ld.sock", tmp != NULL && *tmp ? tmp : "/tmp",
             (long)getpid());
  } else {
    snprintf(addr, cap, "tcp://127.0.0.1:0");
  }
  nng_listener listener;
  ncheck(nng_listen(e->socket, addr, &listener, 0), "nng_listen");
  if (strcmp(transport, "tcp") == 0) {
    int port = 0;
    ncheck(nng_listener_get_int(listener, NNG_OPT_TCP_BOUND_PORT, &port), "get TCP_BOUND_PORT");
    snprintf(addr, cap, "tcp://127.0.0.1:%d", port);
  }
  return e;
}

static void *ndial(void *ctx, const char *addr) {
  (void)ctx;
  struct endpoint *e = new_endpoint();
  ncheck(nng_dial(e->socket, addr, NULL, 0), "nng_dial");
  return e;
}

static void nclose(void *ep) {
  struct endpoint *e = ep;
  ncheck(nng_close(e->socket), "nng_close");
  free(e);
}

static void send_ctl(void *ep, const struct anchor_ctl *c) {
  struct endpoint *e = ep;
  ncheck(nng_send(e->socket, (void *)c, sizeof *c, 0), "nng_send (control)");
}

static void recv_ctl(void *ep, struct anchor_ctl *c) {
  struct endpoint *e = ep;
  size_t len = sizeof *c;
  ncheck(nng_recv(e->socket, c, &len, 0), "nng_recv (control)");
  if (len != sizeof *c) anchor_die("a control message of %zu bytes", len);
}

static double ping(void *ep, size_t size, long n) {
  struct endpoint *e = ep;
  nng_msg *msg = NULL;
  ncheck(nng_msg_alloc(&msg, size), "nng_msg_alloc");
  memset(nng_msg_body(msg), 0x5a, size);
  const double t0 = anchor_clock_s();
  for (long i = 0; i < n; ++i) {
    ncheck(nng_sendmsg(e->socket, msg, 0), "nng_sendmsg");
    ncheck(nng_recvmsg(e->socket, &msg, 0), "nng_recvmsg");
    if (nng_msg_len(msg) != size)
      anchor_die("sent %zu bytes, %zu came back", size, nng_msg_len(msg));
  }
  const double t = anchor_clock_s() - t0;
  nng_msg_free(msg);
  return t;
}

static void echo(void *ep, long n) {
  struct endpoint *e = ep;
  for (long i = 0; i < n; ++i) {
    nng_msg *msg = NULL;
    ncheck(nng_recvmsg(e->socket, &msg, 0), "nng_recvmsg");
    ncheck(nng_sendmsg(e->socket, msg, 0), "nng_sendmsg");
  }
}

static double stream(void *ep, size_t size, int window, long n) {
  struct endpoint *e = ep;
  const double t0 = anchor_clock_s();
  for (long w = 0; w < n; ++w) {
    for (int i = 0; i < window; ++i) {
      nng_msg *msg = NULL;
      ncheck(nng_msg_alloc(&msg, size), "nng_msg_alloc");
      ncheck(nng_sendmsg(e->socket, msg, 0), "nng_sendmsg");
    }
    char ack;
    size_t len = 1;
    ncheck(nng_recv(e->socket, &ack, &len, 0), "nng_recv (ack)");
  }
  return anchor_clock_s() - t0;
}

static void sink(void *ep, int window, long n) {
  struct endpoint *e = ep;
  char ack = 'a';
  for (long w = 0; w < n; ++w) {
    for (int i = 0; i < window; ++i) {
      nng_msg *msg = NULL;
      ncheck(nng_recvmsg(e->socket, &msg, 0), "nng_recvmsg");
      nng_msg_free(msg);
    }
    ncheck(nng_send(e->socket, &ack, 1, 0), "nng_send (ack)");
  }
}

int main(int argc, char **argv) {
  static const struct anchor_lib lib = {
      "nng_pingpong", version,  context_new, context_free, nlisten, ndial, nclose,
      send_ctl,       recv_ctl, ping,        echo,         stream,  sink,
  };
  return anchor_main(argc, argv, &lib);
}
