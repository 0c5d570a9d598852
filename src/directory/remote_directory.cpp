// remote_directory.cpp - Directory over the directory server's socket (see
// remote_directory.hpp and dir_protocol.hpp).
#include "directory/remote_directory.hpp"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
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
          *why = "no reply within " + std::to_string(kReplyTimeoutSeconds) + " s";
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
      if (reply->status == ROCL_EPEER) {  // the server drops us after this
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

  std::mutex mu;

 private:
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
    ::shutdown(fd_, SHUT_RDWR);
    return fail(ROCL_EPEER, "%s: directory server at %s: %s", what, path_.c_str(), lost_.c_str());
  }

  int fd_;
  std::string path_;
  std::string lost_;  // why the connection is unusable ("" while it is fine)
  bool accept_fd_ = false;
  int passed_fd_ = -1;
  bool fd_truncated_ = false;
};

// A reply's list must be the request's list, answered.
bool same_shape(const AttrList &sent, const AttrList &got) {
  return sent.count() == got.count() && sent.capacity() == got.capacity();
}

class RemoteCursor final : public QueryCursor {
 public:
  RemoteCursor(std::shared_ptr<Connection> conn, std::uint64_t id)
      : conn_(std::move(conn)), id_(id) {}

  ~RemoteCursor() override {
    const std::string saved = last_error();  // a destructor reports nothing
    std::lock_guard lock(conn_->mu);
    dirproto::Header h;
    conn_->call("rocl_query_stop", Op::kQueryStop, 0, id_, {}, &h, nullptr);
    if (saved.empty()) {
      clear_error();
    } else {
      fail(ROCL_OK, "%s", saved.c_str());
    }
  }

  std::int64_t next(AttrList &attrs) override {
    std::lock_guard lock(conn_->mu);
    dirproto::Header h;
    AttrList got(1);
    const int rc = conn_->call("rocl_query_next", Op::kQueryNext, 0, id_, attrs.bytes(), &h, &got);
    if (rc != ROCL_OK) {
      return rc;
    }
    if (!same_shape(attrs, got) || h.gid == 0 || h.gid > static_cast<std::uint64_t>(INT64_MAX)) {
      return fail(ROCL_EPEER, "rocl_query_next: directory server at %s answered with a bad reply",
                  conn_->path().c_str());
    }
    attrs = std::move(got);
    return static_cast<std::int64_t>(h.gid);
  }

 private:
  std::shared_ptr<Connection> conn_;
  std::uint64_t id_;
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
    std::lock_guard lock(conn_->mu);
    dirproto::Header h;
    if (conn_->call("rocl_query_start", Op::kQueryStart, 0, 0, pattern.bytes(), &h, nullptr) !=
        ROCL_OK) {
      return nullptr;
    }
    return std::make_unique<RemoteCursor>(conn_, h.aux);
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
  std::unique_ptr<EpochPage> epoch_;  // the server's removal epoch, mapped read-only
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

std::unique_ptr<Directory> connect_directory(const std::string &address, const JobSecret &secret,
                                             const std::function<void(const std::string &)> &note) {
  // ROCL_DIRECTORY is written unix:PATH; a bare path is accepted too.
  const std::string socket_path = address.rfind("unix:", 0) == 0 ? address.substr(5) : address;
  const char *path = socket_path.c_str();
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof sa.sun_path) {
    fail(ROCL_EINVAL, "connect_directory: socket path '%s' is empty or longer than %zu bytes", path,
         sizeof sa.sun_path - 1);
    return nullptr;
  }
  std::memcpy(sa.sun_path, socket_path.data(), socket_path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fail(ROCL_EPEER, "connect_directory(%s): socket(): %s", path, std::strerror(errno));
    return nullptr;
  }
  auto conn = std::make_shared<Connection>(fd, socket_path);  // owns fd from here
  timeval tv{kReplyTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    fail(ROCL_EPEER, "connect_directory: no directory server answers on %s: %s", path,
         std::strerror(errno));
    return nullptr;
  }
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
  if (!epoch) {
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
