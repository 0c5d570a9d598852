/* groups: 1-to-many (NCS_bcast), many-to-1 (NCS_gather), many-to-many
 * (NCS_allgather) and NCS_barrier among two threads of each process, alone
 * or under roclrun -n N. */
#include <string.h>
#include <time.h>

#include "ncs_check.h"

enum { kThreads = 2, kMaxMembers = 2 * 64 };

static int g_me, g_n;
static NCS_id g_group[kMaxMembers + 1];
static int g_members;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t); /* one host: the processes share it */
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int my_value(int thread) {
  return 100 * g_me + thread;
}

static void bcast(int me) {
  if (g_me == 0 && me == 0) {
    const double pi = 3.25;
    CHECK_OK(NCS_bcast(0, 0, g_group + 1, &pi, sizeof pi)); /* everyone but the sender */
    return;
  }
  double v = 0;
  void *data = &v;
  size_t size = sizeof v;
  CHECK_OK(NCS_recv(0, 0, me, g_me, &data, &size));
  CHECK(v == 3.25 && size == sizeof v, "bcast gave %g", v);
}

static void gather(int me) {
  const NCS_id root = {1, g_n - 1}; /* any member may be the root */
  const int v = my_value(me);
  int out[kMaxMembers];
  memset(out, 0xff, sizeof out);
  CHECK_OK(NCS_gather(g_group, root, &v, sizeof v, out));
  if (me != root.thread || g_me != root.process) return;
  for (int i = 0; i < g_members; ++i) {
    CHECK(out[i] == 100 * g_group[i].process + g_group[i].thread, "gather: slot %d has %d", i,
          out[i]);
  }
}

static void allgather(int me) {
  const int v = my_value(me);
  int out[kMaxMembers];
  memset(out, 0xff, sizeof out);
  CHECK_OK(NCS_allgather(g_group, &v, sizeof v, out));
  for (int i = 0; i < g_members; ++i) {
    CHECK(out[i] == 100 * g_group[i].process + g_group[i].thread, "allgather: slot %d has %d", i,
          out[i]);
  }
}

/* The last process enters late: nobody may leave before it entered. */
static void barrier(int me) {
  double entered = 0;
  if (g_me == g_n - 1 && me == 0) {
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
    entered = now_s();
  }
  CHECK_OK(NCS_barrier(g_group));
  const double left = now_s();
  double late_entry = 0;
  double all[kMaxMembers];
  CHECK_OK(NCS_allgather(g_group, &entered, sizeof entered, all));
  for (int i = 0; i < g_members; ++i) late_entry = all[i] > late_entry ? all[i] : late_entry;
  CHECK(left >= late_entry, "left the barrier %.6f s before the last member entered",
        late_entry - left);
}

static void member(void *arg) {
  const int me = *(int *)arg;
  bcast(me);
  for (int round = 0; round < 3; ++round) {
    gather(me);
    allgather(me);
    barrier(me);
  }
}

int main(void) {
  CHECK_OK(NCS_init(NCS_FLOW_NONE, NCS_ERROR_TRUST));
  g_me = NCS_get_my_id();
  g_n = NCS_get_num_processes();
  CHECK(g_n <= 64, "at most 64 processes");
  for (int p = 0; p < g_n; ++p) {
    for (int t = 0; t < kThreads; ++t) g_group[g_members++] = (NCS_id){t, p};
  }
  g_group[g_members] = (NCS_id)NCS_LIST_END;
  static int ids[kThreads] = {0, 1};
  for (int t = 0; t < kThreads; ++t) CHECK_RC(NCS_t_create(member, &ids[t], 8), t);
  CHECK_OK(NCS_start());
  test_done("ncs groups");
  return 0;
}
