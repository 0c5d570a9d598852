/* cor_domains.c - CoR domains between processes, under roclrun -n N
 * (2..8): rank 0 creates the domain "cor-job" and a second one, "cor-other";
 * every rank finds them, joins "cor-job" with its resource under the local
 * name "rank<R>", and waits until all N have joined. Then, by index only:
 * each member sends the next index a message and receives one from the
 * previous (the sender's index reported), the lookups by name and index
 * agree, index 0 casts to the others, each of which gets the cast once,
 * and nothing of it shows in "cor-other" or to rocl_recv.
 *
 *   cor_domains            as above
 *   cor_domains NETWORK    every rank sets its soft-port in "cor-job" to
 *                          NETWORK ("tcp.2": run with ROCL_TRANSPORTS=tcp
 *                          and ROCL_TCP_BIND=127.0.0.1,127.0.0.2) after an
 *                          unknown one was refused naming it; at the end
 *                          each rank checks in /proc/net/tcp that its
 *                          peers' end-points of NETWORK have connections
 *                          and those of their other networks none.
 *   cor_domains -NETWORK   no soft-port, and the same check the other way:
 *                          NETWORK's end-points have no connection (so that
 *                          the check above is seen to tell the two apart).
 *
 * Exit 0 on success, 1 with a sentence naming the rank otherwise. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "find_rank.h"

enum { kTagRing = 1, kTagCast = 2, kTagDone = 3, kTagBye = 4, kWaitMs = 20000 };

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static rocl_gid_t find_domain(const char *name) {
  rocl_gid_t d = ROCL_NULL_GID;
  CHECK(rocl_domain_find(name, ROCL_NULL_GID, kWaitMs, &d) == ROCL_OK, "rocl_domain_find");
  return d;
}

/* Waits until domain has n members: growing (joins), or shrinking (leaves). */
static void wait_for_members(rocl_gid_t domain, int n, int growing) {
  int size = 0;
  for (int waited = 0; waited < kWaitMs; waited += 5) {
    CHECK(rocl_domain_size(domain, &size) == ROCL_OK, "rocl_domain_size");
    if (size == n) return;
    CHECK(growing ? size < n : size > n, growing ? "more members than ranks" : "a member too few");
    sleep_ms(5);
  }
  CHECK(0, growing ? "waiting for every rank to join" : "waiting for the others to leave");
}

/* The text of the next message on me in domain from index `from`, its
 * sender's index in *sender. */
static void expect_message(rocl_gid_t domain, rocl_gid_t me, int from, int tag, const char *want,
                           int *sender) {
  void *p = NULL;
  size_t len = 0;
  int atag = -1;
  CHECK(rocl_drecv(domain, me, from, tag, &p, sender, &atag, &len, kWaitMs) == ROCL_OK,
        "rocl_drecv");
  CHECK(len == strlen(want) && memcmp(p, want, len) == 0, "the message's bytes");
  CHECK(atag == tag, "the message's tag");
  rocl_bfret(p);
}

/* No (further) message with tag on me in domain. */
static void expect_nothing(rocl_gid_t domain, rocl_gid_t me, int tag) {
  void *p = NULL;
  CHECK(rocl_drecv(domain, me, ROCL_ANY_INDEX, tag, &p, NULL, NULL, NULL, 0) == ROCL_ETIMEDOUT,
        "a message that should not be there");
}

/* ---- which networks carried the messages: /proc/net/tcp ---------------- */

/* "IP:PORT" of rank peer's end-point `network` ("" if it has none). */
static void peer_endpoint(rocl_gid_t member, const char *network, char *out, size_t cap) {
  rocl_attrl_t *q = rocl_new_attrl(0);
  rocl_add_attr(q, "context", NULL, 8);
  rocl_gid_t g = member;
  CHECK(rocl_query(&g, q) == ROCL_OK, "looking up a member's context");
  int len = 0;
  rocl_gid_t context = ROCL_NULL_GID;
  memcpy(&context, rocl_get_attr(q, "context", &len), sizeof context);
  rocl_kill_attrl(q);
  char name[64];
  snprintf(name, sizeof name, "addr.%s", network);
  q = rocl_new_attrl(0);
  rocl_add_attr(q, name, NULL, 256);
  CHECK(rocl_query(&context, q) == ROCL_OK, "looking up a context's addresses");
  const char *addr = rocl_get_attr(q, name, &len);
  out[0] = '\0';
  if (addr != NULL && len > 4 && strncmp(addr, "tcp:", 4) == 0) {
    int n = 0;
    while (4 + n < len && addr[4 + n] != '@' && (size_t)n + 1 < cap) {
      out[n] = addr[4 + n];
      ++n;
    }
    out[n] = '\0';
  }
  rocl_kill_attrl(q);
}

