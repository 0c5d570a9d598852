// rma_agent.cpp - one-sided operations as messages (win.hpp): the target
// side, a thread per process (the agent) that applies requests to the
// exposed memory of every message window of its process, and the origin
// side, the Access that sends them.
//
// Per-pair order carries the semantics: an origin's requests to one agent
// are sent from the origin window's resource and arrive in order, so the
// answer to a flush or an unlock, sent after every earlier request was
// applied, completes them all; answers to gets travel the same way back,
// so they are in place when the flush's answer is.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "reductions.hpp"
#include "rma_wire.hpp"

namespace rmpi {
namespace {

using namespace wire;

// Data longer than this travels in a message of its own, lent from the
// origin's memory (and read by the target's agent straight into the
// window), instead of inline in the request.
constexpr std::size_t kInlineMax = 8192;

bool refuse(std::string *why, const std::string &what) {
  *why = what;
  return false;
}

// The rest of an accumulate's checks (decode checked the bytes), against
// this process's predefined types: the type index names one, the op is
// defined on it, the target elements are made of it.
bool check_types(const Header &h, const Layout &l, std::string *why) {
  if (h.kind != kAccumulate && h.kind != kCompareSwap) return true;
  if (h.basic < 0) return true;
  const MPI_Datatype basic = basic_at(h.basic);
  if (basic == nullptr) return refuse(why, "type index " + std::to_string(h.basic) + " is unknown");
  if (h.op != kReplace && h.op != kNoOp &&
      (basic->reducer == nullptr || basic->reducer(h.op) == nullptr)) {
    return refuse(why, std::string(op_name(h.op)) + " is not defined on type index " +
                           std::to_string(h.basic));
  }
  if (l.packed % basic->packed != 0) {
    return refuse(why, "an element of " + std::to_string(l.packed) +
                           " bytes is not made of the accumulate's type");
  }
  return true;
}

// What one rank exposes at its agent.
struct Exposure {
  char *base = nullptr;
  MPI_Aint size = 0;
  bool dynamic = false;
  std::mutex regions_lock;  // attach and detach run on user threads
  std::map<std::uintptr_t, MPI_Aint> regions;
  // Agent thread only: the lock and the first error per origin since its
  // last flush or unlock.
  int shared = 0;
  bool exclusive = false;
  struct Waiter {
    rocl_gid_t origin;
    std::uint32_t reply;
    bool exclusive;
  };
  std::deque<Waiter> waiting;
  std::map<rocl_gid_t, std::string> errors;

  // Where [offset + low, offset + high) lies in this process, or nullptr.
  char *resolve(MPI_Aint offset, const Layout &l, int count) {
    MPI_Aint lo = 0, hi = 0;
    if (__builtin_add_overflow(offset, l.low(count), &lo) ||
        __builtin_add_overflow(offset, l.high(count), &hi)) {
      return nullptr;
    }
    if (!dynamic) {
      return lo >= 0 && hi <= size && lo <= hi ? base + offset : nullptr;
    }
    std::lock_guard guard(regions_lock);
    auto it = regions.upper_bound(std::uintptr_t(lo));
    if (it == regions.begin()) return nullptr;
    --it;
    const MPI_Aint start = MPI_Aint(it->first);
    return hi <= start + it->second ? reinterpret_cast<char *>(offset) : nullptr;
  }
  bool grantable(bool want_exclusive) const {
    return !exclusive && (want_exclusive ? shared == 0 : true);
  }
};

class Agent {
 public:
  static Agent &get() {
    static Agent agent;
    return agent;
  }
  // Starts the thread on first use; the agent's resource (0 on failure).
  rocl_gid_t start();
  void stop();
  std::uint32_t expose(std::shared_ptr<Exposure> e) {
    std::lock_guard guard(lock_);
    const std::uint32_t key = next_key_++;
    exposures_[key] = std::move(e);
    return key;
  }
  void withdraw(std::uint32_t key) {
    std::lock_guard guard(lock_);
    exposures_.erase(key);
  }

