// remote_directory.cpp - Directory over the directory server's socket (see
// remote_directory.hpp and dir_protocol.hpp).
#include "directory/remote_directory.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "directory/dir_protocol.hpp"
#include "directory/removal_epoch.hpp"
#include "status/status.hpp"

namespace rocl::impl {
namespace {

using dirproto::Op;

// A reply that does not come within this long is taken as a lost server.
constexpr int kReplyTimeoutSeconds = 10;

class Connection {
 public:
  Connection(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~Connection() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    if (passed_fd_ >= 0) {
      ::close(passed_fd_);
    }
  }
  Connection(const Connection &) = delete;
  Connection &operator=(const Connection &) = delete;

  const std::string &path() const { return path_; }

  // Sends all of msg. false + *why on failure.
  bool send_all(std::span<const std::byte> msg, std::string *why) {
    while (!msg.empty()) {
      const ssize_t n = ::send(fd_, msg.data(), msg.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) {
          continue;
        }
        *why = std::string("sending failed: ") + std::strerror(errno);
        return false;
      }
      msg = msg.subspan(static_cast<std::size_t>(n));
    }
    return true;
  }

  // While true, the first descriptor the server passes (SCM_RIGHTS) is kept
  // for take_passed_fd(); any other is closed at once.
  void accept_fd(bool yes) { accept_fd_ = yes; }
  // The kept descriptor (the caller owns it), or -1; *truncated if the
  // kernel dropped descriptors (MSG_CTRUNC: no room in our table).
  int take_passed_fd(bool *truncated) {
    *truncated = fd_truncated_;
    const int fd = passed_fd_;
    passed_fd_ = -1;
    return fd;
  }

  bool recv_all(std::byte *p, std::size_t n, std::string *why) {
    while (n > 0) {
      const ssize_t r = recv_some(p, n);
      if (r == 0) {
        *why = "the server closed the connection";
        return false;
      }
      if (r < 0) {
        if (errno == EINTR) {
          continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          *why = "no reply within " + std::to_string(reply_timeout_s_) + " s";
        } else {
          *why = std::string("receiving failed: ") + std::strerror(errno);
        }
        return false;
      }
      p += r;
      n -= static_cast<std::size_t>(r);
    }
    return true;
  }

  // Reads one message with a checked header. false + *why on failure.
  bool read_message(dirproto::Header *h, std::vector<std::byte> *body, std::string *why) {
    std::byte raw[dirproto::kHeaderBytes];
    wait_briefly();
    if (!recv_all(raw, sizeof raw, why)) {
      return false;
    }
    std::string what;
    if (dirproto::decode_header(raw, h, &what) != ROCL_OK) {
      *why = "the server sent " + what;
      return false;
    }
    body->resize(h->body_len);
    return recv_all(body->data(), body->size(), why);
  }

  // True once the connection is lost; needs no mu.
  bool lost() const noexcept { return lost_flag_.load(std::memory_order_acquire); }

  // One request/reply round trip, the caller holding mu. Returns ROCL_OK with
  // *reply (and *attrs for QUERY / QUERY_NEXT, the checked body in
  // *raw_body if asked), the server's failure (its
  // sentence recorded), or ROCL_EPEER when the connection is lost.
  int call(const char *what, Op op, std::uint64_t gid, std::uint64_t aux,
           std::span<const std::byte> body, dirproto::Header *reply, AttrList *attrs,
           std::vector<std::byte> *raw_body = nullptr) {
    if (!lost_.empty()) {
      return fail(ROCL_EPEER, "%s: directory server at %s: %s", what, path_.c_str(), lost_.c_str());
    }
    std::string why;
    std::vector<std::byte> in;
    if (!send_all(dirproto::encode_message(op, ROCL_OK, gid, aux, body), &why) ||
        !read_message(reply, &in, &why)) {
      return lose(what, why);
    }
    dirproto::Message m{*reply, in};
    std::string sentence;
    std::string bad;
    AttrList tmp(1);
    if (dirproto::check_reply(op, m, &tmp, &sentence, &bad) != ROCL_OK) {
      return lose(what, "the server sent " + bad);
    }
    if (reply->status < 0) {
      // Only a reply that says so ends the connection: an EPEER about
      // another server (it did not answer) must not cost this process its
      // place in the directory, which a closed connection does.
      if ((reply->aux & dirproto::kClosing) != 0) {
        lose(what, sentence);
      }
      return fail(reply->status, "%s", sentence.c_str());
    }
    if (attrs != nullptr && (op == Op::kQuery || op == Op::kQueryNext)) {
      *attrs = std::move(tmp);
    }
    if (raw_body != nullptr) {
      *raw_body = std::move(in);
    }
    return ROCL_OK;
  }