/* "a.b.c.d:port" of /proc/net/tcp's "0100007F:1F90" (IPv4, host order). */
static void proc_endpoint(const char *hex, char *out, size_t cap) {
  unsigned ip = 0, port = 0;
  sscanf(hex, "%8X:%4X", &ip, &port);
  snprintf(out, cap, "%u.%u.%u.%u:%u", ip & 0xff, (ip >> 8) & 0xff, (ip >> 16) & 0xff, ip >> 24,
           port);
}

/* How many established connections have `endpoint` at either end. */
static int connections_at(const char *endpoint) {
  FILE *f = fopen("/proc/net/tcp", "r");
  CHECK(f != NULL, "opening /proc/net/tcp");
  char line[512], local[64], remote[64], a[64], b[64];
  unsigned state = 0;
  int count = 0;
  CHECK(fgets(line, sizeof line, f) != NULL, "reading /proc/net/tcp");
  while (fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, " %*d: %63s %63s %X", local, remote, &state) != 3 || state != 1) continue;
    proc_endpoint(local, a, sizeof a);
    proc_endpoint(remote, b, sizeof b);
    if (strcmp(a, endpoint) == 0 || strcmp(b, endpoint) == 0) ++count;
  }
  fclose(f);
  return count;
}

/* Every other member's end-point of `network` has connections (used: 1)
 * or none (used: 0); with used, their end-points of `other` none. */
static void check_networks(rocl_gid_t domain, int n, int me_index, const char *network,
                           const char *other, int used) {
  int on_network = 0, on_other = 0;
  for (int i = 0; i < n; ++i) {
    if (i == me_index) continue;
    rocl_gid_t peer = ROCL_NULL_GID;
    CHECK(rocl_domain_member(domain, i, &peer) == ROCL_OK, "rocl_domain_member");
    char ep[96], ep_other[96];
    peer_endpoint(peer, network, ep, sizeof ep);
    peer_endpoint(peer, other, ep_other, sizeof ep_other);
    CHECK(ep[0] != '\0' && ep_other[0] != '\0', "a peer without both tcp end-points");
    on_network += connections_at(ep);
    on_other += connections_at(ep_other);
  }
  printf("cor_domains rank %d: connections to the peers' %s: %d, to their %s: %d\n", check_rank,
         network, on_network, other, on_other);
  if (used) {
    CHECK(on_network > 0, "the soft-port's network carried nothing");
    CHECK(on_other == 0, "another network than the soft-port's carried messages");
  } else {
    CHECK(on_network == 0, "without a soft-port, the second network carried messages");
  }
}

/* ---- the test ------------------------------------------------------------ */

static void exchange(rocl_gid_t job, rocl_gid_t other, rocl_gid_t me, int index, int n) {
  char text[64], want[64];
  int sender = -100;
  snprintf(text, sizeof text, "ring from %d", index);
  CHECK(rocl_dsend(job, me, (index + 1) % n, kTagRing, text, strlen(text)) == ROCL_OK,
        "rocl_dsend round the ring");
  const int previous = (index + n - 1) % n;
  snprintf(want, sizeof want, "ring from %d", previous);
  expect_message(job, me, ROCL_ANY_INDEX, kTagRing, want, &sender);
  CHECK(sender == previous, "the ring message's sender index");
  /* Local names and indices agree, seen from every process. */
  for (int i = 0; i < n; ++i) {
    rocl_gid_t by_index = ROCL_NULL_GID, by_name = ROCL_NULL_GID;
    int back = -1;
    CHECK(rocl_domain_member(job, i, &by_index) == ROCL_OK, "rocl_domain_member");
    CHECK(rocl_domain_index(job, by_index, &back) == ROCL_OK && back == i, "rocl_domain_index");
    char name[32];
    snprintf(name, sizeof name, "rank%d", i);
    if (rocl_domain_lookup(job, name, &by_name) == ROCL_OK) {
      int at = -1;
      CHECK(rocl_domain_index(job, by_name, &at) == ROCL_OK, "index of a named member");
    } else {
      CHECK(0, "rocl_domain_lookup of a rank's name");
    }
  }
  if (index == 0) {
    const int reached = rocl_dcast(job, me, kTagCast, "cast", 4);
    CHECK(reached == n - 1, "rocl_dcast's count of members");
  } else {
    expect_message(job, me, 0, kTagCast, "cast", &sender);
    CHECK(sender == 0, "the cast's sender index");
  }
  /* Each message came once, and only in its domain (the barrier's may be
   * on their way already: their tags are others). */
  expect_nothing(job, me, kTagRing);
  expect_nothing(job, me, kTagCast);
  expect_nothing(other, me, ROCL_ANY_TAG);
  void *p = NULL;
  CHECK(rocl_recv(me, ROCL_ANY_GID, ROCL_ANY_TAG, &p, NULL, NULL, NULL, 0) == ROCL_ETIMEDOUT,
        "rocl_recv saw a domain's message");
}

