/* exchange: run under roclrun -n 2 (with ROCL_TRANSPORTS naming a transport
 * between processes). Rank 0 and rank 1 register, find each other through
 * the node directory, then exchange messages of 0 B .. 8 MiB both as
 * zero-copy buffers and as user memory, with checksums and sequence numbers
 * (order per pair), and finally 2000 small messages. Exit 0 on success. */
#include <rocl/rocl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t fnv1a(const unsigned char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(seed * 131u + i * 7u);
}

#include "find_rank.h"

int main(void) {
  int rank = start_rank("exchange");
  CHECK(rocl_init() > 0, "rocl_init");
  const int64_t me = (int64_t)register_rank("exchange", rank);
  rocl_gid_t peer = find_rank("exchange", 1 - rank);

  static const size_t sizes[] = {0, 1, 8, 4096, 65536, 1 << 20, 8 << 20};
  const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
  unsigned char *user = malloc(8 << 20);
  /* Both ranks send every size twice (buffer, user memory), then receive. */
  for (int i = 0; i < nsizes; ++i) {
    size_t n = sizes[i];
    unsigned char *b = rocl_bfget(n);
    CHECK(b != NULL, "rocl_bfget");
    fill(b, n, (unsigned)(2 * i + rank));
    CHECK(rocl_bftoret(b) == ROCL_OK, "rocl_bftoret");
    CHECK(rocl_send((rocl_gid_t)me, peer, 2 * i, b, n) == ROCL_OK, "rocl_send buffer");
    fill(user, n, (unsigned)(2 * i + 1 + rank));
    CHECK(rocl_send((rocl_gid_t)me, peer, 2 * i + 1, user, n) == ROCL_OK, "rocl_send user");
  }
  for (int i = 0; i < 2 * nsizes; ++i) {
    void *p = NULL;
    int tag = -1;
    size_t len = 0;
    rocl_gid_t from = 0;
    CHECK(rocl_recv((rocl_gid_t)me, peer, ROCL_ANY, &p, &from, &tag, &len, 20000) == ROCL_OK,
          "rocl_recv");
    size_t n = sizes[i / 2];
    CHECK(tag == i && len == n && from == peer, "order, tag, length or origin");
    fill(user, n, (unsigned)(i + (1 - rank)));
    CHECK(fnv1a(p, len) == fnv1a(user, n), "checksum");
    rocl_bfret(p);
  }
  /* 2000 small messages, checked for order. */
  for (uint32_t k = 0; k < 2000; ++k) {
    CHECK(rocl_send((rocl_gid_t)me, peer, 1000, &k, sizeof k) == ROCL_OK, "small send");
  }
  for (uint32_t k = 0; k < 2000; ++k) {
    void *p = NULL;
    size_t len = 0;
    CHECK(rocl_recv((rocl_gid_t)me, peer, 1000, &p, NULL, NULL, &len, 20000) == ROCL_OK,
          "small recv");
    uint32_t got;
    memcpy(&got, p, sizeof got);
    CHECK(len == sizeof got && got == k, "small message order");
    rocl_bfret(p);
  }
  printf("rank %d: exchanged %d sizes up to 8 MiB and 2000 ordered messages with %#llx\n", rank,
         nsizes, (unsigned long long)peer);
  /* Stay until the peer has drained what we sent. */
  rocl_send((rocl_gid_t)me, peer, 2000, NULL, 0);
  void *p = NULL;
  CHECK(rocl_recv((rocl_gid_t)me, peer, 2000, &p, NULL, NULL, NULL, 20000) == ROCL_OK, "bye");
  rocl_bfret(p);
  free(user);
  rocl_exit();
  return 0;
}
