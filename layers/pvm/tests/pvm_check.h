/* pvm_check.h - the checks of the PVM conformance programs: a failed CHECK
 * prints where and why, then ends the task with status 1. */
#ifndef ROCL_PVM_TESTS_PVM_CHECK_H
#define ROCL_PVM_TESTS_PVM_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "pvm3.h"

#define CHECK(cond)                                                                      \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "FAILED at %s:%d: %s (pvm_errno %d)\n", __FILE__, __LINE__, #cond, \
              pvm_errno);                                                                \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

/* CHECK that a call returned exactly the code expected. */
#define CHECK_CODE(call, code)                                                                 \
  do {                                                                                         \
    int got_ = (call);                                                                         \
    if (got_ != (code)) {                                                                      \
      fprintf(stderr, "FAILED at %s:%d: %s gave %d, not %s (%d)\n", __FILE__, __LINE__, #call, \
              got_, #code, (code));                                                            \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

#endif
