// A receive waiting for one origin must not hang when the origin's process
// is killed, nor when this process's directory server (which tells) is: it
// fails with ROCL_EPEER naming the origin, within a bounded time
// (ROCL_PEER_CHECK_MS), while the rest of the process carries on.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "directory/directory_server.hpp"
#include "rocl/rocl.h"
#include "security/job_secret.hpp"

namespace {

using rocl::impl::DirectoryServer;
using rocl::impl::JobSecret;

// The killed process: registers, reports its gid, waits to be killed.
[[noreturn]] void victim(int go_fd, int gid_fd) {
  char go = 0;
  if (::read(go_fd, &go, 1) != 1) std::_Exit(10);
  if (rocl_init() <= 0) std::_Exit(11);
  rocl_attrl_t *a = rocl_new_attrl(0);
  rocl_add_attr(a, "type", "victim", 6);
  std::int64_t gid = rocl_register(a);
  if (gid <= 0 || ::write(gid_fd, &gid, sizeof gid) != sizeof gid) std::_Exit(12);
  for (;;) ::pause();
}

TEST(PeerDeath, ReceiveFromAKilledProcessFailsNamingIt) {
  std::string dir = "/tmp/rocl-peer-death-" + std::to_string(::getpid());
  std::string secret_file = dir + "-secret", socket = dir + ".sock";
  ::unlink(secret_file.c_str());
  JobSecret secret = JobSecret::generate();
  ASSERT_EQ(secret.write_file(secret_file), ROCL_OK);
  ::setenv("ROCL_DIRECTORY", ("unix:" + socket).c_str(), 1);
  ::setenv("ROCL_SECRET_FILE", secret_file.c_str(), 1);
  ::setenv("ROCL_PEER_CHECK_MS", "100", 1);

  int go[2], gid_pipe[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(gid_pipe), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) victim(go[0], gid_pipe[1]);

  DirectoryServer server(socket, secret);
  server.set_log([](const std::string &) {});
  ASSERT_EQ(server.start(), ROCL_OK);
  ASSERT_GT(rocl_init(), 0) << rocl_last_error();
  rocl_attrl_t *a = rocl_new_attrl(0);
  rocl_add_attr(a, "type", "survivor", 8);
  std::int64_t me = rocl_register(a);
  rocl_kill_attrl(a);
  ASSERT_GT(me, 0);

  ASSERT_EQ(::write(go[1], "g", 1), 1);
  std::int64_t victim_gid = 0;
  ASSERT_EQ(::read(gid_pipe[0], &victim_gid, sizeof victim_gid),
            static_cast<ssize_t>(sizeof victim_gid));
  ASSERT_EQ(::kill(child, SIGKILL), 0);

  auto t0 = std::chrono::steady_clock::now();
  void *p = nullptr;
  int rc = rocl_recv(static_cast<rocl_gid_t>(me), static_cast<rocl_gid_t>(victim_gid), ROCL_ANY, &p,
                     nullptr, nullptr, nullptr, -1);
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(rc, ROCL_EPEER);
  char hex[32];
  std::snprintf(hex, sizeof hex, "%#llx", static_cast<unsigned long long>(victim_gid));
  EXPECT_NE(std::string(rocl_last_error()).find(hex), std::string::npos) << rocl_last_error();
  EXPECT_LT(waited, std::chrono::seconds(5));

  // The process carries on: its own resources still work.
  int v = 42;
  EXPECT_EQ(rocl_send(me, me, 1, &v, sizeof v), ROCL_OK) << rocl_last_error();
  EXPECT_EQ(rocl_recv(me, me, 1, &p, nullptr, nullptr, nullptr, 1000), ROCL_OK);
  rocl_bfret(p);

  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(rocl_exit(), ROCL_OK);
  server.stop();
  ::unlink(secret_file.c_str());
  ::unsetenv("ROCL_DIRECTORY");
  ::unsetenv("ROCL_SECRET_FILE");
  ::unsetenv("ROCL_PEER_CHECK_MS");
}

// Without its directory server a process cannot learn that an origin
// died: a receive waiting for one fails with ROCL_EPEER saying so, instead
// of waiting for ever, though the origin (here) lives.
TEST(PeerDeath, AReceiveWhoseDirectoryServerDiedFailsSayingSo) {
  std::string dir = "/tmp/rocl-lost-dir-" + std::to_string(::getpid());
  std::string secret_file = dir + "-secret", socket = dir + ".sock";
  ::unlink(secret_file.c_str());
  JobSecret secret = JobSecret::generate();
  ASSERT_EQ(secret.write_file(secret_file), ROCL_OK);
  ::setenv("ROCL_DIRECTORY", ("unix:" + socket).c_str(), 1);
  ::setenv("ROCL_SECRET_FILE", secret_file.c_str(), 1);
  ::setenv("ROCL_PEER_CHECK_MS", "100", 1);

  int go[2], gid_pipe[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(gid_pipe), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) victim(go[0], gid_pipe[1]);

  auto server = std::make_unique<DirectoryServer>(socket, secret);
  server->set_log([](const std::string &) {});
  ASSERT_EQ(server->start(), ROCL_OK);
  ASSERT_GT(rocl_init(), 0) << rocl_last_error();
  rocl_attrl_t *a = rocl_new_attrl(0);
  rocl_add_attr(a, "type", "survivor", 8);
  std::int64_t me = rocl_register(a);
  rocl_kill_attrl(a);
  ASSERT_GT(me, 0);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  std::int64_t other = 0;
  ASSERT_EQ(::read(gid_pipe[0], &other, sizeof other), static_cast<ssize_t>(sizeof other));

  server->stop();
  auto t0 = std::chrono::steady_clock::now();
  void *p = nullptr;
  int rc = rocl_recv(static_cast<rocl_gid_t>(me), static_cast<rocl_gid_t>(other), ROCL_ANY, &p,
                     nullptr, nullptr, nullptr, -1);
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(rc, ROCL_EPEER);
  const std::string why = rocl_last_error();
  char hex[32];
  std::snprintf(hex, sizeof hex, "%#llx", static_cast<unsigned long long>(other));
  EXPECT_NE(why.find(hex), std::string::npos) << why;
  EXPECT_NE(why.find("can no longer be told"), std::string::npos) << why;
  EXPECT_NE(why.find("directory server"), std::string::npos) << why;
  EXPECT_LT(waited, std::chrono::seconds(5));

  // Its own resources still work, and rocl_exit returns.
  int v = 7;
  EXPECT_EQ(rocl_send(me, me, 1, &v, sizeof v), ROCL_OK) << rocl_last_error();
  EXPECT_EQ(rocl_recv(me, me, 1, &p, nullptr, nullptr, nullptr, 1000), ROCL_OK);
  rocl_bfret(p);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(rocl_exit(), ROCL_OK);
  server.reset();
  ::unlink(secret_file.c_str());
  ::unsetenv("ROCL_DIRECTORY");
  ::unsetenv("ROCL_SECRET_FILE");
  ::unsetenv("ROCL_PEER_CHECK_MS");
}

}  // namespace
