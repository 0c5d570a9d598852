/* scheduler: NCS_MTS's order in one process: highest priority first, round
 * robin within a priority, block and unblock, a thread of higher priority
 * that a message or an unblock makes runnable runs at once, and a blocked
 * receive lets the other threads run. */
#include <string.h>

#include "ncs_check.h"

static int g_log[64];
static int g_logged;

static void note(int what) {
  CHECK(g_logged < 64, "log full");
  g_log[g_logged++] = what;
}

static void expect_log(const int *expected, int n, const char *what) {
  int same = g_logged == n;
  for (int i = 0; same && i < n; ++i) same = g_log[i] == expected[i];
  if (!same) {
    fprintf(stderr, "%s: log", what);
    for (int i = 0; i < g_logged; ++i) fprintf(stderr, " %d", g_log[i]);
    fprintf(stderr, "\n");
  }
  CHECK(same, "%s: wrong order (above)", what);
  g_logged = 0;
}

/* Each thread's argument: the number it logs. */
static void log_once(void *arg) {
  note(*(int *)arg);
}

static void log_three_times(void *arg) {
  for (int i = 0; i < 3; ++i) {
    note(*(int *)arg);
    CHECK_OK(NCS_yield());
  }
}

static void priority_order(void) {
  static int names[] = {3, 12, 7, 12, 0, 15};
  const int priorities[] = {3, 12, 7, 12, 0, 15};
  for (int i = 0; i < 6; ++i)
    CHECK(NCS_t_create(log_once, &names[i], priorities[i]) >= 0, "create");
  CHECK_OK(NCS_start());
  const int expected[] = {15, 12, 12, 7, 3, 0};
  expect_log(expected, 6, "priority order");
}

static void round_robin(void) {
  static int names[] = {1, 2, 3, 9};
  for (int i = 0; i < 3; ++i) CHECK(NCS_t_create(log_three_times, &names[i], 6) >= 0, "create");
  CHECK(NCS_t_create(log_once, &names[3], 5) >= 0, "create"); /* below them: runs last */
  CHECK_OK(NCS_start());
  const int expected[] = {1, 2, 3, 1, 2, 3, 1, 2, 3, 9};
  expect_log(expected, 10, "round robin");
}

static int g_blocked_tid;

static void blocker(void *arg) {
  (void)arg;
  note(10);
  CHECK_OK(NCS_block());
  note(11);
}

static void unblocker(void *arg) {
  (void)arg;
  note(20);
  CHECK_OK(NCS_unblock(g_blocked_tid));
  note(21);
}

/* Same priority: the unblocked thread waits its turn; higher: it runs at
 * once, before the unblocker goes on. */
static void block_unblock(int blocker_priority, const int *expected) {
  g_blocked_tid = NCS_t_create(blocker, NULL, blocker_priority);
  CHECK(g_blocked_tid >= 0, "create");
  CHECK(NCS_t_create(unblocker, NULL, 5) >= 0, "create");
  CHECK_OK(NCS_start());
  expect_log(expected, 4, blocker_priority > 5 ? "unblock of a higher thread" : "unblock");
}

static int g_receiver_tid, g_worker_tid, g_work_done;

static void receiver(void *arg) {
  (void)arg;
  int value = 0;
  void *data = &value;
  size_t size = sizeof value;
  const int me = NCS_get_my_thread();
  note(30);
  CHECK_OK(NCS_recv(g_worker_tid, 0, me, 0, &data, &size));
  CHECK(value == 42 && size == sizeof value, "received %d (%zu bytes)", value, size);
  CHECK(g_work_done == 100, "the worker did %d steps before the message, not 100", g_work_done);
  note(31);
}

/* Of lower priority: runs only because the receiver is blocked; its send
 * wakes the receiver, which runs before the worker's next step. */
static void worker(void *arg) {
  (void)arg;
  for (g_work_done = 0; g_work_done < 100; ++g_work_done) CHECK_OK(NCS_yield());
  const int value = 42;
  note(40);
  CHECK_OK(NCS_send(g_worker_tid, 0, g_receiver_tid, 0, &value, sizeof value));
  note(41);
}

static void blocked_receive(void) {
  g_receiver_tid = NCS_t_create(receiver, NULL, 10);
  g_worker_tid = NCS_t_create(worker, NULL, 1);
  CHECK(g_receiver_tid >= 0 && g_worker_tid >= 0, "create");
  CHECK_OK(NCS_start());
  const int expected[] = {30, 40, 31, 41};
  expect_log(expected, 4, "blocked receive");
}

int main(void) {
  CHECK_OK(NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST));
  priority_order();
  round_robin();
  const int same_priority[] = {10, 20, 21, 11};
  block_unblock(5, same_priority);
  const int higher_priority[] = {10, 20, 11, 21};
  block_unblock(9, higher_priority);
  blocked_receive();
  test_done("ncs scheduler");
  return 0;
}