  // The server broke the protocol in a reply call() let through (a batch
  // decode_batch rejected): the connection is lost, as for any bad reply.
  int broken(const char *what, const std::string &bad) {
    return lose(what, "the server sent " + bad);
  }

  // How long a reply may take (seconds; 0: no limit), from now on.
  void set_reply_timeout(long seconds) {
    reply_timeout_s_ = seconds;
    timeval tv{seconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

  std::mutex mu;

 private:
  // Looks for the reply without sleeping for a short while: a server that
  // answers from its own table answers within it, and a sleeping client's
  // wake-up would cost more than the question. It yields between looks: the
  // server may be waiting for this very cpu.
  void wait_briefly() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(30);
    std::byte b;
    do {
      if (::recv(fd_, &b, 1, MSG_PEEK | MSG_DONTWAIT) != -1 || errno != EAGAIN) return;
      sched_yield();
    } while (std::chrono::steady_clock::now() < until);
  }

  // recv() that also takes the descriptors the server may pass.
  ssize_t recv_some(std::byte *p, std::size_t n) {
    iovec iov{p, n};
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof control;
    const ssize_t r = ::recvmsg(fd_, &mh, MSG_CMSG_CLOEXEC);
    if (r < 0) {
      return r;
    }
    if ((mh.msg_flags & MSG_CTRUNC) != 0) {
      fd_truncated_ = true;
    }
    for (cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm != nullptr; cm = CMSG_NXTHDR(&mh, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
        continue;
      }
      const std::size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
        if (accept_fd_ && passed_fd_ < 0) {
          passed_fd_ = fd;
        } else {
          ::close(fd);
        }
      }
    }
    return r;
  }

  int lose(const char *what, const std::string &why) {
    lost_ = "connection lost: " + why;
    lost_flag_.store(true, std::memory_order_release);
    ::shutdown(fd_, SHUT_RDWR);
    return fail(ROCL_EPEER, "%s: directory server at %s: %s", what, path_.c_str(), lost_.c_str());
  }

