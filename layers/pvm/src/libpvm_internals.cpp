// libpvm_internals.cpp - functions of PVM's libpvm that pvm3.h does not
// declare but PVM's example programs call (pvmsleep, pvmgetclock, lpvmerr,
// pvmdisplaymhfinfo, pvmdebmask), so that they link unmodified.
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>

#include "pvm_impl.hpp"

extern "C" {

__attribute__((visibility("default"))) int pvmdebmask = 0;

__attribute__((visibility("default"))) int pvmsleep(int secs) {
  return int(::sleep(unsigned(secs > 0 ? secs : 0)));
}

__attribute__((visibility("default"))) int pvmgetclock(struct timeval *tm) {
  return ::gettimeofday(tm, nullptr);
}

// PVM's own: prints f (a format with one int, n) and PVM's text for n.
__attribute__((visibility("default"))) int lpvmerr(const char *f, int n) {
  std::fprintf(stderr, f, n);
  std::fprintf(stderr, ": %s\n", n <= 0 && -n < pvm_nerr ? pvm_errlist[-n] : "Unknown error");
  return 0;
}

// Message handlers are not supported (pvm_addmhf), so there are none to show.
__attribute__((visibility("default"))) void pvmdisplaymhfinfo(const char *who, const char *what,
                                                              int tid) {
  std::fprintf(stderr, "%s: %s: t%x has no message handlers\n", who, what, unsigned(tid));
}
}
