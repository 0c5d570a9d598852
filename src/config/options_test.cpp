// options_test.cpp - option rows and values: defaults, the environment over
// them, a malformed value kept at the default with a warning, set(), sizes
// with suffixes, lists, and a missing row reported as a programming error.
#include "config/options.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

namespace rocl::impl {
namespace {

const OptionRow kRows[] = {
    {"ROCL_TEST_OPT_SIZE", "8K", "a size", OptionType::kSize},
    {"ROCL_TEST_OPT_UINT", "100", "a count", OptionType::kUint},
    {"ROCL_TEST_OPT_TEXT", "a,b", "a list", OptionType::kString},
};

struct Env {
  Env(const char *name, const char *value) : name_(name) { ::setenv(name, value, 1); }
  ~Env() { ::unsetenv(name_); }
  const char *name_;
};

TEST(OptionValues, DefaultsOfTheRows) {
  const OptionValues v(kRows);
  EXPECT_EQ(v.size("ROCL_TEST_OPT_SIZE"), 8192u);
  EXPECT_EQ(v.uint("ROCL_TEST_OPT_UINT"), 100u);
  EXPECT_EQ(v.text("ROCL_TEST_OPT_TEXT"), "a,b");
}

TEST(OptionValues, TheEnvironmentOverridesAndAMalformedValueKeepsTheDefault) {
  const Env size("ROCL_TEST_OPT_SIZE", "2M");
  const Env uint("ROCL_TEST_OPT_UINT", "12x");
  const Env text("ROCL_TEST_OPT_TEXT", "");
  OptionValues v(kRows);
  testing::internal::CaptureStderr();
  v.read_environment();
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_EQ(v.size("ROCL_TEST_OPT_SIZE"), std::size_t{2} << 20);
  EXPECT_EQ(v.uint("ROCL_TEST_OPT_UINT"), 100u);
  EXPECT_NE(warning.find("ROCL_TEST_OPT_UINT='12x'"), std::string::npos) << warning;
  EXPECT_EQ(v.text("ROCL_TEST_OPT_TEXT"), "a,b") << "set but empty means the default";
}

TEST(OptionValues, SetChecksTheValue) {
  OptionValues v(kRows);
  EXPECT_TRUE(v.set("ROCL_TEST_OPT_SIZE", "3k"));
  EXPECT_EQ(v.size("ROCL_TEST_OPT_SIZE"), 3072u);
  EXPECT_FALSE(v.set("ROCL_TEST_OPT_SIZE", "-1"));
  EXPECT_FALSE(v.set("ROCL_TEST_OPT_UINT", "4294967296"));
  EXPECT_FALSE(v.set("ROCL_NO_SUCH_OPTION", "1"));
  EXPECT_EQ(v.size("ROCL_TEST_OPT_SIZE"), 3072u);
}

TEST(OptionValues, AMissingRowOrTypeIsAProgrammingError) {
  const OptionValues v(kRows);
  EXPECT_THROW(v.size("ROCL_NO_SUCH_OPTION"), std::logic_error);
  EXPECT_THROW(v.uint("ROCL_TEST_OPT_SIZE"), std::logic_error);
  OptionValues twice(kRows);
  EXPECT_THROW(twice.add(kRows), std::logic_error);
}

TEST(OptionValues, PrintShowsEveryOptionWithItsDoc) {
  const Env size("ROCL_TEST_OPT_SIZE", "1K");
  OptionValues v(kRows);
  v.read_environment();
  char buf[1024] = {};
  std::FILE *f = fmemopen(buf, sizeof buf - 1, "w");
  v.print(f);
  std::fclose(f);
  const std::string out = buf;
  EXPECT_NE(out.find("ROCL_TEST_OPT_SIZE=1K  (from environment)\n    a size"), std::string::npos);
  EXPECT_NE(out.find("ROCL_TEST_OPT_UINT=100  (default)\n    a count"), std::string::npos);
  EXPECT_NE(out.find("ROCL_TEST_OPT_TEXT=a,b"), std::string::npos);
}

TEST(ParseSize, SuffixesAndOverflow) {
  std::size_t n = 0;
  EXPECT_TRUE(parse_size("64K", &n));
  EXPECT_EQ(n, 65536u);
  EXPECT_TRUE(parse_size("4G", &n));
  EXPECT_EQ(n, std::size_t{4} << 30);
  EXPECT_FALSE(parse_size("4T", &n));
  EXPECT_FALSE(parse_size("", &n));
  EXPECT_FALSE(parse_size("99999999999999999999G", &n));
}

TEST(SplitList, SkipsEmptyNames) {
  EXPECT_EQ(split_list("shm,,tcp,"), (std::vector<std::string>{"shm", "tcp"}));
  EXPECT_TRUE(split_list("").empty());
}

}  // namespace
}  // namespace rocl::impl