  int fd_;
  std::string path_;
  std::string lost_;                    // why the connection is unusable ("" while it is fine)
  std::atomic<bool> lost_flag_{false};  // !lost_.empty(), read without mu
  bool accept_fd_ = false;
  int passed_fd_ = -1;
  bool fd_truncated_ = false;
  long reply_timeout_s_ = kReplyTimeoutSeconds;
};

// A reply's list must be the request's list, answered.
bool same_shape(const AttrList &sent, const AttrList &got) {
  return sent.count() == got.count() && sent.capacity() == got.capacity();
}

// Most answers a cursor asks for per batch: a whole batch when the removal
// epoch tells it whether an answer it holds may have left the directory
// since; otherwise one (each answer fresh from the server, as before
// batching).
std::uint32_t batch_most(const EpochPage *epoch) {
  return epoch != nullptr ? dirproto::kMaxBatchAnswers : 1;
}

// One batched request (QUERY_START when cursor == 0, else QUERY_NEXT) for the
// answers after `after`, the caller holding conn.mu. ROCL_OK with *batch and
// *cursor (the server's cursor id, 0 once it kept none), or the failure.
int fetch_batch(Connection &conn, const char *what, const AttrList &pattern, std::uint64_t after,
                std::uint32_t most, std::uint64_t *cursor, dirproto::Batch *batch) {
  dirproto::Header h;
  std::vector<std::byte> body;
  int rc;
  if (*cursor == 0) {
    rc = conn.call(what, Op::kQueryStart, after, most, pattern.bytes(), &h, nullptr, &body);
  } else {
    rc = conn.call(what, Op::kQueryNext, after, *cursor, dirproto::encode_most(most), &h, nullptr,
                   &body);
  }
  if (rc != ROCL_OK) {
    return rc;
  }
  std::string bad;
  dirproto::Batch got;
  if (dirproto::decode_batch(body, most, after, &got, &bad) != ROCL_OK) {
    return conn.broken(what, bad);
  }
  // The server keeps a cursor exactly while more answers follow.
  if (*cursor == 0 ? (h.aux != 0) != got.more : h.aux != *cursor) {
    return conn.broken(what, "a batch with cursor id " + std::to_string(h.aux) + " (" +
                                 (got.more ? "with" : "without") + " more answers)");
  }
  *batch = std::move(got);
  *cursor = batch->more ? h.aux : 0;
  return ROCL_OK;
}

// A multi-answer query served from batches of answers (dir_protocol.hpp):
// next() takes answers from the batch it holds and asks the server for the
// next batch only when that one is used up. Same results as asking the
// server for each answer:
//  - a resource removed before next() is called is not returned: every
//    removal moves the server's removal epoch before its call returns, so a
//    batch is only used while the epoch still has the value read before
//    asking for it; otherwise the rest of it is dropped and asked for again
//    (after the last gid returned). Without an epoch page the cursor asks
//    for one answer at a time, served by the call that asked.
//  - answers are filled here from the resource's whole list, as the server
//    would (AttrList::fill_from); ENOSPC does not advance.
//  - resources registered after the batch that ended the query was fetched
//    are not seen (rocl.h: "may or may not be seen").
class RemoteCursor final : public QueryCursor {
 public:
  RemoteCursor(std::shared_ptr<Connection> conn, std::shared_ptr<EpochPage> epoch, AttrList pattern,
               std::uint64_t cursor, std::uint64_t epoch_at_fetch, dirproto::Batch first)
      : conn_(std::move(conn)),
        epoch_(std::move(epoch)),
        pattern_(std::move(pattern)),
        cursor_(cursor),
        epoch_at_fetch_(epoch_at_fetch),
        batch_(std::move(first)) {}

  ~RemoteCursor() override {
    if (cursor_ == 0) {
      return;  // the server kept no cursor
    }
    const std::string saved = last_error();  // a destructor reports nothing
    std::lock_guard lock(conn_->mu);
    dirproto::Header h;
    conn_->call("rocl_query_stop", Op::kQueryStop, 0, cursor_, {}, &h, nullptr);
    if (saved.empty()) {
      clear_error();
    } else {
      fail(ROCL_OK, "%s", saved.c_str());
    }
  }

  std::int64_t next(AttrList &attrs) override {
    std::lock_guard cursor_lock(mu_);
    bool fetched_now = false;  // batch_ came during this call
    for (;;) {
      if (pos_ < batch_.answers.size()) {
        if (fetched_now || still_valid()) {
          const dirproto::BatchAnswer &a = batch_.answers[pos_];
          if (attrs.fill_from(a.attrs) != ROCL_OK) {  // does not advance
            const std::string why = last_error();
            return fail(ROCL_ENOSPC, "rocl_query_next: resource %s: %s",
                        describe_gid(a.gid).c_str(), why.c_str());
          }
          last_ = a.gid;
          pos_ += 1;
          answers_ += 1;
          return static_cast<std::int64_t>(a.gid);
        }
        // Something left the directory since this batch came: ask again.
        batch_.answers.clear();
        batch_.more = true;
        pos_ = 0;
      }
      if (!batch_.more) {
        return fail(ROCL_EEND, "rocl_query_next: no more resources match (%zu answers given)",
                    answers_);
      }
      std::lock_guard lock(conn_->mu);
      const std::uint64_t epoch = epoch_ ? epoch_->counter().load(std::memory_order_acquire) : 0;
      dirproto::Batch got;
      const int rc = fetch_batch(*conn_, "rocl_query_next", pattern_, last_,
                                 batch_most(epoch_.get()), &cursor_, &got);
      if (rc != ROCL_OK) {
        return rc;
      }
      batch_ = std::move(got);
      pos_ = 0;
      epoch_at_fetch_ = epoch;
      fetched_now = true;
    }
  }

