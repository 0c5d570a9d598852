/* directory_probe: run under roclrun -n N. Each process registers
 * {type=probe, rank=R} in the node directory and waits until a multi-answer
 * query sees all N probes, each tagged with a distinct context. Proves that
 * processes find each other through the node server. Exit 0 on success. */
#include <rocl/rocl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int count_probes(rocl_gid_t *contexts, int max) {
  rocl_attrl_t *pattern = rocl_new_attrl(0);
  rocl_add_attr(pattern, "type", "probe", 5);
  rocl_handler_t *h = rocl_query_start(pattern);
  int n = 0;
  if (h == NULL) return -1;
  for (;;) {
    rocl_attrl_t *answer = rocl_new_attrl(0);
    rocl_add_attr(answer, "type", "probe", 5);
    rocl_add_attr(answer, "context", NULL, 8);
    int64_t gid = rocl_query_next(h, answer);
    if (gid < 0) {
      rocl_kill_attrl(answer);
      break;
    }
    int len = 0;
    void *ctx = rocl_get_attr(answer, "context", &len);
    if (ctx != NULL && len == 8 && n < max) memcpy(&contexts[n], ctx, 8);
    ++n;
    rocl_kill_attrl(answer);
  }
  rocl_query_stop(h);
  rocl_kill_attrl(pattern);
  return n;
}

int main(void) {
  const char *size_text = getenv("ROCL_SIZE");
  const char *rank = getenv("ROCL_RANK");
  int size = size_text ? atoi(size_text) : 1;
  if (rocl_init() <= 0) {
    fprintf(stderr, "rocl_init: %s\n", rocl_last_error());
    return 1;
  }
  rocl_attrl_t *attrs = rocl_new_attrl(0);
  rocl_add_attr(attrs, "type", "probe", 5);
  rocl_add_attr(attrs, "rank", rank ? rank : "0", (int)strlen(rank ? rank : "0"));
  int64_t me = rocl_register(attrs);
  rocl_kill_attrl(attrs);
  if (me <= 0) {
    fprintf(stderr, "rocl_register: %s\n", rocl_last_error());
    return 1;
  }
  rocl_gid_t contexts[1024];
  int seen = 0;
  for (int i = 0; i < 1000 && seen < size; ++i) {
    seen = count_probes(contexts, 1024);
    if (seen < size) usleep(10000);
  }
  int distinct = 1;
  for (int i = 0; i < seen && i < 1024; ++i)
    for (int j = 0; j < i; ++j)
      if (contexts[i] == contexts[j]) distinct = 0;
  printf("rank %s: gid %#llx sees %d probes in %s contexts\n", rank ? rank : "?",
         (unsigned long long)me, seen, distinct ? "distinct" : "SHARED");
  /* Stay registered until everyone has looked. */
  usleep(1000000);
  rocl_exit();
  return seen == size && distinct ? 0 : 2;
}
