/* checksum: with NCS_ERROR_CHECKSUM a payload corrupted after its checksum
 * was computed (the test hook flips a byte, as a faulty link would) makes
 * the receive that takes it fail with NCS_ECORRUPT, and the messages around
 * it arrive intact; with NCS_ERROR_TRUST the same corruption goes through.
 * Alone: between two threads of one process; under roclrun -n N: from
 * process 0 to every other. */
#include <string.h>

#include "ncs_check.h"
#include "testing_hooks.h"

enum { kLarge = 64 * 1024 };

static unsigned char g_large[kLarge];

static void send_all(int to_thread, int to_process) {
  const int me = NCS_get_my_thread(), p = NCS_get_my_id();
  CHECK_OK(NCS_send(me, p, to_thread, to_process, "good-1", 7));
  ncs_testing_corrupt_next_send(3);
  CHECK_OK(NCS_send(me, p, to_thread, to_process, "spoiled", 8));
  CHECK_OK(NCS_send(me, p, to_thread, to_process, "good-2", 7));
  ncs_testing_corrupt_next_send(40000);
  CHECK_OK(NCS_send(me, p, to_thread, to_process, g_large, kLarge));
  CHECK_OK(NCS_send(me, p, to_thread, to_process, "good-3", 7));
}

static void expect_text(const char *text, int from_thread, int from_process) {
  char in[16] = {0};
  void *data = in;
  size_t size = sizeof in;
  CHECK_OK(NCS_recv(from_thread, from_process, NCS_get_my_thread(), NCS_get_my_id(), &data, &size));
  CHECK(strcmp(in, text) == 0, "got '%s', expected '%s'", in, text);
}

static void expect_corrupt(int from_thread, int from_process) {
  void *data = NULL;
  size_t size = 12345;
  NCS_id from = {-5, -5};
  CHECK_RC(NCS_recv_from(NCS_ANY, from_process, NCS_get_my_thread(), NCS_get_my_id(), &data, &size,
                         &from),
           NCS_ECORRUPT);
  CHECK(data == NULL && size == 12345, "a corrupt receive changed data or size");
  CHECK(from.thread == from_thread && from.process == from_process, "corrupt message from %d/%d",
        from.thread, from.process);
}

static void receive_all(int from_thread, int from_process) {
  expect_text("good-1", from_thread, from_process);
  expect_corrupt(from_thread, from_process);
  expect_text("good-2", from_thread, from_process);
  expect_corrupt(from_thread, from_process);
  expect_text("good-3", from_thread, from_process);
  CHECK_RC(NCS_probe(NCS_ANY, NCS_ANY), 0);
}

static void local_sender(void *arg) {
  (void)arg;
  send_all(1, 0);
}
static void local_receiver(void *arg) {
  (void)arg;
  receive_all(0, 0);
}

/* Trusting the transport, the flipped byte arrives: the test's corruption
 * is real, and only the checksum finds it. */
static void trusting_sender(void *arg) {
  (void)arg;
  ncs_testing_corrupt_next_send(0);
  CHECK_OK(NCS_send(0, 0, 1, 0, "abc", 4));
}
static void trusting_receiver(void *arg) {
  (void)arg;
  char in[4];
  void *data = in;
  size_t size = sizeof in;
  CHECK_OK(NCS_recv(0, 0, 1, 0, &data, &size));
  CHECK(size == 4 && in[0] != 'a' && strcmp(in + 1, "bc") == 0, "the hook did not corrupt");
}

static void run_local(void (*sender)(void *), void (*receiver)(void *)) {
  CHECK(NCS_t_create(sender, NULL, 10) >= 0, "create");
  CHECK(NCS_t_create(receiver, NULL, 5) >= 0, "create");
  CHECK_OK(NCS_start());
}

static void remote(void *arg) {
  (void)arg;
  const int n = NCS_get_num_processes();
  if (NCS_get_my_id() != 0) {
    receive_all(0, 0);
    return;
  }
  for (int p = 1; p < n; ++p) send_all(0, p);
}

int main(void) {
  memset(g_large, 7, sizeof g_large);
  const char *size = getenv("ROCL_SIZE");
  if (size == NULL || atoi(size) <= 1) {
    CHECK_OK(NCS_init(2, NCS_ERROR_CHECKSUM)); /* a corrupt message still returns its credit */
    run_local(local_sender, local_receiver);
    CHECK_OK(NCS_finalize());
    CHECK_OK(NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST));
    run_local(trusting_sender, trusting_receiver);
    test_done("ncs checksum (one process)");
    return 0;
  }
  CHECK_OK(NCS_init(NCS_FLOW_CREDIT, NCS_ERROR_CHECKSUM));
  CHECK_RC(NCS_t_create(remote, NULL, 8), 0);
  CHECK_OK(NCS_start());
  test_done("ncs checksum");
  return 0;
}
