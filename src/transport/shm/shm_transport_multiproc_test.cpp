// The shared-memory transport between real processes: a forked child sends
// to its parent, and a child killed while its ring is full makes the
// parent's send fail with ROCL_EPEER instead of hanging.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>

#include "security/job_secret.hpp"
#include "status/status.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/transport_test_util.hpp"

namespace rocl::impl {
namespace {

using namespace std::chrono_literals;
using transport_test::make_message;
using transport_test::RecordingSink;

bool write_all(int fd, const std::string &s) {
  const std::uint32_t n = static_cast<std::uint32_t>(s.size());
  return ::write(fd, &n, 4) == 4 && ::write(fd, s.data(), n) == static_cast<ssize_t>(n);
}
std::string read_all(int fd) {
  std::uint32_t n = 0;
  if (::read(fd, &n, 4) != 4 || n > 4096) return {};
  std::string s(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, s.data() + got, n - got);
    if (r <= 0) return {};
    got += static_cast<std::size_t>(r);
  }
  return s;
}

TEST(ShmMultiproc, ForkedChildSendsToItsParent) {
  const JobSecret secret = JobSecret::generate();
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(p[1]);
    const std::string addr = read_all(p[0]);
    BufferPool pool(PoolConfig{std::size_t{256} << 20, std::size_t{1} << 20});
    RecordingSink sink;
    sink.pool = &pool;
    auto t = make_shm_transport_with(TransportEnv{&sink, 9, &pool, &secret}, {}, nullptr);
    if (!t || addr.empty()) ::_exit(2);
    for (int i = 0; i < 100; ++i) {
      const std::size_t n = i == 50 ? (3u << 20) : 100u + i;
      Message *m = make_message(pool, n, static_cast<std::uint64_t>(i), 77, i);
      if (m == nullptr || t->send(1, addr, 11, m) != ROCL_OK) ::_exit(3);
    }
    t.reset();
    ::_exit(0);
  }
  ::close(p[0]);
  BufferPool pool(PoolConfig{std::size_t{256} << 20, std::size_t{1} << 20});
  RecordingSink sink;
  sink.pool = &pool;
  auto t = make_shm_transport_with(TransportEnv{&sink, 1, &pool, &secret}, {}, nullptr);
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(write_all(p[1], t->address()));
  ::close(p[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_TRUE(sink.wait_for(100));
  auto g = sink.snapshot();
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(g[i].first8, static_cast<std::uint64_t>(i));
    EXPECT_EQ(g[i].length, i == 50 ? (3u << 20) : 100u + i);
    EXPECT_EQ(g[i].source, 77u);
    EXPECT_EQ(g[i].tag, i);
  }
}

// Blocks the child's progress thread forever on the first arrival.
struct StuckSink : MessageSink {
  int deliver(rocl_gid_t, Message *) noexcept override {
    for (;;) ::pause();
  }
};

TEST(ShmMultiproc, ChildKilledWithItsRingFullFailsTheSend) {
  const JobSecret secret = JobSecret::generate();
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(p[0]);
    BufferPool pool(PoolConfig{std::size_t{64} << 20, std::size_t{1} << 20});
    StuckSink sink;
    auto t = make_shm_transport_with(TransportEnv{&sink, 9, &pool, &secret},
                                     shm::Config{4, 64 * 1024}, nullptr);
    if (!t || !write_all(p[1], t->address())) ::_exit(2);
    for (;;) ::pause();
  }
  ::close(p[1]);
  const std::string addr = read_all(p[0]);
  ::close(p[0]);
  ASSERT_FALSE(addr.empty());
  BufferPool pool(PoolConfig{std::size_t{256} << 20, std::size_t{1} << 20});
  RecordingSink sink;
  sink.pool = &pool;
  auto t = make_shm_transport_with(TransportEnv{&sink, 1, &pool, &secret}, {}, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->reaches(addr));
  std::atomic<int> sent{0};
  auto result = std::async(std::launch::async, [&]() -> std::pair<int, std::string> {
    for (int i = 0; i < 1000; ++i) {
      Message *m = make_message(pool, 8192, static_cast<std::uint64_t>(i), 11, 1);
      const int rc = t->send(9, addr, 21, m);
      if (rc != ROCL_OK) {
        pool.release(block_of(m), BlockState::kLibrary);
        return {rc, last_error()};
      }
      sent++;
    }
    return {ROCL_OK, ""};
  });
  std::this_thread::sleep_for(300ms);
  EXPECT_GE(sent.load(), 5);   // the ring took some
  EXPECT_LT(sent.load(), 20);  // ...then the sender blocked
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(child, SIGKILL), 0);  // not reaped yet: a zombie
  if (result.wait_for(5s) != std::future_status::ready) {
    ADD_FAILURE() << "send still blocked 5 s after the peer died";
    std::_Exit(1);
  }
  const auto r = result.get();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(r.first, ROCL_EPEER);
  EXPECT_NE(r.second.find(std::to_string(child)), std::string::npos) << r.second;
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(t->reaches(addr));
  // Later sends to the dead peer fail at once too.
  Message *m = make_message(pool, 10, 1, 11, 1);
  EXPECT_EQ(t->send(9, addr, 21, m), ROCL_EPEER);
  pool.release(block_of(m), BlockState::kLibrary);
}

}  // namespace
}  // namespace rocl::impl
