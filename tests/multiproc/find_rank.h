/* find_rank.h - for the small C programs run under roclrun: start_rank
 * reads this process's rank; register_rank registers its resource
 * {type=<type>, rank=<rank>}; find_rank waits (up to 10 s) until another
 * process's is in the job's directory and returns its gid; CHECK exits 1
 * naming the program, the rank, what failed and rocl_last_error();
 * fill_pattern and expect_pattern write and check a payload that differs by
 * seed and position. All exit 1 naming the program and the rank on
 * failure. */
#pragma once
#include <rocl/rocl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *check_program = "?";
static int check_rank = -1;

/* This process's rank (ROCL_RANK, 0 without it), remembered with the
 * program's name for CHECK. Call it first. */
__attribute__((unused)) static int start_rank(const char *program) {
  const char *env = getenv("ROCL_RANK");
  check_program = program;
  check_rank = env ? atoi(env) : 0;
  return check_rank;
}

#define CHECK(cond, what)                                                               \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "%s rank %d: %s failed: %s\n", check_program, check_rank, (what), \
              rocl_last_error());                                                       \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

static rocl_gid_t register_rank(const char *type, int rank) {
  char rank_text[16];
  snprintf(rank_text, sizeof rank_text, "%d", rank);
  rocl_attrl_t *a = rocl_new_attrl(0);
  rocl_add_attr(a, "type", type, (int)strlen(type));
  rocl_add_attr(a, "rank", rank_text, (int)strlen(rank_text));
  int64_t me = rocl_register(a);
  rocl_kill_attrl(a);
  if (me <= 0) {
    fprintf(stderr, "%s: rank %d: rocl_register failed: %s\n", type, rank, rocl_last_error());
    exit(1);
  }
  return (rocl_gid_t)me;
}

static rocl_gid_t find_rank(const char *type, int rank) {
  char rank_text[16];
  snprintf(rank_text, sizeof rank_text, "%d", rank);
  rocl_attrl_t *q = rocl_new_attrl(0);
  rocl_add_attr(q, "type", type, (int)strlen(type));
  rocl_add_attr(q, "rank", rank_text, (int)strlen(rank_text));
  rocl_gid_t gid = ROCL_NULL_GID;
  int rc = rocl_query_wait(q, 1, 10000);
  if (rc >= 0) rc = rocl_query(&gid, q);
  rocl_kill_attrl(q);
  if (rc == ROCL_OK) return gid;
  fprintf(stderr, "%s: rank %d never registered: %s\n", type, rank, rocl_last_error());
  exit(1);
}

/* n bytes that differ by seed and position (and by 4 KiB page). */
__attribute__((unused)) static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(seed * 29u + i * 13u + (i >> 12));
}

/* Exits naming `what` unless got holds fill_pattern(n, seed). */
__attribute__((unused)) static void expect_pattern(const unsigned char *got, size_t n,
                                                   unsigned seed, const char *what) {
  unsigned char *want = malloc(n);
  CHECK(want != NULL, "malloc");
  fill_pattern(want, n, seed);
  CHECK(memcmp(got, want, n) == 0, what);
  free(want);
}