 private:
  void run();
  void serve(const rocl_status_t &st);
  void apply(Exposure &e, const Request &r, rocl_gid_t origin);
  void answer(rocl_gid_t origin, std::uint32_t reply, const void *p, std::size_t n, unsigned flags);
  void answer_status(Exposure *e, rocl_gid_t origin, std::uint32_t reply);
  void lend(rocl_gid_t origin, std::uint32_t reply, const char *p, std::size_t n);
  void reap(bool all);
  std::shared_ptr<Exposure> find(std::uint32_t key) {
    std::lock_guard guard(lock_);
    const auto it = exposures_.find(key);
    return it == exposures_.end() ? nullptr : it->second;
  }
  void fail(Exposure *e, rocl_gid_t origin, const Request &r, const std::string &why);

  std::mutex lock_;
  std::map<std::uint32_t, std::shared_ptr<Exposure>> exposures_;
  std::uint32_t next_key_ = 1;
  rocl_gid_t gid_ = ROCL_NULL_GID;
  std::thread thread_;
  std::vector<rocl_request_t> lent_;  // answers sent from window memory
};

rocl_gid_t Agent::start() {
  std::lock_guard guard(lock_);
  if (gid_ != ROCL_NULL_GID) return gid_;
  rocl_attrl_t *a = rocl_new_attrl(128);
  rocl_add_attr(a, "type", "mpi-rma", 7);
  const std::int64_t g = rocl_register(a);
  rocl_kill_attrl(a);
  if (g <= 0) return ROCL_NULL_GID;
  gid_ = rocl_gid_t(g);
  thread_ = std::thread([this] { run(); });
  return gid_;
}

void Agent::stop() {
  rocl_gid_t gid;
  {
    std::lock_guard guard(lock_);
    gid = gid_;
  }
  if (gid == ROCL_NULL_GID) return;
  rocl_sendx(gid, gid, kStop, kRequestDomain, 0, nullptr, 0);
  thread_.join();
  rocl_delete(gid);
  std::lock_guard guard(lock_);
  gid_ = ROCL_NULL_GID;
}

void Agent::run() {
  for (;;) {
    rocl_status_t st;
    const int rc = rocl_recvx(gid_, ROCL_ANY_GID, ROCL_ANY_TAG, kRequestDomain, nullptr, 0, &st,
                              lent_.empty() ? -1 : 1);
    if (rc == ROCL_ETIMEDOUT) {
      reap(false);
      continue;
    }
    if (rc != ROCL_OK) {
      std::fprintf(stderr, "rocl MPI: the one-sided agent stops: %s\n", rocl_last_error());
      break;
    }
    if (st.tag == kStop && st.origin == gid_) {
      rocl_bfret(st.ptr);
      break;
    }
    serve(st);
    rocl_bfret(st.ptr);
    if (!lent_.empty()) reap(false);
  }
  reap(true);
}

void Agent::reap(bool all) {
  for (std::size_t k = 0; k < lent_.size();) {
    int done = 0;
    rocl_status_t st;
    if (all) {
      rocl_wait(&lent_[k], &st, -1);
      done = 1;
    } else {
      rocl_test(&lent_[k], &done, &st);
    }
    if (done != 0) {
      lent_[k] = lent_.back();
      lent_.pop_back();
    } else {
      ++k;
    }
  }
}

void Agent::answer(rocl_gid_t origin, std::uint32_t reply, const void *p, std::size_t n,
                   unsigned flags) {
  const int rc =
      rocl_sendx(gid_, origin, int(reply), kReplyDomain, flags, const_cast<void *>(p), n);
  if (rc != ROCL_OK && rc != ROCL_EPEER && rc != ROCL_EBADGID) {
    std::fprintf(stderr, "rocl MPI: the one-sided agent cannot answer %llx: %s\n",
                 static_cast<unsigned long long>(origin), rocl_last_error());
  }
}

void Agent::lend(rocl_gid_t origin, std::uint32_t reply, const char *p, std::size_t n) {
  rocl_request_t req = ROCL_REQUEST_NULL;
  const int rc =
      rocl_isendx_lend(gid_, origin, int(reply), kReplyDomain, 0, const_cast<char *>(p), n, &req);
  if (rc == ROCL_OK && req != ROCL_REQUEST_NULL) lent_.push_back(req);
  if (rc != ROCL_OK) answer(origin, reply, nullptr, 0, kFailed);
}

// The answer to a flush or unlock: 0 and nothing, or the first error since
// the last one, as text.
void Agent::answer_status(Exposure *e, rocl_gid_t origin, std::uint32_t reply) {
  std::string why;
  if (e == nullptr) {
    why = "the target has no such window (freed?)";
  } else if (const auto it = e->errors.find(origin); it != e->errors.end()) {
    why = std::move(it->second);
    e->errors.erase(it);
  }
  answer(origin, reply, why.data(), why.size(), why.empty() ? 0 : kFailed);
}

void Agent::fail(Exposure *e, rocl_gid_t origin, const Request &r, const std::string &why) {
  if (e != nullptr) e->errors.emplace(origin, why);  // the first one counts
  if (r.h.reply != 0 && r.h.kind != kFlush && r.h.kind != kUnlock) {
    answer(origin, r.h.reply, nullptr, 0, kFailed);
  }
}

void Agent::serve(const rocl_status_t &st) {
  Request r;
  std::string why;
  if (st.tag == kData) {
    std::fprintf(stderr,
                 "rocl MPI: the one-sided agent dropped %zu bytes of data from %llx that "
                 "no request announced\n",
                 st.len, static_cast<unsigned long long>(st.origin));
    return;
  }
  if (!decode(static_cast<const char *>(st.ptr), st.len, &r, &why) ||
      !check_types(r.h, r.layout, &why) || r.h.kind != st.tag) {
    if (why.empty()) why = "the request's tag is not its kind";
    std::fprintf(stderr, "rocl MPI: the one-sided agent rejected a request from %llx: %s\n",
                 static_cast<unsigned long long>(st.origin), why.c_str());
    // The origin learns it from the answer it waits for, if any.
    if (st.len >= sizeof(Header) && r.h.reply != 0)
      answer(st.origin, r.h.reply, nullptr, 0, kFailed);
    return;
  }
  const std::shared_ptr<Exposure> e = find(r.h.key);
  if (e == nullptr) {
    fail(nullptr, st.origin, r,
         "window key " + std::to_string(r.h.key) + " is not exposed here (freed?)");
    if (r.h.kind == kFlush || r.h.kind == kUnlock) answer_status(nullptr, st.origin, r.h.reply);
    if ((r.h.flags & kSeparateData) != 0) {  // take the data message off the queue
      rocl_status_t skip;
      rocl_recvx(gid_, st.origin, kData, kRequestDomain, nullptr, 0, &skip, -1);
      rocl_bfret(skip.ptr);
    }
    return;
  }
  apply(*e, r, st.origin);
}

void Agent::apply(Exposure &e, const Request &r, rocl_gid_t origin) {
  const Header &h = r.h;
  switch (h.kind) {
    case kLock:
      if (e.waiting.empty() && e.grantable((h.flags & kExclusive) != 0)) {
        ((h.flags & kExclusive) != 0 ? e.exclusive = true : (++e.shared, true));
        answer(origin, h.reply, nullptr, 0, 0);
      } else {
        e.waiting.push_back({origin, h.reply, (h.flags & kExclusive) != 0});
      }
      return;
    case kUnlock:
      if (e.exclusive) {
        e.exclusive = false;
      } else if (e.shared > 0) {
        --e.shared;
      }
      answer_status(&e, origin, h.reply);
      while (!e.waiting.empty() && e.grantable(e.waiting.front().exclusive)) {
        const Exposure::Waiter w = e.waiting.front();
        e.waiting.pop_front();
        (w.exclusive ? e.exclusive = true : (++e.shared, true));
        answer(w.origin, w.reply, nullptr, 0, 0);
      }
      return;
    case kFlush:
      answer_status(&e, origin, h.reply);
      return;
    default:
      break;
  }
  const int count = int(h.count);
  char *at = e.resolve(MPI_Aint(h.offset), r.layout, count);
  std::vector<char> separate;
  const char *data = r.data;
  if ((h.flags & kSeparateData) != 0) {
    // The next message from this origin: straight into the window when the
    // target layout is one contiguous run and the put lands in range.
    const bool straight = at != nullptr && h.kind == kPut && r.layout.blocks.size() == 1 &&
                          MPI_Aint(r.layout.packed) == r.layout.extent;
    char *into = straight ? at + r.layout.blocks[0].disp : nullptr;
    if (!straight) {
      separate.resize(h.data_len);
      into = separate.data();
    }
    rocl_status_t st;
    const int rc = rocl_recvx(gid_, origin, kData, kRequestDomain, into, h.data_len, &st, -1);
    if (rc != ROCL_OK || st.len != h.data_len) {
      fail(&e, origin, r, rc != ROCL_OK ? rocl_last_error() : "the data of a put was cut short");
      return;
    }
    if (straight) return;
    data = separate.data();
  }
  if (at == nullptr) {
    fail(&e, origin, r,
         "the target range at offset " + std::to_string(h.offset) + " (" +
             std::to_string(r.layout.high(count) - r.layout.low(count)) +
             " bytes) is outside the window" + (e.dynamic ? "'s attached memory" : ""));
    return;
  }
  const std::size_t bytes = std::size_t(count) * r.layout.packed;
  switch (h.kind) {
    case kPut:
      write_elements(at, count, r.layout, data);
      return;
    case kGet:
      if (r.layout.blocks.size() == 1 && MPI_Aint(r.layout.packed) == r.layout.extent &&
          bytes >= kInlineMax) {
        lend(origin, h.reply, at + r.layout.blocks[0].disp, bytes);
      } else {
        std::vector<char> out(bytes);
        read_elements(at, count, r.layout, out.data());
        answer(origin, h.reply, out.data(), out.size(), 0);
      }
      return;
    case kAccumulate: {
      std::vector<char> old(h.reply != 0 ? bytes : 0);
      accumulate_elements(at, count, r.layout, h.op, basic_at(h.basic), data,
                          h.reply != 0 ? old.data() : nullptr);
      if (h.reply != 0) answer(origin, h.reply, old.data(), old.size(), 0);
      return;
    }
    case kCompareSwap: {
      std::vector<char> old(bytes);
      read_elements(at, 1, r.layout, old.data());
      if (std::memcmp(old.data(), data + bytes, bytes) == 0) write_elements(at, 1, r.layout, data);
      answer(origin, h.reply, old.data(), old.size(), 0);
      return;
    }
    default:
      return;
  }
}

// ---- the origin's side ------------------------------------------------------

class MessageAccess final : public Access {
 public:
  MessageAccess(MPI_Win win, std::vector<rocl_gid_t> agents, std::vector<std::uint32_t> keys,
                std::shared_ptr<Exposure> mine, std::uint32_t my_key)
      : win_(win),
        agents_(std::move(agents)),
        keys_(std::move(keys)),
        dirty_(agents_.size(), 0),
        mine_(std::move(mine)),
        my_key_(my_key) {}
  ~MessageAccess() override { Agent::get().withdraw(my_key_); }

