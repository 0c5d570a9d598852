// hosts_test.cpp - a job's hosts: the host list and host file, where ranks
// go, and the commands the remote shells make (hosts.hpp).
#include "launch/hosts.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "status/status.hpp"

namespace rocl::impl {
namespace {

TEST(Hosts, ListWithAndWithoutSlots) {
  std::vector<HostSlots> h;
  ASSERT_EQ(parse_host_list("h1,h2:4,node-3.example", &h), ROCL_OK) << last_error();
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].name, "h1");
  EXPECT_EQ(h[0].slots, 0);
  EXPECT_EQ(h[1].slots, 4);
  EXPECT_EQ(h[2].name, "node-3.example");
  for (const char *bad : {"", "h1,,h2", "h1:0", "h1:x", "h1:", "-h", "h/1", "a b"}) {
    EXPECT_EQ(parse_host_list(bad, &h), ROCL_EINVAL) << "'" << bad << "'";
    EXPECT_NE(std::string(last_error()).find("is not NAME or NAME:SLOTS"), std::string::npos);
  }
}

TEST(Hosts, FileLinesCommentsAndErrorsWithTheirLine) {
  char path[] = "/tmp/rocl-hostfile-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string text = "# the test hosts\nh1 slots=2\n\nh2:3   # a comment\nh3\n";
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  std::vector<HostSlots> h;
  ASSERT_EQ(parse_hostfile(path, &h), ROCL_OK) << last_error();
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].slots, 2);
  EXPECT_EQ(h[1].slots, 3);
  EXPECT_EQ(h[2].slots, 0);
  std::FILE *f = std::fopen(path, "w");
  std::fputs("h1\nh2 slots=two\n", f);
  std::fclose(f);
  EXPECT_EQ(parse_hostfile(path, &h), ROCL_EINVAL);
  EXPECT_NE(std::string(last_error()).find("line 2"), std::string::npos) << last_error();
  ::unlink(path);
  EXPECT_EQ(parse_hostfile(path, &h), ROCL_EINVAL);
  EXPECT_NE(std::string(last_error()).find("cannot be read"), std::string::npos);
}

TEST(Hosts, RanksSpreadInBlocksOrBySlots) {
  const std::vector<HostSlots> four = {{"a", 0}, {"b", 0}, {"c", 0}, {"d", 0}};
  EXPECT_EQ(place_ranks(four, 8), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(place_ranks(four, 6), (std::vector<int>{0, 0, 1, 1, 2, 3}));
  EXPECT_EQ(place_ranks(four, 2), (std::vector<int>{0, 1}));
  const std::vector<HostSlots> slots = {{"a", 1}, {"b", 3}};
  EXPECT_EQ(place_ranks(slots, 4), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(place_ranks(slots, 6), (std::vector<int>{0, 1, 1, 1, 0, 1}));
}

TEST(Hosts, ShellsWrapTheCommand) {
  EXPECT_EQ(shell_quote({"a b", "it's", ""}), "'a b' 'it'\\''s' ''");
  ::setenv("ROCL_NETNS_PREFIX", "tp", 1);
  auto netns = make_remote_shell("netns");
  ASSERT_TRUE(netns);
  EXPECT_EQ(netns->wrap("h2", {"prog", "x"}),
            (std::vector<std::string>{"ip", "netns", "exec", "tp-h2", "prog", "x"}));
  ::setenv("ROCL_SSH", "ssh -p 2222", 1);
  auto ssh = make_remote_shell("ssh");
  ASSERT_TRUE(ssh);
  EXPECT_EQ(
      ssh->wrap("h2", {"prog", "a b"}),
      (std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "-p", "2222", "h2", "'prog' 'a b'"}));
  EXPECT_FALSE(ssh->same_machine());
  EXPECT_EQ(make_remote_shell("rsh"), nullptr);
  EXPECT_NE(std::string(last_error()).find("'rsh'"), std::string::npos);
}

}  // namespace
}  // namespace rocl::impl
