/* spawn.c - pvm_spawn: a parent starts two copies of this program, which
 * find it with pvm_parent, inherit its context, find themselves in
 * pvm_siblings and talk back; the parent sees them in pvm_tasks and gets
 * pvm_notify's exit messages when they end, also for a third child it
 * ends with pvm_kill. Spawns of missing programs and hosts fail with PVM's
 * codes. */
#include <string.h>
#include <sys/time.h>

#include "pvm_check.h"

#define CHILDREN 2

static int child(void) {
  int parent = pvm_parent(), me = pvm_mytid(), ctx;
  char text[64];
  struct timeval tv = {30, 0};
  CHECK(parent > 0 && me > 0 && me != parent);
  ctx = pvm_getcontext();
  CHECK(ctx != PvmBaseContext); /* the parent's, at the spawn */
  {
    int *sibs = 0, n = pvm_siblings(&sibs), k, mine = 0;
    CHECK(n >= 1 && sibs != 0);
    for (k = 0; k < n; ++k) mine += sibs[k] == me;
    CHECK(mine == 1);
  }
  CHECK(pvm_initsend(PvmDataDefault) > 0);
  CHECK_CODE(pvm_pkint(&me, 1, 1), PvmOk);
  CHECK_CODE(pvm_pkint(&ctx, 1, 1), PvmOk);
  CHECK_CODE(pvm_pkstr("hello from a child"), PvmOk);
  CHECK_CODE(pvm_send(parent, 1), PvmOk);
  CHECK(pvm_trecv(parent, 2, &tv) > 0); /* "bye" */
  CHECK_CODE(pvm_upkstr(text), PvmOk);
  CHECK(strcmp(text, "bye") == 0);
  pvm_exit();
  return 0;
}

/* Waits for a message nobody sends, until pvm_kill ends it. */
static int sleeper(void) {
  CHECK(pvm_mytid() > 0);
  pvm_recv(-1, 12345);
  return 1;
}

static void kill_a_task(char *self) {
  char *args[] = {"sleeper", 0};
  int tid = 0, gone = 0;
  struct timeval tv = {30, 0};
  /* On this host: pvm_kill signals tasks of the caller's host only. */
  CHECK_CODE(pvm_spawn(self, args, PvmTaskHost, ".", 1, &tid), 1);
  CHECK_CODE(pvm_notify(PvmTaskExit, 98, 1, &tid), PvmOk);
  CHECK_CODE(pvm_pstat(tid), PvmOk);
  CHECK_CODE(pvm_kill(tid), PvmOk);
  CHECK(pvm_trecv(-1, 98, &tv) > 0);
  CHECK_CODE(pvm_upkint(&gone, 1, 1), PvmOk);
  CHECK(gone == tid);
  CHECK_CODE(pvm_pstat(tid), PvmNoTask);
  CHECK_CODE(pvm_kill(pvm_mytid()), PvmBadParam);
}

static int parent(char *self) {
  int tids[CHILDREN], me = pvm_mytid(), i, j, ctx, ntask = 0, seen = 0, bad[1], started;
  char *args[] = {"child", 0};
  struct pvmtaskinfo *tasks = 0;
  struct timeval tv = {30, 0};

  pvm_setopt(PvmAutoErr, 0);
  ctx = pvm_newcontext();
  CHECK(ctx > 0);
  pvm_setcontext(ctx);
  started = pvm_spawn(self, args, PvmTaskDefault, "", CHILDREN, tids);
  if (started != CHILDREN)
    fprintf(stderr, "spawn: %d started, codes %d %d\n", started, tids[0], tids[1]);
  CHECK(started == CHILDREN);
  CHECK(tids[0] > 0 && tids[1] > 0 && tids[0] != tids[1]);
  CHECK_CODE(pvm_notify(PvmTaskExit, 99, CHILDREN, tids), PvmOk);
  for (i = 0; i < CHILDREN; ++i) {
    int who = 0, their_ctx = 0, bufid, src = 0;
    char text[64];
    bufid = pvm_trecv(-1, 1, &tv);
    CHECK(bufid > 0);
    CHECK_CODE(pvm_bufinfo(bufid, 0, 0, &src), PvmOk);
    CHECK_CODE(pvm_upkint(&who, 1, 1), PvmOk);
    CHECK_CODE(pvm_upkint(&their_ctx, 1, 1), PvmOk);
    CHECK_CODE(pvm_upkstr(text), PvmOk);
    CHECK(who == src && (who == tids[0] || who == tids[1]));
    CHECK(their_ctx == ctx && strcmp(text, "hello from a child") == 0);
  }
  CHECK_CODE(pvm_tasks(0, &ntask, &tasks), PvmOk);
  for (i = 0; i < ntask; ++i) {
    for (j = 0; j < CHILDREN; ++j) {
      if (tasks[i].ti_tid == tids[j]) {
        CHECK(tasks[i].ti_ptid == me);
        ++seen;
      }
    }
  }
  CHECK(seen == CHILDREN);
  CHECK(pvm_initsend(PvmDataDefault) > 0);
  CHECK_CODE(pvm_pkstr("bye"), PvmOk);
  CHECK_CODE(pvm_mcast(tids, CHILDREN, 2), PvmOk);
  for (i = 0; i < CHILDREN; ++i) {
    int gone = 0;
    CHECK(pvm_trecv(-1, 99, &tv) > 0);
    CHECK_CODE(pvm_upkint(&gone, 1, 1), PvmOk);
    CHECK(gone == tids[0] || gone == tids[1]);
  }
  pvm_setcontext(PvmBaseContext);
  kill_a_task(self);
  CHECK_CODE(pvm_spawn("rocl-pvm-no-such-program", 0, 0, "", 1, bad), 0);
  CHECK(bad[0] == PvmNoFile);
  CHECK_CODE(pvm_spawn(self, args, PvmTaskHost, "no-such-host", 1, bad), 0);
  CHECK(bad[0] == PvmNoHost);
  CHECK_CODE(pvm_spawn(0, 0, 0, "", 1, bad), PvmBadParam);
  CHECK_CODE(pvm_exit(), PvmOk);
  printf("pvm spawn: OK\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) return child();
  if (argc > 1 && strcmp(argv[1], "sleeper") == 0) return sleeper();
  return parent(argv[0]);
}
