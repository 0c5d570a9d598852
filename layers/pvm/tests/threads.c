/* threads.c - one task, several threads calling PVM at once: each sends
 * to the task and receives its own messages back by tag (pvm_psend /
 * pvm_precv, which use no shared buffer), while another thread waits in
 * pvm_recv for a message that comes last: a blocking receive holds up no
 * other thread's calls. */
#include <pthread.h>

#include "pvm_check.h"

#define WORKERS 4
#define ROUNDS 300

static int me;

static void *worker(void *arg) {
  int tag = 100 + (int)(long)arg, i, v, rtid, rtag, rlen;
  for (i = 0; i < ROUNDS; ++i) {
    CHECK_CODE(pvm_psend(me, tag, &i, 1, PVM_INT), PvmOk);
    CHECK_CODE(pvm_precv(me, tag, &v, 1, PVM_INT, &rtid, &rtag, &rlen), PvmOk);
    CHECK(v == i && rtid == me && rtag == tag && rlen == 1);
    CHECK(pvm_getcontext() == PvmBaseContext);
  }
  return 0;
}

static void *waiter(void *arg) {
  int v = 0, rtid, rtag, rlen;
  (void)arg;
  CHECK_CODE(pvm_precv(-1, 999, &v, 1, PVM_INT, &rtid, &rtag, &rlen), PvmOk);
  CHECK(v == 4242);
  return 0;
}

int main(void) {
  pthread_t workers[WORKERS], w;
  int i, last = 4242;
  me = pvm_mytid();
  CHECK(me > 0);
  CHECK(pthread_create(&w, 0, waiter, 0) == 0);
  for (i = 0; i < WORKERS; ++i) CHECK(pthread_create(&workers[i], 0, worker, (void *)(long)i) == 0);
  for (i = 0; i < WORKERS; ++i) CHECK(pthread_join(workers[i], 0) == 0);
  CHECK_CODE(pvm_psend(me, 999, &last, 1, PVM_INT), PvmOk);
  CHECK(pthread_join(w, 0) == 0);
  CHECK_CODE(pvm_exit(), PvmOk);
  printf("pvm threads: OK\n");
  return 0;
}
