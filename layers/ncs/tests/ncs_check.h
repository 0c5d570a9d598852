/* Shared helpers of NCS's test programs (C11, ncs.h only).
 *
 *   CHECK(cond, fmt, ...)  on failure prints "process P: FAILED at
 *                          file:line: <what>" to stderr and exits 1.
 *   CHECK_RC(call, code)   CHECK(call == code), printing both codes' names.
 *   CHECK_OK(call)         CHECK_RC(call, NCS_OK).
 *   test_done(name)        process 0 prints "<name>: OK"; NCS_finalize.
 */
#ifndef NCS_CHECK_H
#define NCS_CHECK_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <ncs.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                                     \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "process %d: FAILED at %s:%d: ", NCS_get_my_id(), __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                                          \
      fprintf(stderr, "\n");                                                                 \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

#define CHECK_RC(call, code)                                                         \
  do {                                                                               \
    const int check_rc_ = (call);                                                    \
    CHECK(check_rc_ == (code), "%s returned %d (%s), expected %s", #call, check_rc_, \
          NCS_strerror(check_rc_), #code);                                           \
  } while (0)

#define CHECK_OK(call) CHECK_RC(call, NCS_OK)

static inline void test_done(const char *name) {
  if (NCS_get_my_id() == 0) printf("%s: OK\n", name);
  fflush(stdout);
  CHECK_OK(NCS_finalize());
}

#endif
