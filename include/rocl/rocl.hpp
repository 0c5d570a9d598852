// rocl.hpp - the C++ API of rocl: RAII over the C API of rocl.h.
//
// Error style, one rule: what a correct program can meet in normal running
// comes back as a value (a receive that timed out is an empty optional, a
// query without answer is an empty optional, a test that is not done is
// false); what means the program or the set-up is wrong (rocl not
// initialised, an unknown gid, a full pool) throws rocl::Error, which
// carries the ROCL_E* code and rocl_last_error()'s sentence.
//
// Ownership: Buffer is move-only and returns itself to the pool when
// destroyed; sending a Buffer&& moves it into the library (zero-copy
// hand-off); sending a span copies. No raw owning pointers cross this API.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rocl/rocl.h"

namespace rocl {

using gid_t = rocl_gid_t;
inline constexpr gid_t any_gid = ROCL_ANY_GID;
inline constexpr int any_tag = ROCL_ANY_TAG;
// Receive timeouts: forever blocks, poll only looks.
inline constexpr std::chrono::milliseconds forever{-1};
inline constexpr std::chrono::milliseconds poll{0};

class Error : public std::runtime_error {
 public:
  Error(int code, const std::string &what) : std::runtime_error(what), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

namespace detail {
[[noreturn]] inline void raise(int code) {
  const char *why = rocl_last_error();
  throw Error(code, why != nullptr && *why != '\0' ? why : rocl_strerror(code));
}
inline int check(int code) {
  if (code < 0) raise(code);
  return code;
}
inline int to_ms(std::chrono::milliseconds t) {
  return t.count() < 0 ? -1 : static_cast<int>(std::min<long long>(t.count(), 0x7fffffff));
}
struct AttrlDeleter {
  void operator()(rocl_attrl_t *a) const noexcept { rocl_kill_attrl(a); }
};
using AttrlPtr = std::unique_ptr<rocl_attrl_t, AttrlDeleter>;
}  // namespace detail

// An attribute list as a value: (name, value) pairs; a value left unset
// asks a query to fill it in (with room for `reserve` bytes).
class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<std::string, std::string>> items) {
    for (auto &[n, v] : items) set(n, v);
  }
  Attributes &set(std::string name, std::string value) {
    items_.push_back({std::move(name), std::move(value), 0});
    return *this;
  }
  Attributes &ask(std::string name, std::size_t reserve = 256) {
    items_.push_back({std::move(name), std::nullopt, reserve});
    return *this;
  }
  // The value of `name`, if present and set.
  std::optional<std::string> get(std::string_view name) const {
    for (const auto &i : items_) {
      if (i.name == name) return i.value;
    }
    return std::nullopt;
  }
  std::size_t size() const noexcept { return items_.size(); }

  // The C form (throws Error if a name is invalid or duplicated).
  detail::AttrlPtr to_c() const {
    std::size_t bytes = 64;
    for (const auto &i : items_)
      bytes += 16 + i.name.size() + (i.value ? i.value->size() : i.reserve);
    detail::AttrlPtr list(rocl_new_attrl(static_cast<int>(bytes)));
    if (!list) throw Error(ROCL_ENOMEM, "rocl: out of memory for an attribute list");
    for (const auto &i : items_) {
      detail::check(i.value ? rocl_add_attr(list.get(), i.name.c_str(), i.value->data(),
                                            static_cast<int>(i.value->size()))
                            : rocl_add_attr(list.get(), i.name.c_str(), nullptr,
                                            static_cast<int>(i.reserve)));
    }
    return list;
  }
  // Reads back the values a query filled into the C form.
  void fill_from(rocl_attrl_t *list) {
    for (auto &i : items_) {
      if (i.value) continue;
      int len = 0;
      if (void *v = rocl_get_attr(list, i.name.c_str(), &len)) {
        i.value = std::string(static_cast<const char *>(v), static_cast<std::size_t>(len));
      }
    }
  }