 private:
  // Whether nothing left the directory since the batch was asked for.
  bool still_valid() const {
    return epoch_ && epoch_->counter().load(std::memory_order_acquire) == epoch_at_fetch_;
  }

  std::shared_ptr<Connection> conn_;
  std::shared_ptr<EpochPage> epoch_;  // nullptr: the server shares none
  const AttrList pattern_;            // to ask again once the server's cursor is gone
  std::mutex mu_;                     // next() calls on one cursor are serialised
  std::uint64_t cursor_;              // the server's cursor id, 0: none kept
  std::uint64_t epoch_at_fetch_;      // the removal epoch read before asking for batch_
  dirproto::Batch batch_;
  std::size_t pos_ = 0;      // next answer of batch_ to give
  rocl_gid_t last_ = 0;      // the last gid returned
  std::size_t answers_ = 0;  // for messages
};

class RemoteDirectory final : public Directory {
 public:
  RemoteDirectory(std::shared_ptr<Connection> conn, std::unique_ptr<EpochPage> epoch)
      : conn_(std::move(conn)), epoch_(std::move(epoch)) {
    if (epoch_) {
      set_removal_epoch(&epoch_->counter());
    }
  }

  std::int64_t register_resource(const AttrList &attrs, rocl_gid_t context) override {
    std::lock_guard lock(conn_->mu);
    dirproto::Header h;
    const int rc =
        conn_->call("rocl_register", Op::kRegister, context, 0, attrs.bytes(), &h, nullptr);
    if (rc != ROCL_OK) {
      return rc;
    }
    if (h.gid == 0 || h.gid > static_cast<std::uint64_t>(INT64_MAX)) {
      return fail(ROCL_EPEER, "rocl_register: directory server at %s answered gid 0x%llx",
                  conn_->path().c_str(), static_cast<unsigned long long>(h.gid));
    }
    return static_cast<std::int64_t>(h.gid);
  }

  bool lost() const noexcept override { return conn_->lost(); }

  int remove(rocl_gid_t gid) override {
    std::lock_guard lock(conn_->mu);
    dirproto::Header h;
    return conn_->call("rocl_delete", Op::kRemove, gid, 0, {}, &h, nullptr);
  }

  int query(rocl_gid_t *gid, AttrList &attrs) override {
    if (gid == nullptr) {
      return fail(ROCL_EINVAL, "rocl_query: the gid pointer is NULL");
    }
    std::lock_guard lock(conn_->mu);
    dirproto::Header h;
    AttrList got(1);
    const int rc = conn_->call("rocl_query", Op::kQuery, *gid, 0, attrs.bytes(), &h, &got);
    if (rc != ROCL_OK) {
      return rc;
    }
    if (!same_shape(attrs, got) || h.gid == 0) {
      return fail(ROCL_EPEER, "rocl_query: directory server at %s answered with a bad reply",
                  conn_->path().c_str());
    }
    attrs = std::move(got);
    *gid = h.gid;
    return ROCL_OK;
  }

  std::unique_ptr<QueryCursor> query_start(const AttrList &pattern) override {
    AttrList copy = pattern;  // the cursor may have to start over with it
    std::lock_guard lock(conn_->mu);
    const std::uint64_t epoch = epoch_ ? epoch_->counter().load(std::memory_order_acquire) : 0;
    std::uint64_t cursor = 0;
    dirproto::Batch first;
    if (fetch_batch(*conn_, "rocl_query_start", copy, 0, batch_most(epoch_.get()), &cursor,
                    &first) != ROCL_OK) {
      return nullptr;
    }
    return std::make_unique<RemoteCursor>(conn_, epoch_, std::move(copy), cursor, epoch,
                                          std::move(first));
  }