  int put(int target, MPI_Aint offset, int count, const Layout &l, const char *data) override {
    const std::size_t bytes = std::size_t(count) * l.packed;
    Header h = header(target, kPut, offset, count, l, bytes);
    return send(target, h, l, data, bytes, nullptr);
  }
  int get(int target, MPI_Aint offset, int count, const Layout &l, Result r) override {
    Header h = header(target, kGet, offset, count, l, 0);
    return send(target, h, l, nullptr, 0, &r);
  }
  int accumulate(int target, MPI_Aint offset, int count, const Layout &l, int builtin,
                 MPI_Datatype basic, const char *data, Result r) override {
    const std::size_t bytes = builtin == kNoOp ? 0 : std::size_t(count) * l.packed;
    Header h = header(target, kAccumulate, offset, count, l, bytes);
    h.op = std::uint8_t(builtin);
    h.basic = std::int8_t(basic != nullptr ? basic_index(basic) : -1);
    return send(target, h, l, data, bytes, r.into != nullptr ? &r : nullptr);
  }
  int compare_and_swap(int target, MPI_Aint offset, MPI_Datatype t, const char *data,
                       const char *compare, Result r) override {
    const Layout l = Layout::of(t);
    std::vector<char> both(2 * t->packed);
    std::memcpy(both.data(), data, t->packed);
    std::memcpy(both.data() + t->packed, compare, t->packed);
    Header h = header(target, kCompareSwap, offset, 1, l, both.size());
    h.op = kReplace;
    h.basic = std::int8_t(basic_index(t));
    return send(target, h, l, both.data(), both.size(), &r);
  }
  int lock(int target, bool exclusive) override {
    Header h = header(target, kLock, 0, 0, Layout{}, 0);
    h.flags = exclusive ? kExclusive : 0;
    return control(target, h, "MPI_Win_lock");
  }
  int unlock(int target) override {
    Header h = header(target, kUnlock, 0, 0, Layout{}, 0);
    return control(target, h, "MPI_Win_unlock");
  }
  int flush(int target) override {
    {
      std::lock_guard guard(lock_);
      if (dirty_[target] == 0) return MPI_SUCCESS;
    }
    Header h = header(target, kFlush, 0, 0, Layout{}, 0);
    return control(target, h, "MPI_Win_flush");
  }
  int flush_all() override {
    for (int t = 0; t < int(agents_.size()); ++t) {
      if (int rc = flush(t)) return rc;
    }
    return MPI_SUCCESS;
  }
  int sync_local() override {
    Header h = header(win_->comm->rank, kFlush, 0, 0, Layout{}, 0);
    return control(win_->comm->rank, h, "window synchronisation");
  }
  int attach(void *base, MPI_Aint size) override {
    std::lock_guard guard(mine_->regions_lock);
    mine_->regions[std::uintptr_t(base)] = size;
    return MPI_SUCCESS;
  }
  int detach(const void *base) override {
    std::lock_guard guard(mine_->regions_lock);
    return mine_->regions.erase(std::uintptr_t(base)) == 1
               ? MPI_SUCCESS
               : fail(win_->comm, MPI_ERR_RMA_ATTACH, "MPI_Win_detach",
                      "%p is not the start of memory attached to this window", base);
  }

