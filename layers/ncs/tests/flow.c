/* flow: a credit window bounds the messages a fast sender has at a receiver
 * that does not take them; without flow control they pile up. Alone: two
 * threads of one process, with a window of 4 and then with none. Under
 * roclrun -n N: process 0 sends to thread 0 of every other process, which
 * sleeps first (a slow process) and then finds at most a window waiting. */
#include <string.h>
#include <time.h>

#include "ncs_check.h"

enum { kWindow = 4, kLocalMessages = 20, kRemoteMessages = 50, kBytes = 1024 };

static int g_window, g_sent, g_received;

static void local_sender(void *arg) {
  (void)arg;
  for (int i = 0; i < kLocalMessages; ++i) {
    CHECK_OK(NCS_send(0, 0, 1, 0, &i, sizeof i));
    ++g_sent;
  }
}

/* Of lower priority than the sender: it first runs when the sender blocks
 * for credits, or has sent everything. */
static void local_receiver(void *arg) {
  (void)arg;
  const int expected_first = g_window > 0 ? g_window : kLocalMessages;
  CHECK(g_sent == expected_first, "window %d: the sender sent %d before the receiver ran", g_window,
        g_sent);
  CHECK_RC(NCS_probe(0, 0), expected_first);
  for (g_received = 0; g_received < kLocalMessages;) {
    int v = -1;
    void *data = &v;
    size_t size = sizeof v;
    CHECK_OK(NCS_recv(0, 0, 1, 0, &data, &size));
    CHECK(v == g_received, "message %d is %d", g_received, v);
    ++g_received;
    if (g_window > 0) {
      CHECK(g_sent - g_received <= g_window, "%d messages sent and not received, window %d",
            g_sent - g_received, g_window);
      CHECK(NCS_probe(0, 0) <= g_window, "more than a window waits");
    }
  }
}

static void run_local(int window) {
  g_window = window;
  g_sent = g_received = 0;
  CHECK_OK(NCS_init(window, NCS_ERROR_TRUST));
  CHECK(NCS_t_create(local_sender, NULL, 10) == 0, "create");
  CHECK(NCS_t_create(local_receiver, NULL, 5) == 1, "create");
  CHECK_OK(NCS_start());
  CHECK(g_received == kLocalMessages, "received %d", g_received);
}

static void remote_sender(void *arg) {
  (void)arg;
  static unsigned char out[kBytes];
  const int n = NCS_get_num_processes();
  for (int i = 0; i < kRemoteMessages; ++i) {
    memset(out, i, sizeof out);
    for (int p = 1; p < n; ++p) CHECK_OK(NCS_send(0, 0, 0, p, out, sizeof out));
  }
}

static void pause_ms(long ms) {
  struct timespec pause = {ms / 1000, (ms % 1000) * 1000 * 1000};
  nanosleep(&pause, NULL); /* the whole process: nothing is taken in meanwhile */
}

/* Takes nothing until a full window waits, then gives the sender time to
 * send more: under flow control it cannot. */
static void slow_receiver(void *arg) {
  (void)arg;
  const int me = NCS_get_my_id();
  for (int i = 0; i < 1000 && NCS_probe(0, 0) < kWindow; ++i) pause_ms(10);
  CHECK_RC(NCS_probe(0, 0), kWindow);
  pause_ms(200);
  CHECK_RC(NCS_probe(0, 0), kWindow);
  for (int i = 0; i < kRemoteMessages; ++i) {
    static unsigned char in[kBytes];
    void *data = in;
    size_t size = sizeof in;
    CHECK_OK(NCS_recv(0, 0, 0, me, &data, &size));
    CHECK(size == kBytes && in[0] == (unsigned char)i && in[kBytes - 1] == (unsigned char)i,
          "message %d", i);
    CHECK(NCS_probe(0, 0) <= kWindow, "more than a window waits after message %d", i);
  }
}

int main(void) {
  const char *size = getenv("ROCL_SIZE");
  if (size == NULL || atoi(size) <= 1) {
    run_local(kWindow);
    CHECK_OK(NCS_finalize());
    run_local(NCS_FLOW_NONE);
    test_done("ncs flow (one process)");
    return 0;
  }
  CHECK_OK(NCS_init(kWindow, NCS_ERROR_TRUST));
  CHECK_RC(NCS_t_create(NCS_get_my_id() == 0 ? remote_sender : slow_receiver, NULL, 8), 0);
  CHECK_OK(NCS_start());
  test_done("ncs flow");
  return 0;
}
