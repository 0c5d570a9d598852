/* spawn_hosts: rocl_spawn's host errors, run by tests/netns/spawn_hosts_test.sh
 * with rocld on h1 and h2 (--spawn) and h3 (without), joined:
 *   spawn_hosts wait    on h3: registers {type=spawn_hosts_waiter}, stays
 *                       until killed
 *   spawn_hosts idle    rocl_init, rocl_exit
 *   spawn_hosts check   on h1: a spawn next to the waiter (h3) is refused;
 *                       one on h2 by name works; then (SPAWN_HOSTS_STOPPED
 *                       appears when the script has stopped h2's rocld) a
 *                       spawn on h2's host resource fails as unreachable
 *                       within 3 s; then (SPAWN_HOSTS_KILLED, h2's rocld
 *                       killed and dropped) h2 is no host by name.
 * Prints "spawn_hosts: ..." lines; exit 0 on success. */
#include <rocl/rocl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond, what)                                                         \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "spawn_hosts: %s failed: %s\n", (what), rocl_last_error()); \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void wait_file(const char *env) {
  const char *path = getenv(env);
  CHECK(path != NULL, env);
  for (int i = 0; i < 600 && access(path, F_OK) != 0; ++i) usleep(100000);
  CHECK(access(path, F_OK) == 0, env);
}

static void expect(int64_t rc, int code, const char *words, const char *what) {
  if (rc != code || strstr(rocl_last_error(), words) == NULL) {
    fprintf(stderr, "spawn_hosts: %s gave %lld '%s', expected %s with '%s'\n", what, (long long)rc,
            rocl_last_error(), rocl_strerror(code), words);
    exit(1);
  }
  printf("spawn_hosts: %s: %s\n", what, rocl_last_error());
  fflush(stdout);
}

/* The gid of the one resource matching type (and its "context" in *ctx). */
static rocl_gid_t find(const char *type, const char *host, rocl_gid_t *ctx) {
  rocl_attrl_t *q = rocl_new_attrl(0);
  rocl_add_attr(q, "type", type, (int)strlen(type));
  if (host != NULL) rocl_add_attr(q, "host", host, (int)strlen(host));
  rocl_add_attr(q, "context", NULL, (int)sizeof(rocl_gid_t));
  CHECK(rocl_query_wait(q, 1, 10000) >= 1, type);
  rocl_gid_t gid = ROCL_NULL_GID;
  CHECK(rocl_query(&gid, q) == ROCL_OK, type);
  if (ctx != NULL) memcpy(ctx, rocl_get_attr(q, "context", NULL), sizeof *ctx);
  rocl_kill_attrl(q);
  return gid;
}

int main(int argc, char **argv) {
  CHECK(argc == 2, "usage: spawn_hosts wait|idle|check");
  CHECK(rocl_init() > 0, "rocl_init");
  if (strcmp(argv[1], "idle") == 0) {
    rocl_exit();
    return 0;
  }
  if (strcmp(argv[1], "wait") == 0) {
    rocl_attrl_t *a = rocl_new_attrl(0);
    rocl_add_attr(a, "type", "spawn_hosts_waiter", 18);
    CHECK(rocl_register(a) > 0, "registering the waiter");
    printf("spawn_hosts: waiting\n");
    fflush(stdout);
    pause();
    return 0;
  }
  const char *idle[] = {argv[0], "idle", NULL};
  rocl_gid_t waiter_ctx = ROCL_NULL_GID;
  find("spawn_hosts_waiter", NULL, &waiter_ctx);
  expect(rocl_spawn_at(waiter_ctx, idle, 5000), ROCL_EPEER, "does not spawn processes",
         "a spawn next to a process whose host's rocld runs without --spawn");
  CHECK(rocl_spawn("h2", idle, 10000) > 0, "a spawn on h2 by name");
  printf("spawn_hosts: spawned on h2\n");
  fflush(stdout);
  const rocl_gid_t h2 = find("rocl-host", "h2", NULL);
  printf("spawn_hosts: ready\n");
  fflush(stdout);
  wait_file("SPAWN_HOSTS_STOPPED");
  const double t0 = now_ms();
  expect(rocl_spawn_at(h2, idle, 10000), ROCL_EPEER, "not reachable",
         "a spawn on a host whose rocld is stopped");
  const double took = now_ms() - t0;
  printf("spawn_hosts: unreachable after %.0f ms\n", took);
  fflush(stdout);
  CHECK(took < 3000, "the unreachable host's bound");
  wait_file("SPAWN_HOSTS_KILLED");
  expect(rocl_spawn("h2", idle, 5000), ROCL_ENOTFOUND, "no host named 'h2'",
         "a spawn on a host whose rocld is gone");
  expect(rocl_spawn_at(h2, idle, 5000), ROCL_EPEER, "not reachable",
         "a spawn on the gone host's resource");
  printf("spawn_hosts: ok\n");
  rocl_exit();
  return 0;
}