 private:
  struct Pending {
    int target;
    rocl_request_t req;
    Result result;
    std::size_t expect;
  };
  Header header(int target, std::uint8_t kind, MPI_Aint offset, int count, const Layout &l,
                std::size_t data_len) {
    Header h;
    h.key = keys_[target];
    h.kind = kind;
    h.count = std::uint32_t(count);
    h.nblocks = std::uint32_t(l.blocks.size());
    h.extent = l.extent;
    h.offset = offset;
    h.data_len = data_len;
    return h;
  }
  std::uint32_t next_reply() {
    next_reply_ = next_reply_ % (ROCL_TAG_MAX - 1) + 1;
    return next_reply_;
  }
  // Sends a request, posting the receive of its answer first (r).
  int send(int target, Header &h, const Layout &l, const char *data, std::size_t bytes, Result *r) {
    std::lock_guard guard(lock_);
    const rocl_gid_t self = win_->comm->self;
    if (r != nullptr) {
      h.reply = next_reply();
      const std::size_t expect = std::size_t(h.count) * l.packed;
      rocl_request_t req = ROCL_REQUEST_NULL;
      const int rc =
          rocl_irecvx(self, agents_[target], int(h.reply), kReplyDomain, r->into, expect, &req);
      if (rc != ROCL_OK) return fail_rocl(win_->comm, rc, "one-sided operation");
      pending_.push_back({target, req, std::move(*r), expect});
    }
    const bool separate = bytes > kInlineMax;
    if (separate) h.flags |= kSeparateData;
    std::vector<char> msg = encode(h, l, data, separate ? 0 : bytes);
    int rc = rocl_sendx(self, agents_[target], h.kind, kRequestDomain, 0, msg.data(), msg.size());
    if (rc == ROCL_OK && separate) {
      rocl_request_t req = ROCL_REQUEST_NULL;
      rc = rocl_isendx_lend(self, agents_[target], kData, kRequestDomain, 0,
                            const_cast<char *>(data), bytes, &req);
      if (rc == ROCL_OK && req != ROCL_REQUEST_NULL) lent_.push_back(req);
    }
    if (rc != ROCL_OK) return fail_rocl(win_->comm, rc, "one-sided operation");
    dirty_[target] = 1;
    return MPI_SUCCESS;
  }
  // A request answered with a status; then every result from target.
  //
  // Threads of one process may flush at once: a flush completes the
  // results it takes (the unpacking of other threads' gets included)
  // before another starts, so that no thread returns from its flush while
  // its results are still being written by another's.
  int control(int target, Header &h, const char *who) {
    std::unique_lock completing(completing_, std::defer_lock);
    if (h.kind != kLock) completing.lock();
    rocl_gid_t self;
    {
      std::lock_guard guard(lock_);
      h.reply = next_reply();
      self = win_->comm->self;
      // Requests sent from now on need a flush of their own.
      if (h.kind != kLock) dirty_[target] = 0;
      std::vector<char> msg = encode(h, Layout{}, nullptr, 0);
      const int rc =
          rocl_sendx(self, agents_[target], h.kind, kRequestDomain, 0, msg.data(), msg.size());
      if (rc != ROCL_OK) return fail_rocl(win_->comm, rc, who);
    }
    char why[MPI_MAX_ERROR_STRING - 128];
    rocl_status_t st;
    const int rc =
        rocl_recvx(self, agents_[target], int(h.reply), kReplyDomain, why, sizeof why - 1, &st, -1);
    if (rc != ROCL_OK) return fail_rocl(win_->comm, rc, who);
    const int done = h.kind == kLock ? MPI_SUCCESS : finish(target, who);
    if ((st.flags & kFailed) != 0) {
      why[std::min(st.len, sizeof why - 1)] = '\0';
      return fail(win_->comm, MPI_ERR_RMA_RANGE, who, "rank %d refused an operation: %s", target,
                  why);
    }
    return done;
  }
  // Completes every result from target (after the flush's answer: they
  // are in) and the lent sends.
  int finish(int target, const char *who) {
    std::vector<Pending> mine;
    std::vector<rocl_request_t> lent;
    {
      std::lock_guard guard(lock_);
      for (std::size_t k = 0; k < pending_.size();) {
        if (pending_[k].target == target) {
          mine.push_back(std::move(pending_[k]));
          pending_.erase(pending_.begin() + std::ptrdiff_t(k));
        } else {
          ++k;
        }
      }
      lent.swap(lent_);
    }
    int result = MPI_SUCCESS;
    for (rocl_request_t &req : lent) {
      rocl_status_t st;
      rocl_wait(&req, &st, -1);
    }
    for (Pending &p : mine) {
      rocl_status_t st;
      const int rc = rocl_wait(&p.req, &st, -1);
      if (rc != ROCL_OK && result == MPI_SUCCESS) result = fail_rocl(win_->comm, rc, who);
      if (rc == ROCL_OK && (st.flags & kFailed) == 0 && p.result.done) p.result.done();
    }
    return result;
  }

