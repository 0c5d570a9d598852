/* groups.c - N tasks under roclrun (ROCL_SIZE): joining and leaving a
 * group, instance numbers, barriers, bcast, reduce with PvmSum / PvmMax /
 * PvmMin, gather and scatter, point to point between members and the
 * error codes of the group calls. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pvm_check.h"

static char group[] = "pvm-test-group";
static int me, n, inst;

static void membership(void) {
  int i;
  inst = pvm_joingroup(group);
  CHECK(inst >= 0 && inst < n);
  CHECK_CODE(pvm_joingroup(group), PvmDupGroup);
  CHECK_CODE(pvm_barrier(group, n), PvmOk);
  CHECK_CODE(pvm_gsize(group), n);
  CHECK_CODE(pvm_getinst(group, me), inst);
  CHECK_CODE(pvm_gettid(group, inst), me);
  for (i = 0; i < n; ++i) CHECK(pvm_gettid(group, i) > 0);
  CHECK_CODE(pvm_gettid(group, n + 5), PvmNoInst);
  CHECK_CODE(pvm_gettid("no-such-group", 0), PvmNoGroup);
  CHECK_CODE(pvm_gsize("no-such-group"), PvmNoGroup);
  CHECK_CODE(pvm_joingroup(""), PvmNullGroup);
  CHECK_CODE(pvm_joingroup((char *)0), PvmNullGroup);
  CHECK_CODE(pvm_lvgroup("no-such-group"), PvmNoGroup);
  CHECK_CODE(pvm_barrier("no-such-group", 1), PvmNoGroup);
  CHECK_CODE(pvm_freezegroup(group, n), PvmOk);
}

static void bcast_and_ring(void) {
  int v = 0, i, bufid, tid, next, prev;
  int *all = malloc(sizeof(int) * (size_t)n);
  if (inst == 0) {
    v = 1234;
    CHECK(pvm_initsend(PvmDataDefault) > 0);
    CHECK_CODE(pvm_pkint(&v, 1, 1), PvmOk);
    CHECK_CODE(pvm_bcast(group, 40), PvmOk);
  } else {
    bufid = pvm_recv(-1, 40);
    CHECK(bufid > 0);
    CHECK_CODE(pvm_bufinfo(bufid, 0, 0, &tid), PvmOk);
    CHECK(tid == pvm_gettid(group, 0));
    CHECK_CODE(pvm_upkint(&v, 1, 1), PvmOk);
    CHECK(v == 1234);
  }
  /* Ring: each sends its instance to the next, from the previous. */
  next = pvm_gettid(group, (inst + 1) % n);
  prev = pvm_gettid(group, (inst + n - 1) % n);
  CHECK(pvm_initsend(PvmDataRaw) > 0);
  CHECK_CODE(pvm_pkint(&inst, 1, 1), PvmOk);
  CHECK_CODE(pvm_send(next, 41), PvmOk);
  CHECK(pvm_recv(prev, 41) > 0);
  CHECK_CODE(pvm_upkint(&v, 1, 1), PvmOk);
  CHECK(v == (inst + n - 1) % n);
  /* mcast from instance 0 to everyone (itself skipped). */
  for (i = 0; i < n; ++i) all[i] = pvm_gettid(group, i);
  if (inst == 0) {
    CHECK(pvm_initsend(PvmDataDefault) > 0);
    CHECK_CODE(pvm_pkstr("mcast"), PvmOk);
    CHECK_CODE(pvm_mcast(all, n, 42), PvmOk);
  } else {
    char text[16];
    CHECK(pvm_recv(all[0], 42) > 0);
    CHECK_CODE(pvm_upkstr(text), PvmOk);
    CHECK(strcmp(text, "mcast") == 0);
  }
  free(all);
}

static void reductions(void) {
  int v[2], i;
  double d = inst + 0.5;
  int *scattered = malloc(sizeof(int) * (size_t)n), *gathered = malloc(sizeof(int) * (size_t)n);
  int mine = -1;

  v[0] = inst + 1;
  v[1] = -(inst + 1);
  CHECK_CODE(pvm_reduce(PvmSum, v, 2, PVM_INT, 50, group, 0), PvmOk);
  if (inst == 0) CHECK(v[0] == n * (n + 1) / 2 && v[1] == -n * (n + 1) / 2);
  v[0] = inst + 1;
  CHECK_CODE(pvm_reduce(PvmMax, v, 1, PVM_INT, 51, group, n - 1), PvmOk);
  if (inst == n - 1) CHECK(v[0] == n);
  v[0] = inst + 1;
  CHECK_CODE(pvm_reduce(PvmMin, v, 1, PVM_INT, 52, group, 0), PvmOk);
  if (inst == 0) CHECK(v[0] == 1);
  CHECK_CODE(pvm_reduce(PvmSum, &d, 1, PVM_DOUBLE, 53, group, 0), PvmOk);
  if (inst == 0) CHECK(d == n * (n - 1) / 2.0 + 0.5 * n);
  CHECK_CODE(pvm_reduce(PvmSum, v, 1, PVM_STR, 54, group, 0), PvmBadParam);

  for (i = 0; i < n; ++i) scattered[i] = 10 * i;
  CHECK_CODE(pvm_scatter(&mine, scattered, 1, PVM_INT, 55, group, 0), PvmOk);
  CHECK(mine == 10 * inst);
  CHECK_CODE(pvm_gather(gathered, &inst, 1, PVM_INT, 56, group, 0), PvmOk);
  if (inst == 0) {
    for (i = 0; i < n; ++i) CHECK(gathered[i] == i);
  }
  free(scattered);
  free(gathered);
}

/* Instance 0 leaves and joins again late: the others call a barrier for
 * the whole group meanwhile, and must all wait for it rather than pick
 * the lowest instance they see as their coordinator. */
static void late_rejoin(void) {
  int first = pvm_gettid(group, 0), i;
  if (n < 2) return;
  CHECK(first > 0);
  CHECK_CODE(pvm_barrier(group, n), PvmOk); /* everyone knows first */
  if (inst == 0) {
    CHECK_CODE(pvm_lvgroup(group), PvmOk);
    CHECK(pvm_initsend(PvmDataDefault) > 0);
    for (i = 1; i < n; ++i) {
      int tid = pvm_gettid(group, i);
      CHECK(tid > 0);
      CHECK_CODE(pvm_send(tid, 43), PvmOk);
    }
    usleep(200000);
    CHECK_CODE(pvm_joingroup(group), 0);
  } else {
    CHECK(pvm_recv(first, 43) > 0);
  }
  CHECK_CODE(pvm_barrier(group, n), PvmOk);
  CHECK_CODE(pvm_gettid(group, 0), first);
}

int main(void) {
  const char *size = getenv("ROCL_SIZE");
  int round;
  n = size != 0 ? atoi(size) : 1;
  me = pvm_mytid();
  CHECK(me > 0);
  pvm_setopt(PvmAutoErr, 0);
  membership();
  bcast_and_ring();
  reductions();
  late_rejoin();
  for (round = 0; round < 5; ++round) CHECK_CODE(pvm_barrier(group, -1), PvmOk);
  CHECK_CODE(pvm_lvgroup(group), PvmOk);
  round = pvm_lvgroup(group); /* the others may have left too */
  CHECK(round == PvmNotInGroup || round == PvmNoGroup);
  CHECK(pvm_barrier(group, n) < 0);
  CHECK_CODE(pvm_exit(), PvmOk);
  if (inst == 0) printf("pvm groups: OK\n");
  return 0;
}
