/* pingpong.c - round trip time and transfer rate of PVM messages between
 * a task and the child it spawns, written to PVM 3.4's interface only, so
 * that the same source builds against rocl's PVM and PVM's own libpvm3
 * (compare_with_pvm.sh runs both). Each round trip packs the bytes
 * (PvmDataRaw), sends, receives and unpacks them on both sides.
 *
 * Usage: pingpong [direct]   ("direct": pvm_setopt(PvmRoute, PvmRouteDirect))
 * Prints one line per size: bytes, round trip in microseconds and the
 * transfer rate of one way in MB/s (bytes / half the round trip). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "pvm3.h"

static double now_us(void) {
  struct timeval tv;
  gettimeofday(&tv, 0);
  return tv.tv_sec * 1e6 + tv.tv_usec;
}

static void bounce(int peer, char *buf, int size) {
  pvm_initsend(PvmDataRaw);
  pvm_pkbyte(buf, size, 1);
  pvm_send(peer, 1);
  pvm_recv(peer, 1);
  pvm_upkbyte(buf, size, 1);
}

static void pong(void) {
  int parent = pvm_parent(), size = 0;
  char *buf = malloc(1 << 20);
  for (;;) {
    pvm_recv(parent, -1);
    pvm_bufinfo(pvm_getrbuf(), &size, 0, 0);
    if (size == 0) break; /* the end */
    pvm_upkbyte(buf, size, 1);
    pvm_initsend(PvmDataRaw);
    pvm_pkbyte(buf, size, 1);
    pvm_send(parent, 1);
  }
  free(buf);
  pvm_exit();
}

int main(int argc, char **argv) {
  static const int sizes[] = {8, 1024, 65536, 1 << 20};
  int child, i, s;
  char *buf;
  if (pvm_parent() > 0) {
    pong();
    return 0;
  }
  pvm_mytid();
  if (argc > 1 && strcmp(argv[1], "direct") == 0) pvm_setopt(PvmRoute, PvmRouteDirect);
  if (pvm_spawn(argv[0], 0, PvmTaskDefault, "", 1, &child) != 1) {
    fprintf(stderr, "pingpong: cannot spawn %s\n", argv[0]);
    pvm_exit();
    return 1;
  }
  buf = calloc(1, 1 << 20);
  printf("%10s %12s %10s\n", "bytes", "rtt_us", "MB/s");
  for (s = 0; s < 4; ++s) {
    int size = sizes[s], rounds = size <= 1024 ? 20000 : size <= 65536 ? 2000 : 200;
    double start, rtt;
    for (i = 0; i < rounds / 10; ++i) bounce(child, buf, size); /* warm up */
    start = now_us();
    for (i = 0; i < rounds; ++i) bounce(child, buf, size);
    rtt = (now_us() - start) / rounds;
    printf("%10d %12.2f %10.1f\n", size, rtt, size / (rtt / 2));
    fflush(stdout);
  }
  pvm_initsend(PvmDataRaw);
  pvm_send(child, 2); /* empty: the end */
  free(buf);
  pvm_exit();
  return 0;
}