 private:
  struct Item {
    std::string name;
    std::optional<std::string> value;
    std::size_t reserve;
  };
  std::vector<Item> items_;
};

// This process's context. Construct one (on any thread) before using rocl;
// several Context objects share one reference-counted context.
class Context {
 public:
  Context() {
    std::int64_t g = rocl_init();
    if (g < 0) detail::raise(static_cast<int>(g));
    gid_ = static_cast<gid_t>(g);
  }
  ~Context() { rocl_exit(); }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;
  gid_t gid() const noexcept { return gid_; }

 private:
  gid_t gid_ = ROCL_NULL_GID;
};

// A registered buffer: move-only, returned to the pool on destruction.
class Buffer {
 public:
  Buffer() = default;
  // A buffer for `len` bytes; throws Error (ROCL_ENOMEM) if the pool is full.
  static Buffer get(std::size_t len) {
    void *p = rocl_bfget(len);
    if (p == nullptr)
      detail::raise(rocl_context_gid() == ROCL_NULL_GID ? ROCL_ENOINIT : ROCL_ENOMEM);
    return Buffer(p, len);
  }
  // Takes ownership of a C buffer (e.g. from rocl_recv) holding len bytes.
  static Buffer adopt(void *ptr, std::size_t len) { return Buffer(ptr, len); }

  Buffer(Buffer &&o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), len_(o.len_) {}
  Buffer &operator=(Buffer &&o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      len_ = o.len_;
    }
    return *this;
  }
  ~Buffer() { reset(); }

  std::byte *data() const noexcept { return static_cast<std::byte *>(ptr_); }
  std::size_t size() const noexcept { return len_; }  // message length
  std::size_t capacity() const noexcept { return ptr_ != nullptr ? rocl_bfsize(ptr_) : 0; }
  // Changes the message length (<= capacity()).
  void resize(std::size_t len) {
    if (len > capacity()) throw Error(ROCL_ETOOBIG, "rocl::Buffer::resize beyond capacity");
    len_ = len;
  }
  std::span<std::byte> bytes() const noexcept { return {data(), len_}; }
  std::string_view view() const noexcept { return {static_cast<const char *>(ptr_), len_}; }
  explicit operator bool() const noexcept { return ptr_ != nullptr; }
  // Gives up ownership to C code (which must rocl_bfret it).
  void *release() noexcept { return std::exchange(ptr_, nullptr); }

 private:
  Buffer(void *p, std::size_t len) : ptr_(p), len_(len) {}
  void reset() noexcept {
    if (ptr_ != nullptr) rocl_bfret(std::exchange(ptr_, nullptr));
  }
  void *ptr_ = nullptr;
  std::size_t len_ = 0;
};

// A received message: its buffer (owned), origin and tag.
struct Message {
  Buffer buffer;
  gid_t origin = ROCL_NULL_GID;
  int tag = 0;
};

// An immediate operation. Destroying a pending receive cancels it (or, if
// it completed meanwhile, frees the message).
class Request {
 public:
  Request() = default;
  explicit Request(rocl_request_t r) : req_(r) {}
  Request(Request &&o) noexcept : req_(std::exchange(o.req_, ROCL_REQUEST_NULL)) {}
  Request &operator=(Request &&o) noexcept {
    if (this != &o) {
      drop();
      req_ = std::exchange(o.req_, ROCL_REQUEST_NULL);
    }
    return *this;
  }
  ~Request() { drop(); }

