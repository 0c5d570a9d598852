/* p2p: messages between the threads of 2 or more processes (roclrun -n N):
 * order and content per pair, exact and wildcard sources, a large message,
 * signal and wait, and a receive blocked on a remote message that lets the
 * other thread of its process work meanwhile. */
#include <string.h>
#include <time.h>

#include "ncs_check.h"

enum { kMessages = 20, kLarge = 1 << 20 };

static int g_me, g_n;
static int g_work_done, g_late_arrived;

static void ring_sender(void) {
  const int next = (g_me + 1) % g_n;
  for (int i = 0; i < kMessages; ++i) {
    const int m[2] = {g_me, i};
    CHECK_OK(NCS_send(0, g_me, 1, next, m, sizeof m));
  }
}

/* Thread 1 takes the ring's messages from thread 0 of the previous process
 * in order, half into its buffer, half handed over. */
static void ring_receiver(void) {
  const int prev = (g_me + g_n - 1) % g_n;
  for (int i = 0; i < kMessages; ++i) {
    int m[2] = {-1, -1};
    void *data = i % 2 == 0 ? m : NULL;
    size_t size = sizeof m;
    CHECK_OK(NCS_recv(0, prev, 1, g_me, &data, &size));
    const int *got = data;
    CHECK(size == sizeof m && got[0] == prev && got[1] == i, "message %d: %d/%d", i, got[0],
          got[1]);
    if (data != m) CHECK_OK(NCS_free(data));
  }
}

/* Process 0's thread 1 takes one message from thread 0 of every other
 * process, from any process (thread 1s send it large messages meanwhile),
 * and says who sent each. */
static void gather_wildcard(void) {
  if (g_me != 0) {
    const int v = 1000 + g_me;
    CHECK_OK(NCS_send(0, g_me, 1, 0, &v, sizeof v));
    return;
  }
  int seen[64] = {0};
  for (int i = 1; i < g_n; ++i) {
    int v = 0;
    void *data = &v;
    size_t size = sizeof v;
    NCS_id from = {-5, -5};
    CHECK_OK(NCS_recv_from(0, NCS_ANY, 1, 0, &data, &size, &from));
    CHECK(from.thread == 0 && from.process >= 1 && from.process < g_n, "source %d/%d", from.thread,
          from.process);
    CHECK(v == 1000 + from.process && !seen[from.process], "value %d from %d", v, from.process);
    seen[from.process] = 1;
  }
}

static void large_message(void) {
  static unsigned char out[kLarge];
  const int next = (g_me + 1) % g_n, prev = (g_me + g_n - 1) % g_n;
  for (int i = 0; i < kLarge; ++i) out[i] = (unsigned char)(i * 7 + g_me);
  CHECK_OK(NCS_send(1, g_me, 1, next, out, kLarge));
  void *data = NULL;
  size_t size = 0;
  CHECK_OK(NCS_recv(1, prev, 1, g_me, &data, &size));
  CHECK(size == kLarge, "large message: %zu bytes", size);
  const unsigned char *in = data;
  for (int i = 0; i < kLarge; ++i) {
    CHECK(in[i] == (unsigned char)(i * 7 + prev), "large message: byte %d", i);
  }
  CHECK_OK(NCS_free(data));
}

static void signals(void) {
  if (g_me != 0) {
    CHECK_OK(NCS_signal(1, 0));
    CHECK_OK(NCS_wait(1, 0));
    return;
  }
  for (int i = 1; i < g_n; ++i) CHECK_OK(NCS_wait(1, NCS_ANY));
  CHECK_RC(NCS_probe(NCS_ANY, NCS_ANY), 0); /* signals are not messages */
  for (int i = 1; i < g_n; ++i) CHECK_OK(NCS_signal(1, i));
}

/* Process 1's thread 0 waits for a message process 0 sends 200 ms after
 * process 1's thread 1 said it is ready to work; thread 1 works meanwhile,
 * until thread 0 has its message. */
static void late_message_sender(void) {
  char ready[8];
  void *data = ready;
  size_t size = sizeof ready;
  CHECK_OK(NCS_recv(1, 1, 0, 0, &data, &size));
  struct timespec pause = {0, 200 * 1000 * 1000};
  nanosleep(&pause, NULL);
  CHECK_OK(NCS_send(0, 0, 0, 1, "late", 5));
}

static void late_message_receiver(void) {
  char text[8];
  void *data = text;
  size_t size = sizeof text;
  CHECK_OK(NCS_recv(0, 0, 0, 1, &data, &size));
  CHECK(strcmp(text, "late") == 0, "got '%s'", text);
  CHECK(g_work_done > 0, "thread 1 did no work while thread 0 waited");
  g_late_arrived = 1;
}

static void work_until_late_message(void) {
  CHECK_OK(NCS_send(1, 1, 0, 0, "ready", 6));
  while (!g_late_arrived) {
    ++g_work_done;
    CHECK_OK(NCS_yield());
  }
}

static void thread0(void *arg) {
  (void)arg;
  ring_sender();
  if (g_me != 0) gather_wildcard();
  if (g_me == 0) late_message_sender();
  if (g_me == 1) late_message_receiver();
}

static void thread1(void *arg) {
  (void)arg;
  ring_receiver();
  if (g_me == 0) gather_wildcard();
  large_message();
  signals();
  if (g_me == 1) work_until_late_message();
}

int main(void) {
  CHECK_OK(NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST));
  g_me = NCS_get_my_id();
  g_n = NCS_get_num_processes();
  CHECK(g_n >= 2 && g_n <= 64, "run under roclrun -n 2..64 (%d processes)", g_n);
  CHECK_RC(NCS_t_create(thread0, NULL, 8), 0);
  CHECK_RC(NCS_t_create(thread1, NULL, 8), 1);
  CHECK_OK(NCS_start());
  test_done("ncs p2p");
  return 0;
}
