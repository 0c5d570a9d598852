// spawn_request_test.cpp - the body of a spawn request: round trips, the
// size limit, and refusal of every broken rule with a sentence.
#include "directory/spawn_request.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "status/status.hpp"

namespace rocl::impl {
namespace {

SpawnRequest sample() {
  SpawnRequest r;
  r.argv = {"/usr/bin/worker", "", "two words"};
  r.env = {"ROCL_WAIT=block", "ROCL_SPIN_US=5"};
  r.parent = 0x0001000000000042ull;
  return r;
}

TEST(SpawnRequest, RoundTrips) {
  AttrList list(1);
  ASSERT_EQ(encode_spawn_request(sample(), &list), ROCL_OK) << last_error();
  AttrList wire(1);
  ASSERT_EQ(AttrList::decode(list.bytes(), wire), ROCL_OK);
  SpawnRequest back;
  std::string what;
  ASSERT_EQ(decode_spawn_request(wire, &back, &what), ROCL_OK) << what;
  EXPECT_EQ(back.argv, sample().argv);
  EXPECT_EQ(back.env, sample().env);
  EXPECT_EQ(back.parent, sample().parent);
}

TEST(SpawnRequest, EncodeRefusesWhatCannotRun) {
  AttrList list(1);
  SpawnRequest r = sample();
  r.argv.clear();
  EXPECT_EQ(encode_spawn_request(r, &list), ROCL_EINVAL);
  EXPECT_NE(std::string(last_error()).find("no program"), std::string::npos);
  r = sample();
  r.env = {"PATH=/bin"};
  EXPECT_EQ(encode_spawn_request(r, &list), ROCL_EINVAL);
  EXPECT_NE(std::string(last_error()).find("'PATH' is not a ROCL_ option"), std::string::npos);
  r = sample();
  r.argv.push_back(std::string(40000, 'x'));
  EXPECT_EQ(encode_spawn_request(r, &list), ROCL_ENOSPC);
  EXPECT_NE(std::string(last_error()).find("more than a spawn request holds"), std::string::npos);
}

// A list built by hand that breaks one rule is refused with a sentence.
TEST(SpawnRequest, DecodeRefusesBrokenRequestsByName) {
  struct Case {
    const char *name;
    std::string argv, env;
    bool parent;
    const char *extra;
    const char *word;
  };
  const std::string nul(1, '\0');
  const Case cases[] = {
      {"argv without its NUL", "prog", "", true, nullptr, "argv does not end"},
      {"env without its NUL", "prog" + nul, "ROCL_A=1", true, nullptr, "env does not end"},
      {"an empty program", nul, "", true, nullptr, "empty program"},
      {"no argv", "", "", true, nullptr, "0 arguments"},
      {"a foreign variable", "prog" + nul, "HOME=/" + nul, true, nullptr, "'HOME'"},
      {"no parent", "prog" + nul, "", false, nullptr, "without its argv, env and parent"},
      {"an unknown attribute", "prog" + nul, "", true, "cwd", "unexpected attribute 'cwd'"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    AttrList list(4096);
    ASSERT_EQ(list.add("argv", c.argv), ROCL_OK);
    ASSERT_EQ(list.add("env", c.env), ROCL_OK);
    const std::uint64_t parent = 7;
    if (c.parent) ASSERT_EQ(list.add("parent", &parent, sizeof parent), ROCL_OK);
    if (c.extra != nullptr) ASSERT_EQ(list.add(c.extra, std::string_view("/")), ROCL_OK);
    SpawnRequest out;
    out.parent = 99;
    std::string what;
    EXPECT_EQ(decode_spawn_request(list, &out, &what), ROCL_EINVAL);
    EXPECT_NE(what.find(c.word), std::string::npos) << what;
    EXPECT_EQ(out.parent, 99u) << "*out changed on failure";
  }
}

TEST(SpawnRequest, OptionsOfTheEnvironmentLeaveTheJobsOwn) {
  ::setenv("ROCL_RANK", "3", 1);
  ::setenv("ROCL_DIRECTORY", "unix:/x", 1);
  ::setenv("ROCL_WAIT", "spin", 1);
  ::setenv("ROCLX", "1", 1);
  const std::vector<std::string> env = spawn_options_of_environment();
  auto has = [&](const std::string &e) {
    return std::find(env.begin(), env.end(), e) != env.end();
  };
  EXPECT_TRUE(has("ROCL_WAIT=spin"));
  EXPECT_FALSE(has("ROCL_RANK=3"));
  EXPECT_FALSE(has("ROCL_DIRECTORY=unix:/x"));
  EXPECT_FALSE(has("ROCLX=1"));
  EXPECT_TRUE(is_job_variable("ROCL_SECRET_FILE"));
  EXPECT_FALSE(is_job_variable("ROCL_WAIT"));
}

}  // namespace
}  // namespace rocl::impl