  MPI_Win win_;
  std::vector<rocl_gid_t> agents_;
  std::vector<std::uint32_t> keys_;
  std::mutex lock_;
  std::mutex completing_;    // one flush or unlock completes at a time
  std::vector<char> dirty_;  // per target: requests since its last flush
  std::vector<Pending> pending_;
  std::vector<rocl_request_t> lent_;
  std::uint32_t next_reply_ = 0;
  std::shared_ptr<Exposure> mine_;
  std::uint32_t my_key_;
};

}  // namespace

std::unique_ptr<Access> message_access(MPI_Win win, int *error) {
  *error = MPI_SUCCESS;
  const rocl_gid_t agent = Agent::get().start();
  if (agent == ROCL_NULL_GID) {
    *error = fail_rocl(win->comm, ROCL_EINTERNAL, "one-sided agent");
    return nullptr;
  }
  auto mine = std::make_shared<Exposure>();
  mine->base = static_cast<char *>(win->base);
  mine->size = win->size;
  mine->dynamic = win->dynamic;
  const std::uint32_t key = Agent::get().expose(mine);
  struct Where {
    rocl_gid_t agent;
    std::uint32_t key;
    std::uint32_t pad;
  } here{agent, key, 0};
  const int n = win->comm->size;
  std::vector<Where> all(static_cast<std::size_t>(n));
  if (int rc = allgather_bytes(win->comm, &here, sizeof here, all.data())) {
    Agent::get().withdraw(key);
    *error = rc;
    return nullptr;
  }
  std::vector<rocl_gid_t> agents;
  std::vector<std::uint32_t> keys;
  for (const Where &w : all) {
    agents.push_back(w.agent);
    keys.push_back(w.key);
  }
  return std::make_unique<MessageAccess>(win, std::move(agents), std::move(keys), std::move(mine),
                                         key);
}

void end_rma_agent() {
  Agent::get().stop();
}

}  // namespace rmpi