  bool pending() const noexcept { return req_ != ROCL_REQUEST_NULL; }
  // True once complete; the message (for receives) is then in *out.
  bool test(Message *out = nullptr) {
    if (!pending()) return true;
    int done = 0;
    rocl_status_t st{};
    detail::check(rocl_test(&req_, &done, &st));
    if (done) take(st, out);
    return done != 0;
  }
  // Waits up to timeout; the message (empty Buffer for sends), or nullopt
  // on timeout (the request stays pending).
  std::optional<Message> wait(std::chrono::milliseconds timeout = forever) {
    if (!pending()) return Message{};
    rocl_status_t st{};
    int rc = rocl_wait(&req_, &st, detail::to_ms(timeout));
    if (rc == ROCL_ETIMEDOUT) return std::nullopt;
    detail::check(rc);
    Message m;
    take(st, &m);
    return m;
  }
  // True if cancelled before completing.
  bool cancel() {
    if (!pending()) return false;
    return rocl_cancel(&req_) == ROCL_OK;
  }

 private:
  static void take(const rocl_status_t &st, Message *out) {
    Buffer b = st.ptr != nullptr ? Buffer::adopt(st.ptr, st.len) : Buffer();
    if (out != nullptr) *out = Message{std::move(b), st.origin, st.tag};
  }
  void drop() noexcept {
    if (!pending() || rocl_cancel(&req_) == ROCL_OK) return;
    rocl_status_t st{};
    if (rocl_wait(&req_, &st, -1) == ROCL_OK && st.ptr != nullptr) rocl_bfret(st.ptr);
  }
  rocl_request_t req_ = ROCL_REQUEST_NULL;
};

// A registered resource (an end-point with attributes), deleted on
// destruction.
class Resource {
 public:
  explicit Resource(const Attributes &attrs) {
    auto list = attrs.to_c();
    std::int64_t g = rocl_register(list.get());
    if (g < 0) detail::raise(static_cast<int>(g));
    gid_ = static_cast<gid_t>(g);
  }
  Resource(Resource &&o) noexcept : gid_(std::exchange(o.gid_, ROCL_NULL_GID)) {}
  Resource &operator=(Resource &&) = delete;
  Resource(const Resource &) = delete;
  ~Resource() {
    if (gid_ != ROCL_NULL_GID) rocl_delete(gid_);
  }
  gid_t gid() const noexcept { return gid_; }

  // Zero-copy: the buffer moves into the library (and, in-process, to the
  // receiver). Throws Error on an unknown destination.
  void send(gid_t to, int tag, Buffer &&buf) {
    detail::check(rocl_bftoret(buf.data()));
    detail::check(rocl_send(gid_, to, tag, buf.data(), buf.size()));
    buf.release();
  }
  // Copies the bytes.
  void send(gid_t to, int tag, std::span<const std::byte> bytes) {
    detail::check(rocl_send(gid_, to, tag, const_cast<std::byte *>(bytes.data()), bytes.size()));
  }
  void send(gid_t to, int tag, std::string_view text) {
    send(to, tag, std::as_bytes(std::span(text.data(), text.size())));
  }
  // The oldest matching message, or nullopt if none came within timeout.
  std::optional<Message> recv(gid_t from = any_gid, int tag = any_tag,
                              std::chrono::milliseconds timeout = forever) {
    void *ptr = nullptr;
    Message m;
    std::size_t len = 0;
    int rc = rocl_recv(gid_, from, tag, &ptr, &m.origin, &m.tag, &len, detail::to_ms(timeout));
    if (rc == ROCL_ETIMEDOUT) return std::nullopt;
    detail::check(rc);
    m.buffer = Buffer::adopt(ptr, len);
    return m;
  }
  Request isend(gid_t to, int tag, Buffer &&buf) {
    rocl_request_t r = ROCL_REQUEST_NULL;
    detail::check(rocl_bftoret(buf.data()));
    detail::check(rocl_isend(gid_, to, tag, buf.data(), buf.size(), &r));
    buf.release();
    return Request(r);
  }
  Request isend(gid_t to, int tag, std::span<const std::byte> bytes) {
    rocl_request_t r = ROCL_REQUEST_NULL;
    detail::check(
        rocl_isend(gid_, to, tag, const_cast<std::byte *>(bytes.data()), bytes.size(), &r));
    return Request(r);
  }
  Request irecv(gid_t from = any_gid, int tag = any_tag) {
    rocl_request_t r = ROCL_REQUEST_NULL;
    detail::check(rocl_irecv(gid_, from, tag, &r));
    return Request(r);
  }

