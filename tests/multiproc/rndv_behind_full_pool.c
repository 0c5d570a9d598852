/* rndv_behind_full_pool: run under roclrun -n 2 with ROCL_POOL_MAX=1M and
 * ROCL_TCP_RNDV_THRESHOLD=64K. Rank 0 sends a 128 KiB message (rendezvous)
 * and then 40 messages of 40000 bytes (eager: a 64 KiB block each, 2.5 MiB
 * in all) that rank 1 does not receive yet. Over tcp the rendezvous data
 * then comes behind the eager messages, which fill rank 1's pool: reading
 * pauses, and rank 1's receive of the large message waits. After 2.5 s a
 * second thread of rank 1 receives the small messages and returns their
 * buffers: reading resumes and the large message arrives intact. Over tcp
 * the waiting receive must have said why it waits and what cures it
 * (captured from rank 1's stderr). Exit 0 on success. */
#include <pthread.h>
#include <rocl/rocl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "find_rank.h"

#define LARGE (128 * 1024)
#define SMALL_COUNT 40
#define SMALL 40000

static unsigned char large[LARGE], got[LARGE];
static unsigned char small[SMALL];
static rocl_gid_t me, peer;

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(seed * 29u + i * 7u + 3u);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Rank 1's second thread: takes the small messages once the receive of
 * the large one has waited a while. */
static void *take_small_ones(void *arg) {
  (void)arg;
  sleep_ms(2500);
  unsigned char want[SMALL];
  for (int k = 0; k < SMALL_COUNT; ++k) {
    void *p = NULL;
    size_t len = 0;
    CHECK(rocl_recv(me, peer, 2, &p, NULL, NULL, &len, 30000) == ROCL_OK, "rocl_recv (small)");
    fill(want, SMALL, (unsigned)k);
    CHECK(len == SMALL && memcmp(p, want, SMALL) == 0, "content of a small message");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
  }
  return NULL;
}

/* Everything written to fd 2 since capture_stderr(), read back (and
 * written to the real stderr too). */
static int saved_stderr = -1;
static FILE *captured = NULL;
static void capture_stderr(void) {
  fflush(stderr);
  saved_stderr = dup(2);
  captured = tmpfile();
  CHECK(saved_stderr >= 0 && captured != NULL, "capturing stderr");
  CHECK(dup2(fileno(captured), 2) == 2, "dup2 onto stderr");
}
static char *release_stderr(void) {
  static char text[1 << 16];
  fflush(stderr);
  dup2(saved_stderr, 2);
  rewind(captured);
  size_t n = fread(text, 1, sizeof text - 1, captured);
  text[n] = '\0';
  fputs(text, stderr);
  return text;
}

int main(void) {
  const int rank = start_rank("rndv_behind_full_pool");
  const char *transports = getenv("ROCL_TRANSPORTS");
  const int tcp = transports != NULL && strcmp(transports, "tcp") == 0;
  if (rank == 1 && tcp) capture_stderr();
  CHECK(rocl_init() > 0, "rocl_init");
  me = register_rank("rndv_behind_full_pool", rank);
  peer = find_rank("rndv_behind_full_pool", 1 - rank);
  void *p = NULL;

  if (rank == 0) {
    CHECK(rocl_recv(me, peer, 9, &p, NULL, NULL, NULL, 30000) == ROCL_OK, "rocl_recv (ready)");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
    fill(large, LARGE, 1000);
    CHECK(rocl_sendx(me, peer, 1, 0, 0, large, LARGE) == ROCL_OK, "rocl_sendx (large)");
    for (int k = 0; k < SMALL_COUNT; ++k) {
      fill(small, SMALL, (unsigned)k);
      CHECK(rocl_sendx(me, peer, 2, 0, 0, small, SMALL) == ROCL_OK, "rocl_sendx (small)");
    }
    CHECK(rocl_recv(me, peer, 3, &p, NULL, NULL, NULL, 60000) == ROCL_OK, "rocl_recv (done)");
    CHECK(rocl_bfret(p) == ROCL_OK, "rocl_bfret");
    CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
    return 0;
  }

  void *ready = rocl_bfget(8), *done = rocl_bfget(8);
  CHECK(ready != NULL && done != NULL, "rocl_bfget");
  CHECK(rocl_bftoret(ready) == ROCL_OK, "rocl_bftoret");
  CHECK(rocl_send(me, peer, 9, ready, 6) == ROCL_OK, "rocl_send (ready)");
  sleep_ms(300); /* the small messages arrive and fill the pool */
  pthread_t helper;
  CHECK(pthread_create(&helper, NULL, take_small_ones, NULL) == 0, "pthread_create");
  rocl_status_t st;
  CHECK(rocl_recvx(me, peer, 1, 0, got, LARGE, &st, 30000) == ROCL_OK, "rocl_recvx (large)");
  fill(large, LARGE, 1000);
  CHECK(st.len == LARGE && memcmp(got, large, LARGE) == 0, "content of the large message");
  CHECK(pthread_join(helper, NULL) == 0, "pthread_join");
  CHECK(rocl_bftoret(done) == ROCL_OK, "rocl_bftoret");
  CHECK(rocl_send(me, peer, 3, done, 5) == ROCL_OK, "rocl_send (done)");
  CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
  if (tcp) {
    const char *log = release_stderr();
    CHECK(strstr(log, "reading is paused for want of buffers") != NULL &&
              strstr(log, "raise ROCL_POOL_MAX") != NULL,
          "the waiting receive saying why it waits (tcp)");
  }
  printf(
      "rndv_behind_full_pool: the rendezvous message behind a full pool arrived once "
      "buffers came back%s\n",
      tcp ? ", and the wait said why" : "");
  return 0;
}