  std::int64_t spawn(rocl_gid_t where, const AttrList &request, int limit_ms) override {
    std::lock_guard lock(conn_->mu);
    // The server answers within the limit (or when the host is found
    // unreachable); the reply timeout only guards against a lost server.
    conn_->set_reply_timeout(limit_ms > 0 ? limit_ms / 1000 + kReplyTimeoutSeconds : 0);
    dirproto::Header h;
    const int rc = conn_->call("rocl_spawn", Op::kSpawn, where,
                               static_cast<std::uint64_t>(limit_ms > 0 ? limit_ms : 0),
                               request.bytes(), &h, nullptr);
    conn_->set_reply_timeout(kReplyTimeoutSeconds);
    if (rc != ROCL_OK) return rc;
    if (h.gid == 0 || h.gid > static_cast<std::uint64_t>(INT64_MAX)) {
      return fail(ROCL_EPEER, "rocl_spawn: directory server at %s answered gid 0x%llx",
                  conn_->path().c_str(), static_cast<unsigned long long>(h.gid));
    }
    return static_cast<std::int64_t>(h.gid);
  }

  int remove_context(rocl_gid_t context) override {
    std::lock_guard lock(conn_->mu);
    dirproto::Header h;
    const int rc = conn_->call("remove_context", Op::kRemoveContext, context, 0, {}, &h, nullptr);
    if (rc != ROCL_OK) {
      return rc;
    }
    return h.gid > static_cast<std::uint64_t>(INT_MAX) ? INT_MAX : static_cast<int>(h.gid);
  }

 private:
  std::shared_ptr<Connection> conn_;
  // The server's removal epoch, mapped read-only; shared with the cursors.
  std::shared_ptr<EpochPage> epoch_;
};

// The removal epoch page the server passed with its reply to PROVE, mapped;
// or nullptr with the reason in *why.
std::unique_ptr<EpochPage> take_epoch_page(Connection &conn, std::uint64_t flags,
                                           std::string *why) {
  bool truncated = false;
  const int fd = conn.take_passed_fd(&truncated);
  if ((flags & dirproto::kEpochPageAttached) == 0) {
    if (fd >= 0) {
      ::close(fd);
    }
    *why = "the server has no removal epoch page";
    return nullptr;
  }
  if (fd < 0) {
    *why = truncated ? "its descriptor was dropped (MSG_CTRUNC: is the descriptor table full?)"
                     : "the server said it attached its removal epoch page, but no descriptor came";
    return nullptr;
  }
  std::string bad;
  std::unique_ptr<EpochPage> page = EpochPage::open(fd, &bad);
  if (!page) {
    *why = "the removal epoch page it passed is unusable: " + bad;
  }
  return page;
}

}  // namespace

namespace {

// "host:port" of a tcp directory address, resolved (IPv4). ROCL_OK, or
// ROCL_EINVAL with a sentence.
int resolve_tcp(const std::string &hostport, sockaddr_in *out) {
  const auto colon = hostport.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == hostport.size()) {
    return fail(ROCL_EINVAL, "connect_directory: '%s' is not tcp:HOST:PORT", hostport.c_str());
  }
  const std::string host = hostport.substr(0, colon), port = hostport.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return fail(ROCL_EINVAL, "connect_directory: cannot resolve '%s': %s", hostport.c_str(),
                rc != 0 ? ::gai_strerror(rc) : "no address");
  }
  std::memcpy(out, found->ai_addr, sizeof *out);
  ::freeaddrinfo(found);
  return ROCL_OK;
}