/* Nobody exits (closing its connections) before everyone checked. */
static void barrier(rocl_gid_t job, rocl_gid_t me, int index, int n) {
  int sender = -1;
  if (index != 0) {
    CHECK(rocl_dsend(job, me, 0, kTagDone, "done", 4) == ROCL_OK, "rocl_dsend done");
    expect_message(job, me, 0, kTagBye, "bye", &sender);
    return;
  }
  for (int i = 1; i < n; ++i) expect_message(job, me, ROCL_ANY_INDEX, kTagDone, "done", &sender);
  CHECK(rocl_dcast(job, me, kTagBye, "bye", 3) == n - 1, "rocl_dcast bye");
}

int main(int argc, char **argv) {
  const int rank = start_rank("cor_domains");
  const char *size_text = getenv("ROCL_SIZE");
  const int n = size_text != NULL ? atoi(size_text) : 0;
  if (n < 2 || n > 8 || argc > 2) {
    fprintf(stderr, "usage: roclrun -n 2..8 cor_domains [NETWORK | -NETWORK]\n");
    return 2;
  }
  const char *port = argc == 2 && argv[1][0] != '-' ? argv[1] : NULL;
  const char *unused = argc == 2 && argv[1][0] == '-' ? argv[1] + 1 : NULL;
  CHECK(rocl_init() > 0, "rocl_init");
  rocl_gid_t job = ROCL_NULL_GID, other = ROCL_NULL_GID;
  if (rank == 0) {
    CHECK(rocl_domain_create(ROCL_NULL_GID, "cor-job", &job) == ROCL_OK, "creating cor-job");
    CHECK(rocl_domain_create(ROCL_NULL_GID, "cor-other", &other) == ROCL_OK, "creating cor-other");
  } else {
    job = find_domain("cor-job");
    other = find_domain("cor-other");
  }
  const rocl_gid_t me = register_rank("cor-member", rank);
  char name[32];
  snprintf(name, sizeof name, "rank%d", rank);
  int index = -1, other_index = -1;
  CHECK(rocl_domain_join(job, me, name, &index) == ROCL_OK, "rocl_domain_join");
  CHECK(rocl_domain_join(other, me, name, &other_index) == ROCL_OK, "joining cor-other");
  wait_for_members(job, n, 1);
  wait_for_members(other, n, 1);
  if (port != NULL) {
    CHECK(rocl_domain_port(job, "no-such-network") == ROCL_EINVAL, "refusing a network");
    CHECK(strstr(rocl_last_error(), "no-such-network") != NULL, "naming the refused network");
    CHECK(rocl_domain_port(job, port) == ROCL_OK, "rocl_domain_port");
  }
  exchange(job, other, me, index, n);
  const char *network = port != NULL ? port : unused;
  if (network != NULL) {
    const char *first = strcmp(network, "tcp") == 0 ? "tcp.2" : "tcp";
    check_networks(job, n, index, network, first, port != NULL);
  }
  barrier(job, me, index, n);
  printf("cor_domains rank %d: index %d of %d: ok\n", rank, index, n);
  /* The creator's exit takes the domains with it (a call on them fails
   * then, even one whose message had come): it leaves last. */
  if (rank == 0) {
    wait_for_members(job, 1, 0);
    wait_for_members(other, 1, 0);
  }
  CHECK(rocl_domain_leave(job, me) == ROCL_OK, "rocl_domain_leave");
  CHECK(rocl_domain_leave(other, me) == ROCL_OK, "leaving cor-other");
  CHECK(rocl_exit() == ROCL_OK, "rocl_exit");
  return 0;
}
