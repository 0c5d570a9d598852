// test_header.hpp - the protocol header and envelope the generic
// Communicator's tests use: like MPI's, source and tag take the wildcard
// -1, the context never does.
#pragma once

#include <cstdint>
#include <tuple>

#include "rocl/generic/envelope.hpp"

namespace rocl::generic::test_support {

struct TestHeader {
  static constexpr std::int32_t kAny = -1;
  std::int32_t source = 0;
  std::int32_t tag = 0;
  std::uint32_t context = 0;
  std::uint32_t spare = 0;

  bool is_pattern() const { return source == kAny || tag == kAny; }
  friend bool operator==(const TestHeader &a, const TestHeader &b) {
    return a.context == b.context &&
           (a.source == b.source || a.source == kAny || b.source == kAny) &&
           (a.tag == b.tag || a.tag == kAny || b.tag == kAny);
  }
  friend bool operator<(const TestHeader &a, const TestHeader &b) {
    return std::tie(a.context, a.source, a.tag) < std::tie(b.context, b.source, b.tag);
  }
};
static_assert(sizeof(TestHeader) == 16);
static_assert(Header<TestHeader>);

inline constexpr std::int32_t kAny = TestHeader::kAny;

inline TestHeader hdr(std::int32_t source, std::int32_t tag, std::uint32_t context = 0) {
  return TestHeader{source, tag, context, 0};
}
// Equal field by field (== is the match relation, wildcards included).
inline bool same(const TestHeader &a, const TestHeader &b) {
  return a.source == b.source && a.tag == b.tag && a.context == b.context;
}

// The core derives its message from Envelope; so do the tests.
struct TestEnv : Envelope<TestHeader> {
  int id = 0;
};

}  // namespace rocl::generic::test_support
