// unknown_variables_test.cpp - rocl_init reports each ROCL_* variable it
// does not know on stderr, once per process: a typo with the closest name,
// a far name with where the known ones are listed, a known one not at all.
// One test in a binary of its own: the report is made once per process.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "rocl/rocl.h"

namespace {

int count(const std::string &text, std::string_view what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(UnknownVariables, ReportedOnceAtTheFirstInitWithTheClosestName) {
  ::setenv("ROCL_TRANSPORT", "tcp", 1);       // a typo for ROCL_TRANSPORTS
  ::setenv("ROCL_COLOUR_OF_SKY", "blue", 1);  // close to nothing
  ::setenv("ROCL_SPIN_US", "50", 1);          // an option
  ::setenv("ROCL_JOB_ID", "unit", 1);         // roclrun's
  ::setenv("ROCL_PVM_CONTEXT", "7", 1);       // the PVM layer's
  testing::internal::CaptureStderr();
  for (int cycle = 0; cycle < 3; ++cycle) {
    ASSERT_GT(rocl_init(), 0) << rocl_last_error();
    ASSERT_EQ(rocl_exit(), ROCL_OK);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err,
                  "rocl: warning: unknown variable ROCL_TRANSPORT=tcp ignored (did you mean "
                  "ROCL_TRANSPORTS?)\n"),
            1)
      << err;
  EXPECT_EQ(
      count(err, "rocl: warning: unknown variable ROCL_COLOUR_OF_SKY=blue ignored (rocl-info"), 1)
      << err;
  EXPECT_EQ(count(err, "unknown variable"), 2) << "only the two unknown ones, once: " << err;
}

}  // namespace
