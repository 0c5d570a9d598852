// query_wait.hpp - waiting for peers: a query that returns once at least
// `count` resources of the job match a pattern, or the timeout passes.
// Programs whose processes start in any order (every job) call it instead
// of polling a query in a loop with sleeps of their own.
#pragma once

#include <chrono>

#include "directory/directory.hpp"

namespace rocl::impl {

// Counts the resources matching `pattern` (its attributes added with a
// value, as query_start takes them) until there are at least `count`
// (1..); asks again after 1, 2, 4 .. 50 ms while fewer match. Returns how
// many matched when it stopped counting (>= count: it counts no further),
// or ROCL_ETIMEDOUT with a sentence saying how many matched after
// `timeout` (negative: wait forever), ROCL_EINVAL for count < 1, or the
// directory's failure.
int wait_for_matches(Directory &directory, const AttrList &pattern, int count,
                     std::chrono::milliseconds timeout);

}  // namespace rocl::impl
