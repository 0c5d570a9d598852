// The job secret: files are private, proofs verify only with the same
// secret, label and challenge.
#include "security/job_secret.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <array>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include "status/status.hpp"

namespace rocl::impl {
namespace {

std::string temp_path(const char *name) {
  return "/tmp/rocl-secret-test-" + std::to_string(::getpid()) + "-" + name;
}

TEST(JobSecret, RoundTripsThroughAPrivateFile) {
  std::string path = temp_path("a");
  ::unlink(path.c_str());
  JobSecret s = JobSecret::generate();
  ASSERT_EQ(s.write_file(path), ROCL_OK) << last_error();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  JobSecret t;
  ASSERT_EQ(JobSecret::read_file(path, &t), ROCL_OK) << last_error();
  auto c = JobSecret::random_challenge();
  EXPECT_TRUE(t.verify("rocl-dir", c, s.prove("rocl-dir", c)));
  EXPECT_EQ(s.write_file(path), ROCL_EINVAL) << "an existing file must not be overwritten";
  ::unlink(path.c_str());
}

TEST(JobSecret, ProofsDependOnSecretLabelAndChallenge) {
  JobSecret a = JobSecret::generate(), b = JobSecret::generate();
  auto c1 = JobSecret::random_challenge(), c2 = JobSecret::random_challenge();
  auto proof = a.prove("tcp", c1);
  EXPECT_TRUE(a.verify("tcp", c1, proof));
  EXPECT_FALSE(b.verify("tcp", c1, proof));
  EXPECT_FALSE(a.verify("shm", c1, proof));
  EXPECT_FALSE(a.verify("tcp", c2, proof));
}

TEST(JobSecret, RandomBytesFillWhatIsAsked) {
  std::array<std::uint64_t, 64> a{}, b{};
  ASSERT_TRUE(JobSecret::random_bytes(a.data(), sizeof a));
  ASSERT_TRUE(JobSecret::random_bytes(b.data(), sizeof b));
  EXPECT_NE(a, b);
  int zero_words = 0;
  for (std::uint64_t w : a) zero_words += w == 0;
  EXPECT_LT(zero_words, 2);  // 64 random words: a zero one is a 1 in 2^58 chance
  EXPECT_TRUE(JobSecret::random_bytes(nullptr, 0));
}

TEST(JobSecret, RefusesFilesOthersCanRead) {
  std::string path = temp_path("b");
  {
    std::ofstream f(path);
    f << std::string(64, 'a') << "\n";
  }
  ::chmod(path.c_str(), 0644);
  JobSecret s;
  EXPECT_EQ(JobSecret::read_file(path, &s), ROCL_EINVAL);
  EXPECT_NE(std::string(last_error()).find("readable by others"), std::string::npos);
  ::unlink(path.c_str());
}

TEST(JobSecret, RefusesMissingShortAndGarbageFiles) {
  JobSecret s;
  EXPECT_EQ(JobSecret::read_file(temp_path("missing"), &s), ROCL_EINVAL);
  std::string path = temp_path("c");
  for (std::string content : {std::string("abc"), std::string(64, 'z')}) {
    ::unlink(path.c_str());
    {
      std::ofstream f(path);
      f << content;
    }
    ::chmod(path.c_str(), 0600);
    EXPECT_EQ(JobSecret::read_file(path, &s), ROCL_EINVAL) << content;
    EXPECT_NE(std::string(last_error()).find(path), std::string::npos);
  }
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace rocl::impl
