/* paper_ints: a program written to the RoCL paper's types (int gids, int
 * lengths; rocl/rocl_paper.h), run under roclrun -n 2. With
 * ROCL_GID_BITS=31 (gids that fit an int) the two ranks find each other
 * with rocl_query and a multi-answer query, exchange a ping and a pong and
 * check origins, tags and lengths. With 63-bit gids (PAPER_EXPECT_REFUSAL
 * set) rocl_register must refuse with ROCL_EINVAL and a sentence naming
 * ROCL_GID_BITS=31, not hand out a truncated gid. Exit 0 on success. */
#include <rocl/rocl_paper.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, what)                                                                      \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "paper_ints rank %d: %s failed: %s\n", rank, (what), rocl_last_error()); \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

int main(void) {
  const char *r = getenv("ROCL_RANK");
  const int rank = r ? atoi(r) : 0;
  CHECK(rocl_init() > 0 || getenv("PAPER_EXPECT_REFUSAL") != NULL, "rocl_init");
  char rank_text[8];
  snprintf(rank_text, sizeof rank_text, "%d", rank);
  rocl_attrl_t *attrs = rocl_new_attrl(0);
  rocl_add_attr(attrs, "type", "paper", 5);
  rocl_add_attr(attrs, "rank", rank_text, (int)strlen(rank_text));
  int me = rocl_register(attrs); /* the paper's int */
  if (getenv("PAPER_EXPECT_REFUSAL") != NULL) {
    CHECK(me == ROCL_EINVAL, "the refusal of a gid too wide for an int");
    CHECK(strstr(rocl_last_error(), "ROCL_GID_BITS=31") != NULL, "the sentence naming the fix");
    printf("rank %d: refused as documented: %s\n", rank, rocl_last_error());
    return 0;
  }
  rocl_kill_attrl(attrs);
  CHECK(me > 0, "rocl_register");

  /* The other rank, by a single-answer query. */
  rocl_attrl_t *q = rocl_new_attrl(0);
  snprintf(rank_text, sizeof rank_text, "%d", 1 - rank);
  rocl_add_attr(q, "type", "paper", 5);
  rocl_add_attr(q, "rank", rank_text, (int)strlen(rank_text));
  CHECK(rocl_query_wait(q, 1, 10000) >= 1, "rocl_query_wait");
  int peer = 0;
  CHECK(rocl_query(&peer, q) == ROCL_OK, "rocl_query");
  rocl_kill_attrl(q);

  /* Both ranks, by a multi-answer query. */
  rocl_attrl_t *all = rocl_new_attrl(0);
  rocl_add_attr(all, "type", "paper", 5);
  rocl_handler_t *h = rocl_query_start(all);
  CHECK(h != NULL, "rocl_query_start");
  int seen = 0, g;
  while ((g = rocl_query_next(h, all)) > 0) seen += g == me || g == peer;
  CHECK(g == ROCL_EEND && seen == 2, "the multi-answer query");
  rocl_query_stop(h);
  rocl_kill_attrl(all);

  char text[] = "ping";
  void *msg = NULL;
  int from = 0, tag = 0, len = 0;
  if (rank == 0) {
    CHECK(rocl_send(me, peer, 7, text, (int)sizeof text) == ROCL_OK, "rocl_send");
    CHECK(rocl_recv(me, ROCL_ANY, ROCL_ANY, &msg, &from, &tag, &len, 10000) == ROCL_OK,
          "rocl_recv");
    CHECK(from == peer && tag == 8 && len == 5 && memcmp(msg, "pong", 5) == 0, "the pong");
    printf("rank 0: gids %d and %d (ints), ping and pong: ok\n", me, peer);
  } else {
    CHECK(rocl_recv(me, peer, 7, &msg, &from, &tag, &len, 10000) == ROCL_OK, "rocl_recv");
    CHECK(from == peer && tag == 7 && len == (int)sizeof text, "the ping");
    rocl_bfret(msg);
    msg = NULL;
    char reply[] = "pong";
    CHECK(rocl_send(me, peer, 8, reply, (int)sizeof reply) == ROCL_OK, "rocl_send");
  }
  if (msg != NULL) rocl_bfret(msg);
  rocl_exit();
  return 0;
}
