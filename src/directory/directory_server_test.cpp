// directory_server_test.cpp - the node directory server against processes
// and raw sockets: a forked process SIGKILLed loses its resources, garbage
// and unproven requests are dropped without hurting other clients, the
// removal epoch page (passed with the handshake, sealed, counting removals
// before their replies), and the socket file's life (stale file replaced,
// busy path refused, stop unlinks).
#include "directory/directory_server.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "directory/dir_protocol.hpp"
#include "directory/remote_directory.hpp"
#include "status/status.hpp"
#include "testing/fd_test_util.hpp"

namespace rocl::impl {
namespace {

using Clock = std::chrono::steady_clock;

std::string make_tmpdir() {
  char tmpl[] = "/tmp/rocl-dirsrv-XXXXXX";
  return mkdtemp(tmpl) != nullptr ? std::string(tmpl) : std::string();
}

AttrList worker(std::string_view name) {
  AttrList l(256);
  EXPECT_EQ(l.add("type", std::string_view("worker")), ROCL_OK);
  EXPECT_EQ(l.add("name", name), ROCL_OK);
  return l;
}

int raw_connect(const std::string &path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.data(), path.size());
  if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

using rocl::testing::read_exactly;

// Reads messages until EOF; true if the server closed the connection.
bool server_hangs_up(int fd) {
  char buf[4096];
  for (;;) {
    const ssize_t r = read(fd, buf, sizeof buf);
    if (r == 0) {
      return true;
    }
    if (r < 0) {
      return false;  // timeout
    }
  }
}

// Reads HELLO and answers a correct PROVE (and reads its reply).
bool raw_prove(int fd, const JobSecret &secret) {
  std::byte hello[dirproto::kHeaderBytes + dirproto::kChallengeBytes];
  if (!read_exactly(fd, hello, sizeof hello)) {
    return false;
  }
  const auto proof = secret.prove(
      dirproto::kProveLabel, std::span(reinterpret_cast<const std::uint8_t *>(hello) + 32, 32));
  std::vector<std::byte> body(64);
  std::memcpy(body.data(), proof.data(), 32);
  const auto msg = dirproto::encode_message(dirproto::Op::kProve, 0, 0, 0, body);
  if (write(fd, msg.data(), msg.size()) != static_cast<ssize_t>(msg.size())) {
    return false;
  }
  std::byte reply[dirproto::kHeaderBytes + dirproto::kProofBytes];
  return read_exactly(fd, reply, sizeof reply);
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_tmpdir();
    ASSERT_FALSE(dir_.empty());
    path_ = dir_ + "/dir.sock";
  }
  void TearDown() override {
    server_.reset();
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  void start_server() {
    server_ = std::make_unique<DirectoryServer>(path_, secret_);
    server_->set_log([this](const std::string &line) {
      std::lock_guard lock(mu_);
      log_ += line + "\n";
    });
    ASSERT_EQ(server_->start(), ROCL_OK) << last_error();
  }
  std::string log_text() {
    std::lock_guard lock(mu_);
    return log_;
  }
  bool wait_for_log(const std::string &s) {
    const auto end = Clock::now() + std::chrono::seconds(5);
    while (log_text().find(s) == std::string::npos) {
      if (Clock::now() > end) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }

  JobSecret secret_ = JobSecret::generate();
  std::string dir_;
  std::string path_;
  std::unique_ptr<DirectoryServer> server_;
  std::mutex mu_;
  std::string log_;
};

// The child is forked before the server thread exists (so it forks a
// single-threaded process), waits for "go", registers, reports, and sleeps.
TEST_F(ServerTest, KilledProcessResourcesVanish) {
  int go[2];
  int done[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(go[1]);
    close(done[0]);
    char c;
    if (read(go[0], &c, 1) != 1) {
      _exit(2);
    }
    auto d = connect_directory(path_, secret_);
    if (!d) {
      _exit(3);
    }
    const std::int64_t ctx = d->register_resource(worker("ctx"), ROCL_NULL_GID);
    if (ctx <= 0) {
      _exit(4);
    }
    for (int i = 0; i < 4; ++i) {
      if (d->register_resource(worker("child-" + std::to_string(i)), ctx) <= 0) {
        _exit(5);
      }
    }
    c = 'k';
    if (write(done[1], &c, 1) != 1) {
      _exit(6);
    }
    for (;;) {
      pause();
    }
  }
  close(go[0]);
  close(done[1]);
  start_server();
  auto mine = connect_directory(path_, secret_);
  ASSERT_NE(mine, nullptr) << last_error();
  const std::int64_t my_ctx = mine->register_resource(worker("parent"), ROCL_NULL_GID);
  ASSERT_GT(my_ctx, 0);
  char c = 'g';
  ASSERT_EQ(write(go[1], &c, 1), 1);
  const bool registered = read(done[0], &c, 1) == 1;
  if (!registered) {
    kill(child, SIGKILL);
  }
  ASSERT_TRUE(registered);
  EXPECT_EQ(server_->resources(), 6u);

  // The removal epoch as this client sees it (its own read-only mapping).
  const std::atomic<std::uint64_t> *epoch = mine->removal_epoch();
  ASSERT_NE(epoch, nullptr);
  const std::uint64_t e0 = epoch->load();

  const auto killed = Clock::now();
  ASSERT_EQ(kill(child, SIGKILL), 0);
  while (epoch->load(std::memory_order_acquire) == e0 &&
         Clock::now() - killed < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const auto took = Clock::now() - killed;
  // Counted once, after the dead process's resources left the directory.
  EXPECT_EQ(epoch->load(), e0 + 1);
  EXPECT_EQ(server_->resources(), 1u);
  EXPECT_LT(took, std::chrono::seconds(5));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(wait_for_log("client " + std::to_string(child) + " disconnected; removed 5"))
      << log_text();
  // The parent's own resource is untouched.
  AttrList q(64);
  ASSERT_EQ(q.add("name", std::string_view("parent")), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  EXPECT_EQ(mine->query(&gid, q), ROCL_OK) << last_error();
  close(go[1]);
  close(done[0]);
}

TEST_F(ServerTest, GarbageIsDroppedOthersKeepWorking) {
  start_server();
  auto good = connect_directory(path_, secret_);
  ASSERT_NE(good, nullptr) << last_error();
  const std::int64_t ctx = good->register_resource(worker("good"), ROCL_NULL_GID);
  ASSERT_GT(ctx, 0);
  const std::string me = "directory: client " + std::to_string(getpid()) + " sent ";

  // 1. Proven, then random bytes: bad magic.
  int fd = raw_connect(path_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(raw_prove(fd, secret_));
  std::mt19937 rng(7);
  std::vector<unsigned char> junk(100);
  for (auto &b : junk) {
    b = static_cast<unsigned char>(rng());
  }
  junk[0] = 'X';
  ASSERT_EQ(write(fd, junk.data(), junk.size()), 100);
  EXPECT_TRUE(server_hangs_up(fd));
  close(fd);
  EXPECT_TRUE(wait_for_log(me + "a bad magic")) << log_text();

  // 2. Proven, then a header announcing 2 MiB: dropped before any body.
  fd = raw_connect(path_);
  ASSERT_TRUE(raw_prove(fd, secret_));
  dirproto::Header h;
  h.op = static_cast<std::uint16_t>(dirproto::Op::kRegister);
  h.body_len = 2u << 20;
  std::byte raw[dirproto::kHeaderBytes];
  dirproto::encode_header(h, raw);
  ASSERT_EQ(write(fd, raw, sizeof raw), static_cast<ssize_t>(sizeof raw));
  EXPECT_TRUE(server_hangs_up(fd));
  close(fd);
  EXPECT_TRUE(wait_for_log(me + "a body of 2097152 bytes (limit 1048576)")) << log_text();

  // 3. Proven, then a REGISTER whose body is no attribute list.
  fd = raw_connect(path_);
  ASSERT_TRUE(raw_prove(fd, secret_));
  const std::string text = "not a list";
  auto msg =
      dirproto::encode_message(dirproto::Op::kRegister, 0, 0, 0, std::as_bytes(std::span(text)));
  ASSERT_EQ(write(fd, msg.data(), msg.size()), static_cast<ssize_t>(msg.size()));
  EXPECT_TRUE(server_hangs_up(fd));
  close(fd);
  EXPECT_TRUE(wait_for_log(me + "a bad attribute list in REGISTER")) << log_text();

  // 4. A request without PROVE: refused.
  fd = raw_connect(path_);
  std::byte hello[64];
  ASSERT_TRUE(read_exactly(fd, hello, sizeof hello));
  msg = dirproto::encode_message(dirproto::Op::kRemoveContext, 0, ctx, 0, {});
  ASSERT_EQ(write(fd, msg.data(), msg.size()), static_cast<ssize_t>(msg.size()));
  EXPECT_TRUE(server_hangs_up(fd));
  close(fd);
  EXPECT_TRUE(wait_for_log("refused: it sent REMOVE_CONTEXT before proving")) << log_text();

  // 5. Garbage trickled one byte at a time in a truncated message, then EOF.
  fd = raw_connect(path_);
  ASSERT_TRUE(raw_prove(fd, secret_));
  msg = dirproto::encode_message(dirproto::Op::kQuery, 0, 0, 0, worker("x").bytes());
  for (std::size_t i = 0; i + 10 < msg.size(); ++i) {
    ASSERT_EQ(write(fd, &msg[i], 1), 1);
  }
  close(fd);

  // The good client never noticed, and its context is intact.
  AttrList q(64);
  ASSERT_EQ(q.add("name", std::string_view("good")), ROCL_OK);
  rocl_gid_t gid = ROCL_NULL_GID;
  EXPECT_EQ(good->query(&gid, q), ROCL_OK) << last_error();
  EXPECT_EQ(gid, static_cast<rocl_gid_t>(ctx));
  EXPECT_EQ(server_->resources(), 1u);
}

// A PROVE recorded on one connection and replayed on another does not
// verify: every HELLO carries a fresh challenge. The refusal is logged
// once, naming the client, and the server goes on serving.
TEST_F(ServerTest, AReplayedProveIsRefused) {
  start_server();
  int fd = raw_connect(path_);
  ASSERT_GE(fd, 0);
  std::byte first[dirproto::kHeaderBytes + dirproto::kChallengeBytes];
  ASSERT_TRUE(read_exactly(fd, first, sizeof first));
  const auto recorded = secret_.prove(
      dirproto::kProveLabel, std::span(reinterpret_cast<const std::uint8_t *>(first) + 32, 32));
  close(fd);

  fd = raw_connect(path_);
  ASSERT_GE(fd, 0);
  std::byte second[sizeof first];
  ASSERT_TRUE(read_exactly(fd, second, sizeof second));
  EXPECT_NE(std::memcmp(first + 32, second + 32, 32), 0) << "the same challenge twice";
  std::vector<std::byte> body(64);
  std::memcpy(body.data(), recorded.data(), 32);
  const auto msg = dirproto::encode_message(dirproto::Op::kProve, 0, 0, 0, body);
  ASSERT_EQ(write(fd, msg.data(), msg.size()), static_cast<ssize_t>(msg.size()));
  EXPECT_TRUE(server_hangs_up(fd));
  close(fd);
  const std::string refusal =
      "directory: client " + std::to_string(getpid()) + " refused: job secret proof did not verify";
  EXPECT_TRUE(wait_for_log(refusal)) << log_text();
  const std::string text = log_text();
  EXPECT_EQ(text.find(refusal), text.rfind(refusal)) << "logged more than once:\n" << text;

  auto good = connect_directory(path_, secret_);
  ASSERT_NE(good, nullptr) << last_error();
  EXPECT_GT(good->register_resource(worker("after"), ROCL_NULL_GID), 0) << last_error();
}

// The reply to PROVE carries the removal epoch page as SCM_RIGHTS; the page
// is sealed (no shrinking, growing or writable mapping for clients) and
// counts REMOVEs before replying to them.
TEST_F(ServerTest, EpochPageComesWithTheHandshakeReadOnly) {
  start_server();
  const int fd = raw_connect(path_);
  ASSERT_GE(fd, 0);
  std::byte hello[dirproto::kHeaderBytes + dirproto::kChallengeBytes];
  ASSERT_TRUE(read_exactly(fd, hello, sizeof hello));
  const auto proof = secret_.prove(
      dirproto::kProveLabel, std::span(reinterpret_cast<const std::uint8_t *>(hello) + 32, 32));
  std::vector<std::byte> body(64);
  std::memcpy(body.data(), proof.data(), 32);
  auto msg = dirproto::encode_message(dirproto::Op::kProve, 0, 0, 0, body);
  ASSERT_EQ(write(fd, msg.data(), msg.size()), static_cast<ssize_t>(msg.size()));

  std::byte reply[dirproto::kHeaderBytes + dirproto::kProofBytes];
  iovec iov{reply, sizeof reply};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof control;
  const ssize_t got = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof reply));
  dirproto::Header h;
  std::string what;
  ASSERT_EQ(dirproto::decode_header(std::span(reply).first(dirproto::kHeaderBytes), &h, &what),
            ROCL_OK)
      << what;
  EXPECT_EQ(h.status, ROCL_OK);
  EXPECT_EQ(h.aux, dirproto::kEpochPageAttached);
  cmsghdr *cm = CMSG_FIRSTHDR(&mh);
  ASSERT_NE(cm, nullptr) << "no descriptor came with the reply to PROVE";
  ASSERT_EQ(cm->cmsg_type, SCM_RIGHTS);
  int page_fd = -1;
  std::memcpy(&page_fd, CMSG_DATA(cm), sizeof page_fd);
  ASSERT_GE(page_fd, 0);

  struct stat st;
  ASSERT_EQ(fstat(page_fd, &st), 0);
  EXPECT_EQ(st.st_size, static_cast<off_t>(dirproto::kEpochPageBytes));
  const int seals = fcntl(page_fd, F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_NE(ftruncate(page_fd, 0), 0) << "the page can be shrunk";
  if ((seals & F_SEAL_FUTURE_WRITE) != 0) {
    EXPECT_EQ(
        mmap(nullptr, dirproto::kEpochPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0),
        MAP_FAILED)
        << "a client could map the page writable";
    const char zero = 0;
    EXPECT_NE(pwrite(page_fd, &zero, 1, 64), 1) << "a client could write the page";
  }
  void *page = mmap(nullptr, dirproto::kEpochPageBytes, PROT_READ, MAP_SHARED, page_fd, 0);
  ASSERT_NE(page, MAP_FAILED);
  close(page_fd);
  std::uint64_t magic = 0;
  std::memcpy(&magic, page, sizeof magic);
  EXPECT_EQ(magic, dirproto::kEpochPageMagic);
  const auto *counter = reinterpret_cast<const std::atomic<std::uint64_t> *>(
      static_cast<const char *>(page) + dirproto::kEpochCounterOffset);
  const std::uint64_t e0 = counter->load();
  EXPECT_EQ(e0, server_->removal_epoch()->load());

  // REGISTER a context, REMOVE it: counted by the time the reply is here.
  AttrList l = worker("raw");
  msg = dirproto::encode_message(dirproto::Op::kRegister, 0, ROCL_NULL_GID, 0, l.bytes());
  ASSERT_EQ(write(fd, msg.data(), msg.size()), static_cast<ssize_t>(msg.size()));
  std::byte head[dirproto::kHeaderBytes];
  ASSERT_TRUE(read_exactly(fd, head, sizeof head));
  ASSERT_EQ(dirproto::decode_header(head, &h, &what), ROCL_OK) << what;
  ASSERT_EQ(h.status, ROCL_OK);
  EXPECT_EQ(counter->load(), e0);
  msg = dirproto::encode_message(dirproto::Op::kRemove, 0, h.gid, 0, {});
  ASSERT_EQ(write(fd, msg.data(), msg.size()), static_cast<ssize_t>(msg.size()));
  ASSERT_TRUE(read_exactly(fd, head, sizeof head));
  ASSERT_EQ(dirproto::decode_header(head, &h, &what), ROCL_OK) << what;
  ASSERT_EQ(h.status, ROCL_OK);
  EXPECT_EQ(counter->load(std::memory_order_acquire), e0 + 1);
  munmap(page, dirproto::kEpochPageBytes);
  close(fd);
}

// A client of another protocol version is told apart from garbage.
TEST_F(ServerTest, AnotherProtocolVersionIsNamed) {
  start_server();
  const int fd = raw_connect(path_);
  ASSERT_GE(fd, 0);
  std::byte hello[dirproto::kHeaderBytes + dirproto::kChallengeBytes];
  ASSERT_TRUE(read_exactly(fd, hello, sizeof hello));
  auto msg = dirproto::encode_message(dirproto::Op::kProve, 0, 0, 0, std::vector<std::byte>(64));
  msg[4] = std::byte{1};  // version 1: before the removal epoch
  ASSERT_EQ(write(fd, msg.data(), msg.size()), static_cast<ssize_t>(msg.size()));
  EXPECT_TRUE(server_hangs_up(fd));
  close(fd);
  EXPECT_TRUE(wait_for_log("sent directory protocol version 1, but this side speaks version 3"))
      << log_text();
}

TEST_F(ServerTest, SocketFileLifecycle) {
  // A stale socket file (no server behind it) is replaced.
  {
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, path_.data(), path_.size());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
    close(fd);
  }
  start_server();
  struct stat st;
  ASSERT_EQ(lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // A second server on a live path is refused and leaves the file alone.
  DirectoryServer second(path_, secret_, 2);
  second.set_log([](const std::string &) {});
  EXPECT_EQ(second.start(), ROCL_EBUSY);
  EXPECT_NE(std::string(last_error()).find("already answers"), std::string::npos);
  EXPECT_NE(connect_directory(path_, secret_), nullptr) << last_error();

  server_->stop();
  EXPECT_NE(lstat(path_.c_str(), &st), 0);  // stop() unlinked it
  server_->stop();                          // idempotent

  // A regular file at the path is never removed.
  const std::string file = dir_ + "/plain";
  FILE *f = fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  DirectoryServer third(file, secret_);
  EXPECT_EQ(third.start(), ROCL_EBUSY);
  EXPECT_EQ(lstat(file.c_str(), &st), 0);
  unlink(file.c_str());
  DirectoryServer bad_id(dir_ + "/x.sock", secret_, 0);
  EXPECT_EQ(bad_id.start(), ROCL_EINVAL);
}

}  // namespace
}  // namespace rocl::impl
