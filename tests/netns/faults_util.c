/* faults_util.c - what the modes of faults.c share: failing and saying,
 * the clock and the script's marks, memory figures, finding each other by
 * rank, and the check of a failure's code, sentence and time. */
#define _GNU_SOURCE
#include <rocl/rocl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "faults.h"

const char *g_mode = "?";
int g_rank = -1;
long g_slack_ms = 2000;
long g_check_ms = 500;

/* Prints "faults MODE rank R: <sentence>" and ends the process at once:
 * other threads may be inside rocl calls, so no exit handlers run. */
void die(const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  fprintf(stderr, "faults %s rank %d: FAILED: ", g_mode, g_rank);
  vfprintf(stderr, format, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(NULL);
  _exit(1);
}

/* A line for the script and the log: "faults MODE rank R: <sentence>". */
void say(const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  printf("faults %s rank %d: ", g_mode, g_rank);
  vprintf(format, ap);
  putchar('\n');
  va_end(ap);
  fflush(stdout);
}

void check(int rc, const char *what) {
  if (rc != ROCL_OK) die("%s failed: %s (%s)", what, rocl_strerror(rc), rocl_last_error());
}

/* The wall clock in ms: the clock of the script's marks. */
double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void sleep_ms(long ms) {
  usleep((useconds_t)ms * 1000);
}

long env_long(const char *name, long fallback) {
  const char *v = getenv(name);
  return v != NULL && *v != '\0' ? atol(v) : fallback;
}

static const char *gid_text(rocl_gid_t gid, char *buf, size_t cap) {
  snprintf(buf, cap, "%#llx", (unsigned long long)gid);
  return buf;
}

static int names(const char *sentence, rocl_gid_t gid) {
  char hex[32];
  return strstr(sentence, gid_text(gid, hex, sizeof hex)) != NULL;
}

/* $FAULTS_DIR/name. */
static void mark_path(const char *name, char *path, size_t cap) {
  const char *dir = getenv("FAULTS_DIR");
  if (dir == NULL || *dir == '\0') die("FAULTS_DIR (the script's folder) is not set");
  snprintf(path, cap, "%s/%s", dir, name);
}

/* The moment the script wrote into $FAULTS_DIR/name, waiting for it. */
double mark_ms(const char *name) {
  char path[512];
  mark_path(name, path, sizeof path);
  const double give_up = now_ms() + kMarkMs;
  for (;;) {
    FILE *f = fopen(path, "r");
    if (f != NULL) {
      double at = 0;
      const int got = fscanf(f, "%lf", &at);
      fclose(f);
      if (got == 1 && at > 0) return at;
    }
    if (now_ms() > give_up) die("the script's mark %s never came", path);
    sleep_ms(10);
  }
}

int has_mark(const char *name) {
  char path[512];
  mark_path(name, path, sizeof path);
  return access(path, F_OK) == 0;
}

/* Resident memory in KiB (VmRSS of /proc/self/status). */
long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  }
  if (f != NULL) fclose(f);
  if (kib < 0) die("no VmRSS in /proc/self/status");
  return kib;
}

size_t pool_in_use(void) {
  rocl_pool_stats_t s;
  check(rocl_pool_stats(&s), "rocl_pool_stats");
  return s.in_use_bytes;
}

/* The pool back where it was (waits up to 2 s: a block may be on its way
 * back from the transport's thread). */
void pool_back(size_t base, const char *after) {
  const double give_up = now_ms() + 2000;
  size_t now = pool_in_use();
  while (now > base && now_ms() < give_up) {
    sleep_ms(10);
    now = pool_in_use();
  }
  say("pool in use after %s: %zu bytes (before: %zu)", after, now, base);
  if (now > base) die("the pool kept %zu bytes after %s", now - base, after);
}

/* ---- finding each other ---------------------------------------------------- */

static rocl_attrl_t *rank_attrs(int rank) {
  char text[16];
  snprintf(text, sizeof text, "%d", rank);
  rocl_attrl_t *a = rocl_new_attrl(0);
  if (a == NULL) die("rocl_new_attrl: out of memory");
  check(rocl_add_attr(a, "type", "faults", 6), "rocl_add_attr(type)");
  check(rocl_add_attr(a, "rank", text, (int)strlen(text)), "rocl_add_attr(rank)");
  return a;
}

rocl_gid_t register_rank(int rank) {
  rocl_attrl_t *a = rank_attrs(rank);
  const int64_t gid = rocl_register(a);
  if (gid <= 0) die("rocl_register: %s (%s)", rocl_strerror((int)gid), rocl_last_error());
  rocl_kill_attrl(a);
  return (rocl_gid_t)gid;
}

/* rocl_query for rank's resource: ROCL_OK (*gid set), or the code and
 * the sentence in why (taken before rocl_kill_attrl, a rocl call, clears
 * rocl_last_error). */
int look_up(int rank, rocl_gid_t *gid, char *why, size_t cap) {
  rocl_attrl_t *q = rank_attrs(rank);
  const int rc = rocl_query(gid, q);
  snprintf(why, cap, "%s", rc == ROCL_OK ? "" : rocl_last_error());
  rocl_kill_attrl(q);
  return rc;
}

rocl_gid_t find_rank(int rank) {
  rocl_attrl_t *q = rank_attrs(rank);
  const int rc = rocl_query_wait(q, 1, kFindMs);
  if (rc < 0)
    die("rank %d did not register within %d s: %s (%s)", rank, kFindMs / 1000, rocl_strerror(rc),
        rocl_last_error());
  rocl_kill_attrl(q);
  rocl_gid_t gid = ROCL_NULL_GID;
  char why[512];
  const int found = look_up(rank, &gid, why, sizeof why);
  if (found != ROCL_OK)
    die("rocl_query (rank %d's resource): %s (%s)", rank, rocl_strerror(found), why);
  return gid;
}

/* Writes $FAULTS_DIR/name now, for the other ranks. */
void write_mark(const char *name) {
  char path[512], tmp[520];
  mark_path(name, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (f == NULL || fprintf(f, "%.0f\n", now_ms()) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
    die("cannot write %s", path);
}

void expect_failure(const char *what, int rc, const char *sentence, double at, double since,
                    int want, int also, rocl_gid_t gid, const char *word, double bound_ms) {
  const double took = at - since;
  say("%s failed with %s in %.0f ms: \"%s\"", what, rocl_strerror(rc), took, sentence);
  say("detected in %.0f ms (%s; bound %.0f ms)", took, what, bound_ms);
  if (rc != want && (also == 0 || rc != also))
    die("%s failed with %s, not %s%s%s", what, rocl_strerror(rc), rocl_strerror(want),
        also != 0 ? " or " : "", also != 0 ? rocl_strerror(also) : "");
  /* The peer named by its gid or, from the transport, by its address. */
  char hex[32];
  if (gid != 0 && !names(sentence, gid) && (rc != ROCL_EPEER || strstr(sentence, "peer ") == NULL))
    die("%s: the sentence names neither %s nor a peer: \"%s\"", what,
        gid_text(gid, hex, sizeof hex), sentence);
  if (word != NULL && strstr(sentence, word) == NULL)
    die("%s: the sentence does not say \"%s\": \"%s\"", what, word, sentence);
  if (took > bound_ms)
    die("%s failed %.0f ms after the fault, bound %.0f ms", what, took, bound_ms);
}
