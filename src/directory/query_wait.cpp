// query_wait.cpp - waiting until enough resources match (query_wait.hpp).
#include "directory/query_wait.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <thread>

#include "status/status.hpp"

namespace rocl::impl {
namespace {

// How many resources match, counting no further than `count`; or a
// negative code (the cursor's failure).
int count_matches(Directory &directory, const AttrList &pattern, int count) {
  std::unique_ptr<QueryCursor> cursor = directory.query_start(pattern);
  // A cursor fails to start only when the server cannot be asked.
  if (!cursor) return fail(ROCL_EPEER, "%s", std::string(last_error()).c_str());
  AttrList nothing_asked(1);
  int n = 0;
  while (n < count) {
    const std::int64_t g = cursor->next(nothing_asked);
    if (g == ROCL_EEND) break;
    if (g < 0) return static_cast<int>(g);
    ++n;
  }
  return n;
}

}  // namespace

int wait_for_matches(Directory &directory, const AttrList &pattern, int count,
                     std::chrono::milliseconds timeout) {
  if (count < 1) return fail(ROCL_EINVAL, "rocl_query_wait: count %d is not 1 or more", count);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    const int n = count_matches(directory, pattern, count);
    if (n < 0 || n >= count) return n;
    const auto waited = Clock::now() - start;
    if (timeout.count() >= 0 && waited >= timeout) {
      return fail(ROCL_ETIMEDOUT,
                  "rocl_query_wait: %d of the %d resources waited for match after %lld ms", n,
                  count, static_cast<long long>(timeout.count()));
    }
    auto nap = pause;
    if (timeout.count() >= 0) {
      nap = std::min(nap, std::chrono::duration_cast<std::chrono::milliseconds>(timeout - waited) +
                              std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(nap);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace rocl::impl