 private:
  gid_t gid_ = ROCL_NULL_GID;
};

// A directory answer: the resource's gid and the attributes asked for.
struct Found {
  gid_t gid;
  Attributes attributes;
};

// The first (lowest gid) resource matching the set attributes of pattern,
// with its unset attributes filled in; nullopt if none.
inline std::optional<Found> query(Attributes pattern) {
  auto list = pattern.to_c();
  gid_t gid = ROCL_NULL_GID;
  int rc = rocl_query(&gid, list.get());
  if (rc == ROCL_ENOTFOUND) return std::nullopt;
  detail::check(rc);
  pattern.fill_from(list.get());
  return Found{gid, std::move(pattern)};
}

// Every resource matching pattern, in increasing gid order.
inline std::vector<Found> query_all(const Attributes &pattern) {
  auto list = pattern.to_c();
  rocl_handler_t *h = rocl_query_start(list.get());
  if (h == nullptr) detail::raise(ROCL_EINVAL);
  std::vector<Found> out;
  for (;;) {
    auto answer = pattern.to_c();
    std::int64_t g = rocl_query_next(h, answer.get());
    if (g == ROCL_EEND) break;
    if (g < 0) {
      rocl_query_stop(h);
      detail::raise(static_cast<int>(g));
    }
    Attributes filled = pattern;
    filled.fill_from(answer.get());
    out.push_back(Found{static_cast<gid_t>(g), std::move(filled)});
  }
  rocl_query_stop(h);
  return out;
}

// Waits until at least `count` resources match pattern (rocl_query_wait:
// peers that start in any order, on any host), then returns every match,
// in increasing gid order. Throws rocl::Error (ROCL_ETIMEDOUT saying how
// many matched) if fewer than count match within timeout (negative: no
// limit).
inline std::vector<Found> query_wait(const Attributes &pattern, int count,
                                     std::chrono::milliseconds timeout) {
  auto list = pattern.to_c();
  detail::check(rocl_query_wait(list.get(), count, detail::to_ms(timeout)));
  return query_all(pattern);
}

// ---- CoR domains (rocl.h, "CoR domains") ----------------------------------

inline constexpr int any_index = ROCL_ANY_INDEX;

// A message received in a domain: its buffer (owned), the sender's index
// (any_index: no member) and tag.
struct DomainMessage {
  Buffer buffer;
  int from_index = ROCL_ANY_INDEX;
  int tag = 0;
};

// A CoR domain: a message context and an ordered, named group of members.
// One made by create() is deleted when the object is destroyed; one found
// (find, of) belongs to whoever created it. Look-ups that find nothing are
// empty optionals; everything else that fails throws rocl::Error.
class Domain {
 public:
  static Domain create(const std::string &name, gid_t parent = ROCL_NULL_GID) {
    gid_t g = ROCL_NULL_GID;
    detail::check(rocl_domain_create(parent, name.empty() ? nullptr : name.c_str(), &g));
    return Domain(g, true);
  }
  // The domain named name under parent, waiting up to timeout for it.
  static std::optional<Domain> find(const std::string &name, gid_t parent = ROCL_NULL_GID,
                                    std::chrono::milliseconds timeout = poll) {
    gid_t g = ROCL_NULL_GID;
    const int rc = rocl_domain_find(name.c_str(), parent, detail::to_ms(timeout), &g);
    if (rc == ROCL_ENOTFOUND) return std::nullopt;
    detail::check(rc);
    return Domain(g, false);
  }
  // The domain whose gid is g (not deleted by this object).
  static Domain of(gid_t g) { return Domain(g, false); }

