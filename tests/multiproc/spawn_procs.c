/* spawn_procs: run under roclrun -n P (P >= 1, on one host or several).
 * Every rank spawns this program (as a "child") on the next host of the job
 * (the hosts that take spawns, {type=rocl-host}, in gid order; on one host
 * that host), checks that the child's context is on that host, sends it a
 * token and gets token+1 back; each child in turn spawns a "grandchild" on
 * any host, which answers its parent the same way (spawned processes spawn
 * in turn). Every rank then finds all P children and P grandchildren by
 * attributes. Then rank 0 checks the errors (no such program, no such
 * host, a program that exits before rocl_init, one that never calls it
 * within the limit) and times 20 spawns of a program that only calls
 * rocl_init and rocl_exit on the next host ("spawn_procs: median spawn
 * ... ms"). Exit 0 on success. */
#include <rocl/rocl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "find_rank.h"

static const char *self_path;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The "host" attribute of resource gid, in out. */
static void host_of(rocl_gid_t gid, char *out, size_t cap) {
  rocl_attrl_t *q = rocl_new_attrl(0);
  rocl_add_attr(q, "host", NULL, 200);
  CHECK(rocl_query(&gid, q) == ROCL_OK, "looking a context up by gid");
  int len = 0;
  const char *v = rocl_get_attr(q, "host", &len);
  CHECK(v != NULL && (size_t)len < cap, "a context's host attribute");
  memcpy(out, v, (size_t)len);
  out[len] = '\0';
  rocl_kill_attrl(q);
}

/* The names of the hosts that take spawns, in gid order; returns how many. */
static int spawn_hosts(char names[][200], int most) {
  rocl_attrl_t *q = rocl_new_attrl(0);
  rocl_add_attr(q, "type", "rocl-host", 9);
  rocl_add_attr(q, "host", NULL, 199);
  rocl_handler_t *h = rocl_query_start(q);
  CHECK(h != NULL, "listing the hosts");
  int n = 0;
  while (n < most && rocl_query_next(h, q) > 0) {
    int len = 0;
    const char *v = rocl_get_attr(q, "host", &len);
    memcpy(names[n], v, (size_t)len);
    names[n][len] = '\0';
    ++n;
  }
  rocl_query_stop(h);
  rocl_kill_attrl(q);
  return n;
}

static rocl_gid_t register_as(const char *type, int index) {
  char text[16];
  snprintf(text, sizeof text, "%d", index);
  rocl_attrl_t *a = rocl_new_attrl(0);
  rocl_add_attr(a, "type", type, (int)strlen(type));
  rocl_add_attr(a, "index", text, (int)strlen(text));
  const int64_t g = rocl_register(a);
  rocl_kill_attrl(a);
  CHECK(g > 0, "registering");
  return (rocl_gid_t)g;
}

/* The resource {type, index}, waiting up to 10 s for it. */
static rocl_gid_t find_as(const char *type, int index) {
  char text[16];
  snprintf(text, sizeof text, "%d", index);
  rocl_attrl_t *q = rocl_new_attrl(0);
  rocl_add_attr(q, "type", type, (int)strlen(type));
  rocl_add_attr(q, "index", text, (int)strlen(text));
  CHECK(rocl_query_wait(q, 1, 10000) >= 1, "waiting for a spawned process's resource");
  rocl_gid_t gid = ROCL_NULL_GID;
  CHECK(rocl_query(&gid, q) == ROCL_OK, "finding a spawned process's resource");
  rocl_kill_attrl(q);
  return gid;
}

/* Sends token to peer and checks the answer token+1. */
static void ask(rocl_gid_t me, rocl_gid_t peer, int token) {
  CHECK(rocl_send(me, peer, 1, &token, sizeof token) == ROCL_OK, "sending a token");
  void *msg = NULL;
  size_t len = 0;
  CHECK(rocl_recv(me, peer, 2, &msg, NULL, NULL, &len, 30000) == ROCL_OK, "the answer");
  int got = 0;
  CHECK(len == sizeof got, "the answer's size");
  memcpy(&got, msg, sizeof got);
  rocl_bfret(msg);
  if (got != token + 1) {
    fprintf(stderr, "spawn_procs: answer %d to token %d\n", got, token);
    exit(1);
  }
}

