// fd_test_util.hpp - descriptor helpers the tests that play a raw peer
// (a fake directory server or client, a hand-made tcp connector) share.
#pragma once

#include <unistd.h>

#include <cstddef>

namespace rocl::testing {

// Reads exactly n bytes from a blocking descriptor (a receive timeout set
// on it bounds the wait). False on end of file, an error or a timeout.
inline bool read_exactly(int fd, void *p, std::size_t n) {
  auto *b = static_cast<char *>(p);
  while (n > 0) {
    const ssize_t r = ::read(fd, b, n);
    if (r <= 0) return false;
    b += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

}  // namespace rocl::testing
