/* spawn_errors: rocl_spawn_thread when the launcher cannot answer. Run
 * under roclrun -n 1 with ROCL_PEER_CHECK_MS=500. The process forks a
 * child that joins the job (not a roclrun rank, so its death does not end
 * the job), exports "noop" and waits. Then, with the child stopped
 * (SIGSTOP), a spawn in it fails with ROCL_ETIMEDOUT after its timeout;
 * with the child killed (SIGKILL) while a spawn waits, the spawn fails
 * with ROCL_EPEER within a few seconds instead of its 20 s timeout; and a
 * later spawn there fails with ROCL_ENOTFOUND naming the process (its
 * export left with it). Exit 0 on success. */
#include <pthread.h>
#include <rocl/rocl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "find_rank.h"

static void noop(rocl_gid_t self, const void *arg, size_t len, void *user) {
  (void)self, (void)arg, (void)len, (void)user;
}

static pid_t g_child;

static void *kill_later(void *unused) {
  (void)unused;
  usleep(300000);
  kill(g_child, SIGKILL);
  return NULL;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void) {
  start_rank("spawn_errors");
  g_child = fork();
  CHECK(g_child >= 0, "fork");
  if (g_child == 0) {
    CHECK(rocl_init() > 0, "rocl_init (child)");
    CHECK(rocl_export("noop", noop, NULL) == ROCL_OK, "rocl_export (child)");
    register_rank("spawn_errors_victim", 0);
    for (;;) pause();
  }
  CHECK(rocl_init() > 0, "rocl_init");
  rocl_attrl_t *q = rocl_new_attrl(0);
  rocl_add_attr(q, "type", "spawn_errors_victim", 19);
  rocl_add_attr(q, "context", NULL, (int)sizeof(rocl_gid_t));
  rocl_gid_t victim = ROCL_NULL_GID, ctx = ROCL_NULL_GID;
  CHECK(rocl_query_wait(q, 1, 30000) >= 1 && rocl_query(&victim, q) == ROCL_OK, "the child");
  int len = 0;
  const void *v = rocl_get_attr(q, "context", &len);
  CHECK(v != NULL && len == (int)sizeof ctx, "the child's context");
  memcpy(&ctx, v, sizeof ctx);
  rocl_kill_attrl(q);
  CHECK(rocl_spawn_thread(ctx, "noop", NULL, 0, 10000) > 0, "a spawn in the child");

  kill(g_child, SIGSTOP);
  double t0 = now_s();
  CHECK(rocl_spawn_thread(ctx, "noop", NULL, 0, 300) == ROCL_ETIMEDOUT,
        "a spawn in a stopped process");
  CHECK(strstr(rocl_last_error(), "within 300 ms") != NULL, "the sentence of the timeout");
  printf("stopped launcher: ROCL_ETIMEDOUT after %.0f ms: %s\n", (now_s() - t0) * 1000,
         rocl_last_error());

  pthread_t killer;
  pthread_create(&killer, NULL, kill_later, NULL);
  t0 = now_s();
  const int64_t rc = rocl_spawn_thread(ctx, "noop", NULL, 0, 20000);
  const double waited = now_s() - t0;
  pthread_join(killer, NULL);
  waitpid(g_child, NULL, 0);
  CHECK(rc == ROCL_EPEER, "a spawn whose launcher dies failing with ROCL_EPEER");
  CHECK(waited < 5, "ROCL_EPEER within 5 s");
  printf("killed launcher: ROCL_EPEER after %.0f ms: %s\n", waited * 1000, rocl_last_error());

  /* Its export left with it (its connection to the directory closed). */
  int64_t later = 0;
  for (int k = 0; k < 100; ++k) {
    later = rocl_spawn_thread(ctx, "noop", NULL, 0, 2000);
    if (later == ROCL_ENOTFOUND) break;
    usleep(20000);
  }
  CHECK(later == ROCL_ENOTFOUND, "a spawn in a process that is gone");
  char ctx_text[32];
  snprintf(ctx_text, sizeof ctx_text, "%#llx", (unsigned long long)ctx);
  CHECK(strstr(rocl_last_error(), ctx_text) != NULL, "the sentence naming the process");
  printf("gone: %s\nspawn_errors: ok\n", rocl_last_error());
  rocl_exit();
  return 0;
}