/* Answers one token from anyone with token+1; returns who asked. */
static rocl_gid_t answer(rocl_gid_t me) {
  void *msg = NULL;
  size_t len = 0;
  rocl_gid_t from = ROCL_NULL_GID;
  CHECK(rocl_recv(me, ROCL_ANY, 1, &msg, &from, NULL, &len, 60000) == ROCL_OK, "a token");
  int token = 0;
  memcpy(&token, msg, sizeof token);
  rocl_bfret(msg);
  token += 1;
  CHECK(rocl_send(me, from, 2, &token, sizeof token) == ROCL_OK, "answering a token");
  return from;
}

/* Waits for "stop" (tag 3) from anyone. */
static void wait_stop(rocl_gid_t me) {
  void *msg = NULL;
  CHECK(rocl_recv(me, ROCL_ANY, 3, &msg, NULL, NULL, NULL, 120000) == ROCL_OK, "stop");
  rocl_bfret(msg);
}

static void stop(rocl_gid_t me, rocl_gid_t peer) {
  CHECK(rocl_send(me, peer, 3, "x", 1) == ROCL_OK, "sending stop");
}

/* A spawned process: "child I" spawns "grandchild I" on any host. */
static int spawned(const char *role, int index) {
  CHECK(rocl_init() > 0, "rocl_init in a spawned process");
  CHECK(rocl_parent() != ROCL_NULL_GID, "rocl_parent of a spawned process");
  const int child = strcmp(role, "child") == 0;
  const rocl_gid_t me = register_as(child ? "spawn_procs_child" : "spawn_procs_grandchild", index);
  answer(me);
  if (child) {
    char text[16];
    snprintf(text, sizeof text, "%d", index);
    const char *argv[] = {self_path, "grandchild", text, NULL};
    const int64_t g = rocl_spawn("any", argv, 20000);
    CHECK(g > 0, "a spawned process spawning");
    const rocl_gid_t grandchild = find_as("spawn_procs_grandchild", index);
    ask(me, grandchild, 100 + index);
    wait_stop(me);
    stop(me, grandchild);
  } else {
    wait_stop(me);
  }
  rocl_exit();
  return 0;
}

static void expect_failure(int64_t rc, int code, const char *words, const char *what) {
  if (rc != code || strstr(rocl_last_error(), words) == NULL) {
    fprintf(stderr, "spawn_procs: %s gave %lld '%s', expected %s with '%s'\n", what, (long long)rc,
            rocl_last_error(), rocl_strerror(code), words);
    exit(1);
  }
  printf("spawn_procs: %s: %s\n", what, rocl_last_error());
  fflush(stdout);
}

static void errors(const char *next_host) {
  const char *missing[] = {"/nonexistent/spawn_procs_program", NULL};
  expect_failure(rocl_spawn(next_host, missing, 5000), ROCL_ENOTFOUND, "no such program",
                 "a program that does not exist");
  const char *any_argv[] = {"true", NULL};
  expect_failure(rocl_spawn("no-such-host", any_argv, 5000), ROCL_ENOTFOUND, "no-such-host",
                 "a host that does not exist");
  expect_failure(rocl_spawn(next_host, any_argv, 5000), ROCL_EPEER,
                 "before its rocl_init registered it", "a program that exits at once");
  const char *sleeper[] = {"sleep", "30", NULL};
  const double t0 = now_ms();
  expect_failure(rocl_spawn(next_host, sleeper, 500), ROCL_ETIMEDOUT, "killed",
                 "a program that never calls rocl_init");
  CHECK(now_ms() - t0 < 3000, "the time limit");
  const char *none[] = {NULL};
  expect_failure(rocl_spawn(next_host, none, 500), ROCL_EINVAL, "no program", "an empty argv");
}

