// known_variables_test.cpp - the unknown-variable check on an environment
// of its own: a typo gets the closest name, a far name none, known names
// and other variables no warning; and the table holds each name once.
#include "config/known_variables.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace rocl::impl {
namespace {

const std::string_view kKnown[] = {"ROCL_TRANSPORTS", "ROCL_TCP_BIND", "ROCL_TCP_RNDV_THRESHOLD",
                                   "ROCL_RANK",       "ROCL_SIZE",     "ROCL_SPIN_US",
                                   "ROCL_WAIT"};

TEST(ClosestName, ATypoGetsTheKnownNameAtMostTwoEditsAway) {
  EXPECT_EQ(closest_name("ROCL_TRANSPORT", kKnown), "ROCL_TRANSPORTS");   // one dropped
  EXPECT_EQ(closest_name("ROCL_TRASNPORTS", kKnown), "ROCL_TRANSPORTS");  // two swapped
  EXPECT_EQ(closest_name("ROCL_TCP_BIDN", kKnown), "ROCL_TCP_BIND");
  EXPECT_EQ(closest_name("ROCL_SPIM_MS", kKnown), "ROCL_SPIN_US");  // two changed
  EXPECT_EQ(closest_name("rocl_wait", kKnown), "ROCL_WAIT");        // case
}

TEST(ClosestName, ANameCutShortOrLengthenedAtAWordGetsIt) {
  EXPECT_EQ(closest_name("ROCL_TCP_RNDV", kKnown), "ROCL_TCP_RNDV_THRESHOLD");
  EXPECT_EQ(closest_name("ROCL_TRANSPORTS_LIST", kKnown), "ROCL_TRANSPORTS");
}

TEST(ClosestName, AFarNameGetsNone) {
  EXPECT_EQ(closest_name("ROCL_COLOUR", kKnown), "");
  EXPECT_EQ(closest_name("ROCL_NUMBER_OF_THREADS", kKnown), "");
  EXPECT_EQ(closest_name("ROCL_A", kKnown), "") << "too short a stem to be a prefix";
}

TEST(UnknownVariables, OnlyROCLNamesThatAreNotKnown) {
  const char *const env[] = {
      "PATH=/bin",       "ROCL_RANK=0",         "ROCL_TRANSPORT=tcp", "ROCLX=1",
      "ROCL_COLOUR=red", "ROCL_TRANSPORTS=shm", "ROCL_NO_VALUE",      nullptr};
  const std::vector<std::string> unknown = unknown_variables(env, kKnown);
  EXPECT_EQ(unknown,
            (std::vector<std::string>{"ROCL_TRANSPORT=tcp", "ROCL_COLOUR=red", "ROCL_NO_VALUE"}));
  const char *const only_known[] = {"ROCL_RANK=0", "ROCL_SIZE=2", "HOME=/", nullptr};
  EXPECT_TRUE(unknown_variables(only_known, kKnown).empty());
  EXPECT_TRUE(unknown_variables(nullptr, kKnown).empty());
}

TEST(UnknownVariableWarning, NamesTheVariableItsValueAndTheSuggestion) {
  EXPECT_EQ(unknown_variable_warning("ROCL_TRANSPORT=tcp", kKnown),
            "rocl: warning: unknown variable ROCL_TRANSPORT=tcp ignored "
            "(did you mean ROCL_TRANSPORTS?)");
  const std::string far = unknown_variable_warning("ROCL_COLOUR=red", kKnown);
  EXPECT_EQ(far.find("did you mean"), std::string::npos) << far;
  EXPECT_NE(far.find("rocl-info"), std::string::npos) << far;
  EXPECT_NE(far.find("docs/options.md"), std::string::npos) << far;
}

TEST(UnknownVariableWarning, ALongValueIsCut) {
  const std::string entry = "ROCL_COLOUR=" + std::string(500, 'x');
  const std::string line = unknown_variable_warning(entry, kKnown);
  EXPECT_LT(line.size(), 250u) << line;
  EXPECT_NE(line.find(std::string(64, 'x') + "... ignored"), std::string::npos) << line;
}

TEST(NonOptionVariables, EachNameOnceAndEachDocumented) {
  std::set<std::string_view> seen;
  for (const VariableRow &row : non_option_variables()) {
    EXPECT_TRUE(seen.insert(row.name).second) << row.name << " is listed twice";
    EXPECT_EQ(std::string_view(row.name).substr(0, 5), "ROCL_") << row.name;
    EXPECT_NE(*row.user, '\0') << row.name;
    EXPECT_NE(*row.doc, '\0') << row.name;
  }
}

}  // namespace
}  // namespace rocl::impl
