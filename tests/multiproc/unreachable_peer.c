/* unreachable_peer: run under roclrun -n 2. Rank 0 enables inproc alone
 * (ROCL_TRANSPORTS=inproc, set before its rocl_init), rank 1 every built
 * transport: each finds the other's resource in the job's directory, but
 * no transport of the sender reaches the receiver's context (rank 0 has
 * none between processes, rank 1's have no address of rank 0 to go to).
 * Each send must fail with ROCL_EPEER and a sentence that says the
 * resource exists and names the transports of both sides, not "unknown
 * resource". Exit 0 on success. */
#define _POSIX_C_SOURCE 200809L /* nanosleep, setenv */

#include <rocl/rocl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "find_rank.h"

/* Exits 1 unless the last error has `part`. */
static void expect_part(const char *part) {
  if (strstr(rocl_last_error(), part) == NULL) {
    fprintf(stderr, "unreachable_peer rank %d: the error lacks \"%s\": %s\n", check_rank, part,
            rocl_last_error());
    exit(1);
  }
}

int main(void) {
  const int rank = start_rank("unreachable_peer");
  if (rank == 0) setenv("ROCL_TRANSPORTS", "inproc", 1);
  CHECK(rocl_init() > 0, "rocl_init");
  const rocl_gid_t me = register_rank("unreachable_peer", rank);
  const rocl_gid_t peer = find_rank("unreachable_peer", 1 - rank);
  char text[] = "hello";
  const int rc = rocl_send(me, peer, 1, text, sizeof text);
  if (rc != ROCL_EPEER) {
    fprintf(stderr, "unreachable_peer rank %d: the send gave %d (%s), not ROCL_EPEER: %s\n", rank,
            rc, rocl_strerror(rc), rocl_last_error());
    return 1;
  }
  char gid_text[32];
  snprintf(gid_text, sizeof gid_text, "%#llx", (unsigned long long)peer);
  expect_part(gid_text);
  expect_part("exists");
  expect_part("no transport enabled here reaches it");
  if (rank == 0) {
    expect_part("enabled here inproc (ROCL_TRANSPORTS=inproc)");
    expect_part("offered there inproc, shm, tcp");
  } else {
    expect_part("enabled here inproc, shm, tcp");
    expect_part("offered there inproc");
  }
  printf("rank %d: %s: %s\n", rank, rocl_strerror(rc), rocl_last_error());
  /* Neither leaves before the other has sent (its resource would go): a
   * file in the job folder, which outlives the ranks, says who has. */
  char mine[4096], theirs[4096];
  snprintf(mine, sizeof mine, "%s/unreachable_peer.%d", getenv("ROCL_JOB_DIR"), rank);
  snprintf(theirs, sizeof theirs, "%s/unreachable_peer.%d", getenv("ROCL_JOB_DIR"), 1 - rank);
  FILE *f = fopen(mine, "w");
  CHECK(f != NULL && fclose(f) == 0, "writing the file that says this rank has sent");
  const struct timespec pause = {0, 10000000};
  for (int i = 0; i < 1000 && access(theirs, F_OK) != 0; ++i) nanosleep(&pause, NULL);
  CHECK(access(theirs, F_OK) == 0, "waiting 10 s for the other rank's send");
  rocl_exit();
  return 0;
}
