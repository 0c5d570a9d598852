/* send_to_deleted: run under roclrun -n 2 (on one host or two). Rank 1
 * registers a target; rank 0 finds it and sends to it (its route is now
 * cached); rank 1 receives, deletes the target and says so; rank 0 then
 * sends to the deleted target again: within a bounded time (the removal
 * reaches rank 0's directory server, across hosts by the servers'
 * announcement) the send fails with ROCL_EBADGID naming the gid, and never
 * hangs. Exit 0 on success. */
#include <rocl/rocl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "find_rank.h"

int main(void) {
  const int rank = start_rank("send_to_deleted");
  CHECK(rocl_init() > 0, "rocl_init");
  const rocl_gid_t me = register_rank("send_to_deleted", rank);
  if (rank == 1) {
    const rocl_gid_t target = register_rank("send_to_deleted_target", 1);
    void *msg = NULL;
    rocl_gid_t from = ROCL_NULL_GID;
    int tag = 0;
    size_t len = 0;
    CHECK(rocl_recv(target, ROCL_ANY, ROCL_ANY, &msg, &from, &tag, &len, 30000) == ROCL_OK,
          "rocl_recv at the target");
    rocl_bfret(msg);
    CHECK(rocl_delete(target) == ROCL_OK, "rocl_delete");
    register_rank("send_to_deleted_gone", 1);
    /* Rank 0's last message says it is done with us. */
    CHECK(rocl_recv(me, ROCL_ANY, 3, &msg, &from, &tag, &len, 30000) == ROCL_OK, "the last recv");
    rocl_bfret(msg);
    rocl_exit();
    return 0;
  }
  const rocl_gid_t peer = find_rank("send_to_deleted", 1);
  const rocl_gid_t target = find_rank("send_to_deleted_target", 1);
  char text[] = "hello";
  CHECK(rocl_send(me, target, 1, text, sizeof text) == ROCL_OK, "the first send");
  find_rank("send_to_deleted_gone", 1);
  /* The removal travels: at most a few ms on one network. Bound: 2 s. */
  const struct timespec pause = {0, 1000000};
  int rc = ROCL_OK;
  for (int i = 0; i < 2000 && rc == ROCL_OK; ++i) {
    rc = rocl_send(me, target, 2, text, sizeof text);
    if (rc == ROCL_OK) nanosleep(&pause, NULL);
  }
  if (rc != ROCL_EBADGID) {
    fprintf(stderr,
            "send_to_deleted rank 0: a send to the deleted target gave %d (%s), not "
            "ROCL_EBADGID within 2 s\n",
            rc, rocl_last_error());
    return 1;
  }
  char gid_text[32];
  snprintf(gid_text, sizeof gid_text, "%#llx", (unsigned long long)target);
  if (strstr(rocl_last_error(), gid_text) == NULL) {
    fprintf(stderr, "send_to_deleted rank 0: the error does not name %s: %s\n", gid_text,
            rocl_last_error());
    return 1;
  }
  printf("rank 0: a send to deleted %s failed: %s\n", gid_text, rocl_last_error());
  CHECK(rocl_send(me, peer, 3, text, sizeof text) == ROCL_OK, "the last send");
  rocl_exit();
  return 0;
}
