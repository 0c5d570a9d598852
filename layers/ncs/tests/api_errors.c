/* api_errors: every call's argument checks and error codes, in one
 * process: before NCS_init, outside a user thread, bad ids, wildcards where
 * none is allowed, a buffer too small, deadlock detection. */
#include <string.h>

#include "ncs_check.h"

static char g_from_peer[16];

static void peer(void *arg) {
  (void)arg;
  CHECK_RC(NCS_get_my_thread(), 1);
  CHECK_OK(NCS_send(1, 0, 0, 0, "bye", 4));
}

static void check_send_errors(void) {
  const char x = 'x';
  CHECK_RC(NCS_send(NCS_ANY, 0, 1, 0, &x, 1), NCS_EWILDCARD);
  CHECK_RC(NCS_send(0, NCS_ANY, 1, 0, &x, 1), NCS_EWILDCARD);
  CHECK_RC(NCS_send(0, 0, NCS_ANY, 0, &x, 1), NCS_EWILDCARD);
  CHECK_RC(NCS_send(0, 0, 1, NCS_ANY, &x, 1), NCS_EWILDCARD);
  CHECK_RC(NCS_send(1, 0, 1, 0, &x, 1), NCS_EBADID); /* not the caller */
  CHECK_RC(NCS_send(0, 1, 1, 0, &x, 1), NCS_EBADID); /* not this process */
  CHECK_RC(NCS_send(0, 0, -2, 0, &x, 1), NCS_EBADID);
  CHECK_RC(NCS_send(0, 0, NCS_MAX_THREADS, 0, &x, 1), NCS_EBADID);
  CHECK_RC(NCS_send(0, 0, 1, 1, &x, 1), NCS_EBADID); /* a job of one process */
  CHECK_RC(NCS_send(0, 0, 1, 0, NULL, 5), NCS_EINVAL);
  CHECK_RC(NCS_signal(NCS_ANY, 0), NCS_EWILDCARD);
  CHECK_RC(NCS_signal(0, 3), NCS_EBADID);
}

static void check_recv_errors(void) {
  void *data = NULL;
  size_t size = 0;
  CHECK_RC(NCS_recv(1, 0, NCS_ANY, 0, &data, &size), NCS_EWILDCARD);
  CHECK_RC(NCS_recv(1, 0, 0, NCS_ANY, &data, &size), NCS_EWILDCARD);
  CHECK_RC(NCS_recv(1, 0, 1, 0, &data, &size), NCS_EBADID); /* not the caller */
  CHECK_RC(NCS_recv(1, 5, 0, 0, &data, &size), NCS_EBADID);
  CHECK_RC(NCS_recv(-3, 0, 0, 0, &data, &size), NCS_EBADID);
  CHECK_RC(NCS_recv(1, 0, 0, 0, NULL, &size), NCS_EINVAL);
  CHECK_RC(NCS_recv(1, 0, 0, 0, &data, NULL), NCS_EINVAL);
  CHECK_RC(NCS_probe(1, 2), NCS_EBADID);
  CHECK_RC(NCS_wait(-2, 0), NCS_EBADID);
}

/* A message to oneself: too small a buffer leaves it queued. */
static void check_sizes(void) {
  char out[100], small[10];
  for (int i = 0; i < 100; ++i) out[i] = (char)i;
  CHECK_OK(NCS_send(0, 0, 0, 0, out, sizeof out));
  CHECK_RC(NCS_probe(NCS_ANY, NCS_ANY), 1);
  void *data = small;
  size_t size = sizeof small;
  CHECK_RC(NCS_recv(0, 0, 0, 0, &data, &size), NCS_ETOOBIG);
  CHECK(size == 100 && data == small, "ETOOBIG: size %zu, data moved", size);
  CHECK_RC(NCS_probe(0, 0), 1);
  data = NULL;
  NCS_id from = {-5, -5};
  CHECK_OK(NCS_recv_from(NCS_ANY, NCS_ANY, 0, 0, &data, &size, &from));
  CHECK(size == 100 && memcmp(data, out, 100) == 0, "handed-over payload differs");
  CHECK(from.thread == 0 && from.process == 0, "source %d/%d", from.thread, from.process);
  CHECK_OK(NCS_free(data));
  CHECK_RC(NCS_free(out + 64), NCS_EINVAL); /* not a payload NCS handed over */
  CHECK_OK(NCS_free(NULL));
  CHECK_RC(NCS_probe(NCS_ANY, NCS_ANY), 0);

  CHECK_OK(NCS_send(0, 0, 0, 0, NULL, 0)); /* an empty message is still a message */
  data = NULL;
  size = 77;
  CHECK_OK(NCS_recv(0, 0, 0, 0, &data, &size));
  CHECK(data != NULL && size == 0, "empty message: data %p size %zu", data, size);
  CHECK_OK(NCS_free(data));
}