  Domain(Domain &&o) noexcept : gid_(std::exchange(o.gid_, ROCL_NULL_GID)), owned_(o.owned_) {}
  Domain &operator=(Domain &&o) noexcept {
    if (this != &o) {
      drop();
      gid_ = std::exchange(o.gid_, ROCL_NULL_GID);
      owned_ = o.owned_;
    }
    return *this;
  }
  Domain(const Domain &) = delete;
  Domain &operator=(const Domain &) = delete;
  ~Domain() { drop(); }

  gid_t gid() const noexcept { return gid_; }
  std::uint32_t context() const {
    std::uint32_t c = 0;
    detail::check(rocl_domain_context(gid_, &c));
    return c;
  }
  // The member's index; local ("": none) must be free in the domain.
  int join(gid_t member, const std::string &local = {}) {
    int index = -1;
    detail::check(rocl_domain_join(gid_, member, local.empty() ? nullptr : local.c_str(), &index));
    return index;
  }
  void leave(gid_t member) { detail::check(rocl_domain_leave(gid_, member)); }
  std::optional<gid_t> lookup(const std::string &local) const {
    gid_t g = ROCL_NULL_GID;
    const int rc = rocl_domain_lookup(gid_, local.c_str(), &g);
    return found(rc, g);
  }
  std::optional<gid_t> member(int index) const {
    gid_t g = ROCL_NULL_GID;
    const int rc = rocl_domain_member(gid_, index, &g);
    return found(rc, g);
  }
  std::optional<int> index_of(gid_t member) const {
    int index = -1;
    const int rc = rocl_domain_index(gid_, member, &index);
    return found(rc, index);
  }
  int size() const {
    int n = 0;
    detail::check(rocl_domain_size(gid_, &n));
    return n;
  }
  // This process's soft-port in the domain ("" undoes it).
  void port(const std::string &network) {
    detail::check(rocl_domain_port(gid_, network.empty() ? nullptr : network.c_str()));
  }

  // Copies the bytes to the member at to_index.
  void send(gid_t from, int to_index, int tag, std::span<const std::byte> bytes) {
    detail::check(
        rocl_dsend(gid_, from, to_index, tag, const_cast<std::byte *>(bytes.data()), bytes.size()));
  }
  void send(gid_t from, int to_index, int tag, std::string_view text) {
    send(from, to_index, tag, std::as_bytes(std::span(text.data(), text.size())));
  }
  // Zero-copy where the way allows: the buffer moves into the library.
  void send(gid_t from, int to_index, int tag, Buffer &&buf) {
    detail::check(rocl_bftoret(buf.data()));
    detail::check(rocl_dsend(gid_, from, to_index, tag, buf.data(), buf.size()));
    buf.release();
  }
  // A copy to every other member; how many it reached.
  int cast(gid_t from, int tag, std::span<const std::byte> bytes) {
    return detail::check(
        rocl_dcast(gid_, from, tag, const_cast<std::byte *>(bytes.data()), bytes.size()));
  }
  int cast(gid_t from, int tag, std::string_view text) {
    return cast(from, tag, std::as_bytes(std::span(text.data(), text.size())));
  }
  // The oldest message to me from the member at from_index (any_index:
  // anyone) with tag, or nullopt if none came within timeout.
  std::optional<DomainMessage> recv(gid_t me, int from_index = any_index, int tag = any_tag,
                                    std::chrono::milliseconds timeout = forever) {
    void *ptr = nullptr;
    std::size_t len = 0;
    DomainMessage m;
    const int rc = rocl_drecv(gid_, me, from_index, tag, &ptr, &m.from_index, &m.tag, &len,
                              detail::to_ms(timeout));
    if (rc == ROCL_ETIMEDOUT) return std::nullopt;
    detail::check(rc);
    m.buffer = Buffer::adopt(ptr, len);
    return m;
  }

