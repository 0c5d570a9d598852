/* tpvm.c - TPVM threads as tasks: with one task it starts threads in its
 * own process, with two (roclrun -n 2) in the other task's process, which
 * alone exports the function. The threads learn their parent, talk to it
 * with the PVM calls, show in pvm_tasks and are notified on exit; spawns
 * of unexported names and unknown hosts fail with PVM's codes. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pvm_check.h"
#include "tpvm.h"

#define THREADS 3

static char group[] = "tpvm-test";

static void doubler(void) {
  int parent = tpvm_parent(), me = tpvm_mytid(), v = 0;
  CHECK(parent > 0 && me > 0 && me != parent);
  CHECK(pvm_recv(parent, 1) > 0);
  CHECK_CODE(pvm_upkint(&v, 1, 1), PvmOk);
  v *= 2;
  CHECK(pvm_initsend(PvmDataDefault) > 0);
  CHECK_CODE(pvm_pkint(&v, 1, 1), PvmOk);
  CHECK_CODE(pvm_pkint(&me, 1, 1), PvmOk);
  CHECK_CODE(pvm_send(parent, 2), PvmOk);
}

static void spawner(int me) {
  int tids[THREADS], i, j, ntask = 0, seen = 0, tries, bad[1];
  struct pvmtaskinfo *tasks = 0;
  CHECK_CODE(tpvm_spawn("doubler", 0, PvmTaskDefault, THREADS, tids), THREADS);
  CHECK_CODE(pvm_notify(PvmTaskExit, 9, THREADS, tids), PvmOk);
  /* The threads wait for their first message: all are tasks now (their
   * entries appear as they start, so look a few times). */
  for (tries = 0; seen < THREADS && tries < 500; ++tries) {
    if (tries > 0) usleep(10000);
    seen = 0;
    CHECK_CODE(pvm_tasks(0, &ntask, &tasks), PvmOk);
    for (i = 0; i < ntask; ++i) {
      for (j = 0; j < THREADS; ++j) {
        if (tasks[i].ti_tid == tids[j]) seen += tasks[i].ti_ptid == me;
      }
    }
  }
  CHECK(seen == THREADS);
  for (i = 0; i < THREADS; ++i) {
    int v = 10 + i;
    CHECK(tids[i] > 0 && tids[i] != me);
    CHECK(pvm_initsend(PvmDataDefault) > 0);
    CHECK_CODE(pvm_pkint(&v, 1, 1), PvmOk);
    CHECK_CODE(pvm_send(tids[i], 1), PvmOk);
  }
  for (i = 0; i < THREADS; ++i) {
    int v = 0, who = 0;
    CHECK(pvm_recv(tids[i], 2) > 0);
    CHECK_CODE(pvm_upkint(&v, 1, 1), PvmOk);
    CHECK_CODE(pvm_upkint(&who, 1, 1), PvmOk);
    CHECK(v == 2 * (10 + i) && who == tids[i]);
  }
  for (i = 0; i < THREADS; ++i) {
    int gone = 0;
    CHECK(pvm_recv(-1, 9) > 0);
    CHECK_CODE(pvm_upkint(&gone, 1, 1), PvmOk);
    CHECK(gone == tids[0] || gone == tids[1] || gone == tids[2]);
  }
  CHECK_CODE(tpvm_spawn("nobody-exports-this", 0, 0, 1, bad), 0);
  CHECK(bad[0] == PvmNoFile);
  CHECK_CODE(tpvm_spawn("doubler", "no-such-host", PvmTaskHost, 1, bad), 0);
  CHECK(bad[0] == PvmNoHost);
  CHECK_CODE(tpvm_spawn(0, 0, 0, 1, bad), PvmBadParam);
}

int main(void) {
  const char *size_text = getenv("ROCL_SIZE"), *rank_text = getenv("ROCL_RANK");
  int size = size_text != 0 ? atoi(size_text) : 1, rank = rank_text != 0 ? atoi(rank_text) : 0;
  int me = pvm_mytid();
  CHECK(me > 0);
  pvm_setopt(PvmAutoErr, 0);
  if (size == 1 || rank == 1) CHECK_CODE(tpvm_export("doubler", doubler), PvmOk);
  if (size == 1 || rank == 1) CHECK_CODE(tpvm_export("doubler", doubler), PvmBadParam);
  if (size > 1) {
    CHECK(pvm_joingroup(group) >= 0);
    CHECK_CODE(pvm_barrier(group, size), PvmOk); /* rank 1 exports by now */
  }
  if (rank == 0) {
    spawner(me);
    if (size > 1) {
      CHECK(pvm_initsend(PvmDataDefault) > 0);
      CHECK_CODE(pvm_bcast(group, 77), PvmOk);
    }
    printf("pvm tpvm: OK\n");
  } else if (rank == 1) {
    CHECK(pvm_recv(-1, 77) > 0); /* the spawner is done with our threads */
  }
  if (size > 1) pvm_lvgroup(group);
  CHECK_CODE(pvm_exit(), PvmOk);
  return 0;
}