static void check_groups(void) {
  NCS_id without_me[] = {{1, 0}, NCS_LIST_END};
  NCS_id me_and_peer[] = {{0, 0}, {1, 0}, NCS_LIST_END};
  NCS_id twice[] = {{0, 0}, {0, 0}, NCS_LIST_END};
  NCS_id wild[] = {{0, NCS_ANY}, NCS_LIST_END};
  NCS_id empty[] = {NCS_LIST_END};
  NCS_id stranger = {7, 0};
  int v = 1, out[2];
  CHECK_RC(NCS_bcast(0, 0, NULL, &v, sizeof v), NCS_EINVAL);
  CHECK_RC(NCS_bcast(0, 0, wild, &v, sizeof v), NCS_EWILDCARD);
  CHECK_RC(NCS_barrier(NULL), NCS_EINVAL);
  CHECK_RC(NCS_barrier(empty), NCS_EINVAL);
  CHECK_RC(NCS_barrier(twice), NCS_EINVAL);
  CHECK_RC(NCS_barrier(without_me), NCS_ENOTMEMBER);
  CHECK_RC(NCS_gather(me_and_peer, stranger, &v, sizeof v, out), NCS_EBADID);
  CHECK_RC(NCS_allgather(me_and_peer, NULL, sizeof v, out), NCS_EINVAL);
}

static void checker(void *arg) {
  (void)arg;
  CHECK_RC(NCS_get_my_thread(), 0);
  CHECK_RC(NCS_get_my_id(), 0);
  CHECK_RC(NCS_get_num_processes(), 1);
  CHECK_RC(NCS_start(), NCS_EBUSY);
  CHECK_RC(NCS_finalize(), NCS_EBUSY);
  check_send_errors();
  check_recv_errors();
  check_sizes();
  check_groups();

  /* An unblock that comes first is kept for the next block. */
  CHECK_OK(NCS_unblock(0));
  CHECK_OK(NCS_block());

  void *data = g_from_peer;
  size_t size = sizeof g_from_peer;
  CHECK_OK(NCS_recv(1, 0, 0, 0, &data, &size)); /* lets the peer run */
  CHECK(size == 4 && strcmp(g_from_peer, "bye") == 0, "peer said '%s'", g_from_peer);
  /* The peer, of lower priority, has not returned yet: it runs while this
   * thread blocks; then nothing in a one-process job can wake this one. */
  CHECK_RC(NCS_block(), NCS_EDEADLOCK);
  CHECK_RC(NCS_unblock(1), NCS_EBADID); /* it has returned */
  CHECK_RC(NCS_recv(NCS_ANY, NCS_ANY, 0, 0, &data, &size), NCS_EDEADLOCK);
  CHECK_RC(NCS_wait(NCS_ANY, NCS_ANY), NCS_EDEADLOCK);
}

int main(void) {
  CHECK(strcmp(NCS_strerror(NCS_ECORRUPT), NCS_strerror(-99)) != 0, "no text for ECORRUPT");
  CHECK(strcmp(NCS_strerror(-99), "unknown NCS error") == 0, "text for -99");
  CHECK_RC(NCS_get_my_id(), NCS_ENOINIT);
  CHECK_RC(NCS_t_create(peer, NULL, 5), NCS_ENOINIT);
  CHECK_RC(NCS_start(), NCS_ENOINIT);
  CHECK_RC(NCS_finalize(), NCS_ENOINIT);
  CHECK_RC(NCS_unblock(0), NCS_ENOINIT);
  CHECK_RC(NCS_send(0, 0, 0, 0, "x", 1), NCS_ENOINIT);
  CHECK_RC(NCS_init(-1, NCS_ERROR_TRUST), NCS_EINVAL);
  CHECK_RC(NCS_init(65536, NCS_ERROR_TRUST), NCS_EINVAL); /* the header has 16 bits for it */
  CHECK_RC(NCS_init(NCS_FLOW_NONE, 7), NCS_EINVAL);
  CHECK_RC(NCS_init_mode(NCS_FLOW_NONE, NCS_ERROR_TRUST, 9), NCS_EINVAL);

  CHECK_OK(NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST));
  CHECK_RC(NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST), NCS_EBUSY);
  CHECK_RC(NCS_send(0, 0, 0, 0, "x", 1), NCS_ENOTHREAD);
  CHECK_RC(NCS_get_my_thread(), NCS_ENOTHREAD);
  CHECK_RC(NCS_block(), NCS_ENOTHREAD);
  CHECK_RC(NCS_yield(), NCS_ENOTHREAD);
  CHECK_RC(NCS_t_create(NULL, NULL, 5), NCS_EINVAL);
  CHECK_RC(NCS_t_create(peer, NULL, NCS_PRIORITY_MAX + 1), NCS_EINVAL);
  CHECK_RC(NCS_t_create(peer, NULL, NCS_PRIORITY_MIN - 1), NCS_EINVAL);
  CHECK_RC(NCS_unblock(99), NCS_EBADID);

  CHECK_RC(NCS_t_create(checker, NULL, 10), 0);
  CHECK_RC(NCS_t_create(peer, NULL, 5), 1);
  CHECK_OK(NCS_start());
  test_done("ncs api_errors");
  CHECK_RC(NCS_get_my_id(), NCS_ENOINIT);
  return 0;
}
