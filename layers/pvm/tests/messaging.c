/* messaging.c - one task talking to itself: tags and -1 wildcards, the
 * receive forms (recv, nrecv, trecv, probe, precv), psend, contexts,
 * options, pvm_config / pvm_tasks / pvm_parent / pvm_notify and the error
 * codes of each. */
#include <string.h>
#include <sys/time.h>

#include "pvm_check.h"

static int me;

static void send_int(int tag, int value) {
  CHECK(pvm_initsend(PvmDataDefault) > 0);
  CHECK_CODE(pvm_pkint(&value, 1, 1), PvmOk);
  CHECK_CODE(pvm_send(me, tag), PvmOk);
}

static int received_int(void) {
  int v = -1;
  CHECK_CODE(pvm_upkint(&v, 1, 1), PvmOk);
  return v;
}

static void tags_and_wildcards(void) {
  int bufid, bytes, tag, tid;
  send_int(1, 100);
  send_int(2, 200);
  send_int(1, 101);
  /* A tag picks its oldest message; -1 takes the oldest of any tag. */
  CHECK(pvm_recv(me, 2) > 0);
  CHECK(received_int() == 200);
  CHECK(pvm_recv(-1, -1) > 0);
  CHECK(received_int() == 100);
  bufid = pvm_recv(-1, 1);
  CHECK(bufid > 0);
  CHECK_CODE(pvm_bufinfo(bufid, &bytes, &tag, &tid), PvmOk);
  CHECK(bytes == (int)sizeof(int) && tag == 1 && tid == me);
  CHECK(received_int() == 101);
  CHECK_CODE(pvm_recv(me, -2), PvmBadParam);
  CHECK_CODE(pvm_send(me, -1), PvmBadParam);
  CHECK_CODE(pvm_send(0, 1), PvmBadParam);
}

static void receive_forms(void) {
  struct timeval tv;
  int bufid, bytes, tag, tid, i, got[4], rtid, rtag, rlen;
  int data[4] = {9, 8, 7, 6};
  double dd[2] = {1.5, 2.5}, dgot[2];

  CHECK_CODE(pvm_nrecv(-1, 5), 0); /* nothing there */
  tv.tv_sec = 0;
  tv.tv_usec = 50000;
  CHECK_CODE(pvm_trecv(-1, 5, &tv), 0); /* times out */
  CHECK_CODE(pvm_probe(-1, 5), 0);
  send_int(5, 55);
  bufid = pvm_probe(-1, 5);
  CHECK(bufid > 0);
  CHECK_CODE(pvm_bufinfo(bufid, &bytes, &tag, &tid), PvmOk);
  CHECK(bytes == (int)sizeof(int) && tag == 5 && tid == me);
  CHECK(pvm_nrecv(-1, 5) > 0);
  CHECK(received_int() == 55);
  send_int(6, 66);
  tv.tv_sec = 5;
  tv.tv_usec = 0;
  CHECK(pvm_trecv(me, 6, &tv) > 0);
  CHECK(received_int() == 66);

  CHECK_CODE(pvm_psend(me, 7, data, 4, PVM_INT), PvmOk);
  memset(got, 0, sizeof got);
  CHECK_CODE(pvm_precv(-1, 7, got, 4, PVM_INT, &rtid, &rtag, &rlen), PvmOk);
  CHECK(rtid == me && rtag == 7 && rlen == 4);
  for (i = 0; i < 4; ++i) CHECK(got[i] == data[i]);
  /* psend and pvm_recv / pvm_upk* mix. */
  CHECK_CODE(pvm_psend(me, 8, dd, 2, PVM_DOUBLE), PvmOk);
  CHECK(pvm_recv(me, 8) > 0);
  CHECK_CODE(pvm_upkdouble(dgot, 2, 1), PvmOk);
  CHECK(dgot[0] == 1.5 && dgot[1] == 2.5);
  CHECK_CODE(pvm_psend(me, 7, data, 4, 99), PvmBadParam);
}