// A connected socket to the server at `address` (unix:PATH, a bare path, or
// tcp:HOST:PORT), with the reply timeout set; -1 + fail() otherwise.
// *where: how sentences name the server; *tcp: whether it is a tcp one.
int dial_directory(const std::string &address, std::string *where, bool *tcp) {
  *tcp = address.rfind("tcp:", 0) == 0;
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (*tcp) {
    *where = address.substr(4);
    sockaddr_in in{};
    if (resolve_tcp(*where, &in) != ROCL_OK) return -1;
    std::memcpy(&ss, &in, sizeof in);
    len = sizeof in;
  } else {
    *where = address.rfind("unix:", 0) == 0 ? address.substr(5) : address;
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    if (where->empty() || where->size() >= sizeof un.sun_path) {
      fail(ROCL_EINVAL, "connect_directory: socket path '%s' is empty or longer than %zu bytes",
           where->c_str(), sizeof un.sun_path - 1);
      return -1;
    }
    std::memcpy(un.sun_path, where->data(), where->size());
    std::memcpy(&ss, &un, sizeof un);
    len = sizeof un;
  }
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fail(ROCL_EPEER, "connect_directory(%s): socket(): %s", where->c_str(), std::strerror(errno));
    return -1;
  }
  timeval tv{kReplyTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (*tcp) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<sockaddr *>(&ss), len);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    fail(ROCL_EPEER, "connect_directory: no directory server answers on %s: %s", where->c_str(),
         std::strerror(errno));
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::unique_ptr<Directory> connect_directory(const std::string &address, const JobSecret &secret,
                                             const std::function<void(const std::string &)> &note) {
  std::string socket_path;
  bool tcp = false;
  const int fd = dial_directory(address, &socket_path, &tcp);
  if (fd < 0) return nullptr;
  const char *path = socket_path.c_str();
  auto conn = std::make_shared<Connection>(fd, socket_path);  // owns fd from here
  // HELLO: the server's challenge.
  dirproto::Header h;
  std::vector<std::byte> body;
  std::string why;
  if (!conn->read_message(&h, &body, &why)) {
    fail(ROCL_EPEER, "connect_directory(%s): waiting for the server's HELLO: %s", path,
         why.c_str());
    return nullptr;
  }
  if (h.op != static_cast<std::uint16_t>(Op::kHello) || body.size() != dirproto::kChallengeBytes) {
    fail(ROCL_EPEER, "connect_directory(%s): the server sent %s (%zu bytes) instead of HELLO", path,
         dirproto::op_name(h.op), body.size());
    return nullptr;
  }
  // PROVE: our proof and our challenge; the reply proves the server's secret.
  const JobSecret::Digest proof = secret.prove(
      dirproto::kProveLabel,
      std::span(reinterpret_cast<const std::uint8_t *>(body.data()), dirproto::kChallengeBytes));
  const JobSecret::Challenge mine = JobSecret::random_challenge();
  std::vector<std::byte> prove(dirproto::kProofBytes + dirproto::kChallengeBytes);
  std::memcpy(prove.data(), proof.data(), proof.size());
  std::memcpy(prove.data() + proof.size(), mine.data(), mine.size());
  {
    std::lock_guard lock(conn->mu);
    conn->accept_fd(true);  // the removal epoch page rides on the reply
    const int rc = conn->call("connect_directory", Op::kProve, 0, 0, prove, &h, nullptr, &body);
    conn->accept_fd(false);
    if (rc != ROCL_OK) {
      const std::string sentence = last_error();
      fail(ROCL_EPEER, "connect_directory(%s): %s", path, sentence.c_str());
      return nullptr;
    }
  }
  JobSecret::Digest theirs;
  std::memcpy(theirs.data(), body.data(), theirs.size());  // check_reply: 32 bytes
  if (!secret.verify(dirproto::kServerProveLabel, mine, theirs)) {
    fail(ROCL_EPEER,
         "connect_directory(%s): the server's job secret proof did not verify; not using it", path);
    return nullptr;
  }
  std::string no_epoch;
  std::unique_ptr<EpochPage> epoch = take_epoch_page(*conn, h.aux, &no_epoch);
  // Over tcp no descriptor can pass: no epoch is what the contract says.
  if (!epoch && !tcp) {
    const std::string sentence = "directory server at " + socket_path + ": no removal epoch (" +
                                 no_epoch +
                                 "); a route this process cached to a resource deleted since "
                                 "is found stale only when a send over it fails";
    if (note) {
      note(sentence);
    } else {
      std::fprintf(stderr, "rocl: %s\n", sentence.c_str());
    }
  }
  return std::make_unique<RemoteDirectory>(conn, std::move(epoch));
}

}  // namespace rocl::impl