int main(int argc, char **argv) {
  self_path = argv[0];
  if (argc >= 2 && strcmp(argv[1], "idle") == 0) {
    CHECK(rocl_init() > 0, "rocl_init");
    rocl_exit();
    return 0;
  }
  if (argc >= 3) return spawned(argv[1], atoi(argv[2]));
  const int rank = start_rank("spawn_procs");
  const int size = getenv("ROCL_SIZE") ? atoi(getenv("ROCL_SIZE")) : 1;
  CHECK(rocl_init() > 0, "rocl_init");
  CHECK(rocl_parent() == ROCL_NULL_GID, "rocl_parent of a rank");
  char hosts[64][200];
  const int nhosts = spawn_hosts(hosts, 64);
  CHECK(nhosts >= 1, "a host that takes spawns");
  char mine[200];
  host_of(rocl_context_gid(), mine, sizeof mine);
  int at = 0;
  while (at < nhosts && strcmp(hosts[at], mine) != 0) ++at;
  CHECK(at < nhosts, "this rank's host among the spawn hosts");
  const char *next = hosts[(at + 1) % nhosts];

  char text[16];
  snprintf(text, sizeof text, "%d", rank);
  const char *child_argv[] = {argv[0], "child", text, NULL};
  const int64_t child = rocl_spawn(next, child_argv, 20000);
  CHECK(child > 0, "spawning a child on the next host");
  char where[200];
  host_of((rocl_gid_t)child, where, sizeof where);
  if (strcmp(where, next) != 0) {
    fprintf(stderr, "spawn_procs rank %d: child on host '%s', asked for '%s'\n", rank, where, next);
    return 1;
  }
  const rocl_gid_t me = register_as("spawn_procs_rank", rank);
  const rocl_gid_t child_resource = find_as("spawn_procs_child", rank);
  ask(me, child_resource, 10 * rank);

  /* Everyone's children and grandchildren, found by attributes. */
  rocl_attrl_t *q = rocl_new_attrl(0);
  rocl_add_attr(q, "type", "spawn_procs_grandchild", 22);
  CHECK(rocl_query_wait(q, size, 30000) == size, "every grandchild");
  rocl_kill_attrl(q);
  q = rocl_new_attrl(0);
  rocl_add_attr(q, "type", "spawn_procs_child", 17);
  CHECK(rocl_query_wait(q, size, 30000) == size, "every child");
  rocl_kill_attrl(q);

  if (rank == 0) {
    errors(next);
    double ms[20];
    const char *idle[] = {argv[0], "idle", NULL};
    for (int i = 0; i < 20; ++i) {
      const double t0 = now_ms();
      CHECK(rocl_spawn(next, idle, 20000) > 0, "spawning an idle process");
      ms[i] = now_ms() - t0;
    }
    qsort(ms, 20, sizeof ms[0], cmp);
    printf("spawn_procs: median spawn on host %s from %s %.2f ms (min %.2f, max %.2f)\n", next,
           mine, ms[10], ms[0], ms[19]);
    /* What the program costs run here directly (fork, exec, rocl_init,
     * rocl_exit, exit): the floor a spawn's own path adds to. */
    for (int i = 0; i < 20; ++i) {
      const double t0 = now_ms();
      const pid_t pid = fork();
      CHECK(pid >= 0, "fork");
      if (pid == 0) {
        execv(argv[0], (char *const *)idle);
        _exit(127);
      }
      int status = 0;
      CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "running the idle program directly");
      ms[i] = now_ms() - t0;
    }
    qsort(ms, 20, sizeof ms[0], cmp);
    printf("spawn_procs: median direct run of the same program on %s %.2f ms\n", mine, ms[10]);
  }
  /* Everyone is done asking: the children may go. */
  register_as("spawn_procs_done", rank);
  q = rocl_new_attrl(0);
  rocl_add_attr(q, "type", "spawn_procs_done", 16);
  CHECK(rocl_query_wait(q, size, 60000) == size, "every rank done");
  rocl_kill_attrl(q);
  /* Nobody leaves (taking its resources along) before everyone has seen
   * them: the others tell rank 0, which lets them go. */
  void *msg = NULL;
  if (rank == 0) {
    for (int i = 1; i < size; ++i) {
      CHECK(rocl_recv(me, ROCL_ANY, 4, &msg, NULL, NULL, NULL, 60000) == ROCL_OK, "seen");
      rocl_bfret(msg);
    }
    for (int i = 1; i < size; ++i) {
      CHECK(rocl_send(me, find_as("spawn_procs_rank", i), 5, "x", 1) == ROCL_OK, "letting go");
    }
  } else {
    CHECK(rocl_send(me, find_as("spawn_procs_rank", 0), 4, "x", 1) == ROCL_OK, "sending seen");
    CHECK(rocl_recv(me, ROCL_ANY, 5, &msg, NULL, NULL, NULL, 60000) == ROCL_OK, "let go");
    rocl_bfret(msg);
  }
  stop(me, child_resource);
  printf("spawn_procs: %d processes ok\n", size);
  rocl_exit();
  return 0;
}