static void contexts(void) {
  int base = pvm_getcontext(), ctx, other;
  CHECK(base == PvmBaseContext);
  ctx = pvm_newcontext();
  other = pvm_newcontext();
  CHECK(ctx > 0 && other > 0 && ctx != other);
  CHECK_CODE(pvm_setcontext(ctx), base);
  send_int(3, 33); /* sent in ctx */
  CHECK_CODE(pvm_setcontext(base), ctx);
  CHECK_CODE(pvm_nrecv(-1, -1), 0); /* not seen in the base context */
  CHECK_CODE(pvm_setcontext(ctx), base);
  CHECK(pvm_recv(-1, -1) > 0);
  CHECK(received_int() == 33);
  CHECK_CODE(pvm_setcontext(base), ctx);
  CHECK_CODE(pvm_freecontext(other), PvmOk);
  CHECK_CODE(pvm_freecontext(other), PvmBadParam);
  CHECK_CODE(pvm_setcontext(-5), PvmBadParam);
}

static void options_and_machine(void) {
  int nhost = 0, narch = 0, ntask = 0, i, found = 0, old;
  struct pvmhostinfo *hosts = 0;
  struct pvmtaskinfo *tasks = 0;
  CHECK_CODE(pvm_getopt(PvmRoute), PvmAllowDirect);
  old = pvm_setopt(PvmRoute, PvmRouteDirect);
  CHECK(old == PvmAllowDirect);
  CHECK_CODE(pvm_getopt(PvmRoute), PvmRouteDirect);
  CHECK_CODE(pvm_setopt(PvmRoute, 42), PvmBadParam);
  CHECK_CODE(pvm_setopt(4242, 1), PvmBadParam);
  CHECK_CODE(pvm_getopt(4242), PvmBadParam);

  CHECK_CODE(pvm_config(&nhost, &narch, &hosts), PvmOk);
  CHECK(nhost >= 1 && narch == 1 && hosts != 0 && hosts[0].hi_name != 0);
  CHECK_CODE(pvm_tasks(0, &ntask, &tasks), PvmOk);
  for (i = 0; i < ntask; ++i) {
    if (tasks[i].ti_tid == me) {
      found = 1;
      CHECK(tasks[i].ti_pid > 0 && strstr(tasks[i].ti_a_out, "messaging") != 0);
      CHECK_CODE(pvm_tidtohost(me), tasks[i].ti_host);
    }
  }
  CHECK(found);
  CHECK_CODE(pvm_tasks(me, &ntask, &tasks), PvmOk);
  CHECK(ntask == 1 && tasks[0].ti_tid == me);
  CHECK_CODE(pvm_pstat(me), PvmOk);
  CHECK_CODE(pvm_parent(), PvmNoParent);
  CHECK(strcmp(pvm_version(), "3.4.6") == 0);
  CHECK_CODE(pvm_addhosts(0, 0, 0), PvmNotImpl);
}

static void notify_of_a_gone_task(void) {
  int gone = 0x7123456, who = 0, bufid, tag;
  CHECK_CODE(pvm_pstat(gone), PvmNoTask);
  CHECK_CODE(pvm_notify(PvmTaskExit, 77, 1, &gone), PvmOk);
  bufid = pvm_recv(-1, 77); /* a task that does not exist has exited */
  CHECK(bufid > 0);
  CHECK_CODE(pvm_bufinfo(bufid, 0, &tag, 0), PvmOk);
  CHECK(tag == 77);
  CHECK(received_int() == gone);
  CHECK_CODE(pvm_notify(PvmTaskExit, -3, 1, &gone), PvmBadParam);
  CHECK_CODE(pvm_notify(99, 3, 1, &gone), PvmBadParam);
  (void)who;
}

static void errors(void) {
  pvm_errno = PvmOk;
  CHECK_CODE(pvm_freebuf(424242), PvmNoSuchBuf);
  CHECK(pvm_errno == PvmNoSuchBuf);
  CHECK(strcmp(pvm_errlist[-PvmNoSuchBuf], "No such buffer") == 0);
  CHECK(pvm_nerr == 37);
  pvm_perror("messaging test: expected");
}

int main(void) {
  me = pvm_mytid();
  CHECK(me > 0);
  pvm_setopt(PvmAutoErr, 0);
  tags_and_wildcards();
  receive_forms();
  contexts();
  options_and_machine();
  notify_of_a_gone_task();
  errors();
  /* No pvm_exit: the exit handler ends the task, with pvm_notify's
   * watcher thread still running. */
  printf("pvm messaging: OK\n");
  return 0;
}