 private:
  Domain(gid_t g, bool owned) noexcept : gid_(g), owned_(owned) {}
  void drop() noexcept {
    if (owned_ && gid_ != ROCL_NULL_GID) rocl_domain_delete(gid_);
    gid_ = ROCL_NULL_GID;
  }
  // rc's value, computed before value is read (arguments have no order).
  template <class T>
  static std::optional<T> found(int rc, T value) {
    if (rc == ROCL_ENOTFOUND) return std::nullopt;
    detail::check(rc);
    return value;
  }
  gid_t gid_ = ROCL_NULL_GID;
  bool owned_ = false;
};

// A function other processes may start in this one (rocl_export): it runs
// in a new thread with the gid of that thread's own resource and a copy of
// the spawner's argument. Throws rocl::Error.
using ThreadFunction = std::function<void(gid_t self, std::span<const std::byte> arg)>;
namespace detail {
// The exported functions by name: each stays until the same name is
// exported again in a later context (rocl_exit waited for its threads).
inline std::map<std::string, std::unique_ptr<ThreadFunction>> &exported_functions() {
  static std::map<std::string, std::unique_ptr<ThreadFunction>> functions;
  return functions;
}
inline std::mutex &exported_mutex() {
  static std::mutex mutex;
  return mutex;
}
}  // namespace detail
inline void export_thread(const std::string &name, ThreadFunction fn) {
  auto kept = std::make_unique<ThreadFunction>(std::move(fn));
  std::lock_guard lock(detail::exported_mutex());
  detail::check(rocl_export(
      name.c_str(),
      [](rocl_gid_t self, const void *arg, std::size_t len, void *user) {
        (*static_cast<ThreadFunction *>(user))(
            self, std::span<const std::byte>(static_cast<const std::byte *>(arg), len));
      },
      kept.get()));
  detail::exported_functions()[name] = std::move(kept);
}

// Starts the function exported as `name` in the process whose context gid
// is `process` (ROCL_ANY_GID: any that exports it) and returns the new
// thread's resource gid (rocl_spawn_thread). Throws rocl::Error.
inline gid_t spawn_thread(gid_t process, const std::string &name,
                          std::span<const std::byte> arg = {},
                          std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const std::int64_t g =
      rocl_spawn_thread(process, name.c_str(), arg.data(), arg.size(), detail::to_ms(timeout));
  if (g < 0) detail::raise(static_cast<int>(g));
  return static_cast<gid_t>(g);
}

// Starts the program argv[0] with argv on a host of the job ("any": the
// hosts that take spawns in turn) and returns the new process's context
// gid once its rocl_init registered it (rocl_spawn). Throws rocl::Error.
inline gid_t spawn(const std::string &host, const std::vector<std::string> &argv,
                   std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  std::vector<const char *> args;
  args.reserve(argv.size() + 1);
  for (const std::string &a : argv) args.push_back(a.c_str());
  args.push_back(nullptr);
  const std::int64_t g = rocl_spawn(host.c_str(), args.data(), detail::to_ms(timeout));
  if (g < 0) detail::raise(static_cast<int>(g));
  return static_cast<gid_t>(g);
}

// As spawn, on the host of the directory server that issued `where` (a
// {type=rocl-host} resource, or any resource of the job).
inline gid_t spawn_at(gid_t where, const std::vector<std::string> &argv,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  std::vector<const char *> args;
  args.reserve(argv.size() + 1);
  for (const std::string &a : argv) args.push_back(a.c_str());
  args.push_back(nullptr);
  const std::int64_t g = rocl_spawn_at(where, args.data(), detail::to_ms(timeout));
  if (g < 0) detail::raise(static_cast<int>(g));
  return static_cast<gid_t>(g);
}

// The context gid of the process that spawned this one, 0 for none.
inline gid_t parent() noexcept {
  return rocl_parent();
}

}  // namespace rocl
