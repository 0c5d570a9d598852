// soak_worker.cpp - one soak thread: a resource that sends its share of the
// job's data messages, each to a random other resource of the job, and
// receives what the others send it, checking each pair's sequence numbers
// (exactly once, in order) and each message's bytes.
//
// Flow control keeps what is in flight bounded, so that resident memory
// measures rocl and not a backlog: at most `window` unacknowledged messages
// per pair, and a budget of unacknowledged bytes per sender. A receiver
// acknowledges a pair after window/2 messages or kAckBytes bytes of it, so
// that what stays unacknowledged once everything has arrived (under
// window/2 messages and kAckBytes per pair) always leaves room for the
// largest message: no sender waits for ever.
//
// The end, in two rounds: each thread tells every other how many messages
// it sent it (an end, after its last data message, so per pair nothing can
// overtake it), receives until every other's end has come and matched its
// count, then says bye to every other and receives until every other's bye
// has come. A bye comes after the last acknowledgement its sender will
// send us, so after the byes nothing is on its way to us.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <sstream>

#include "soak.hpp"

namespace soak {

namespace {

constexpr std::uint32_t kDomain = 0x50a;  // every message of the soak
constexpr int kSeqMask = 0x3fffffff;      // a data message's tag: its sequence number's low bits
constexpr int kControlTag = 0x40000000;   // + Control
enum Control { kAck = 1, kEnd = 2, kBye = 3 };
constexpr std::size_t kAckBytes = 64u << 10;
constexpr std::size_t kPendingMax = 16;  // kept buffers and lent sends not yet complete

using Clock = std::chrono::steady_clock;

class Worker {
 public:
  Worker(const Config &config, const Peers &peers, int self, Totals &totals, ThreadMemory &memory);
  void run();

 private:
  struct Pair {
    std::uint64_t sent = 0, acked = 0;  // to the peer
    std::uint64_t received = 0, unacked = 0, end_count = 0;
    std::size_t unacked_bytes = 0;
    bool ended = false, bye = false;
  };
  // A send that is not complete: a kept buffer, or a lent send's request
  // and memory.
  struct Pending {
    int to = 0;
    void *buffer = nullptr;
    rocl_request_t request = ROCL_REQUEST_NULL;
    std::unique_ptr<unsigned char[]> memory;
  };

  void send_all();
  void complete_sends();
  void end_and_bye();

  int pick_destination();
  void wait_for_room(int to, std::size_t len);
  void send_data(int to, const Plan &plan);
  void send_control(int to, Control kind, std::uint64_t value);
  void reap();

  bool progress(int timeout_ms);
  void on_data(int from, const rocl_status_t &status);
  void on_control(int from, const rocl_status_t &status);
  void on_ack(int from, std::uint64_t count);
  void watch(const char *phase);
  std::string who(int index) const;
  void fail(const std::string &what) { report(totals_, who(self_) + ": " + what); }

  const Config &config_;
  const Peers &peers_;
  const int self_, everyone_;
  const rocl_gid_t me_;
  Totals &totals_;
  long long quota_;
  std::uint64_t rng_;
  std::vector<Pair> pairs_;
  std::size_t in_flight_bytes_ = 0, budget_;
  int ends_ = 0, byes_ = 0;
  std::vector<Pending> pending_;
  std::vector<unsigned char> &scratch_, &inbox_;  // ThreadMemory's
  bool into_inbox_ = false;                       // receives alternate: a pool buffer, the inbox
  Clock::time_point last_progress_ = Clock::now();
};

Worker::Worker(const Config &config, const Peers &peers, int self, Totals &totals,
               ThreadMemory &memory)
    : config_(config),
      peers_(peers),
      self_(self),
      everyone_(peers.count()),
      me_(peers.gid[static_cast<std::size_t>(self)]),
      totals_(totals),
      quota_(config.messages / everyone_ + (self < config.messages % everyone_ ? 1 : 0)),
      rng_(mix(config.seed ^ (static_cast<std::uint64_t>(self) + 1) * 0x9E3779B97F4A7C15ull)),
      pairs_(static_cast<std::size_t>(everyone_)),
      budget_(std::max<std::size_t>(16u << 20, 2 * config.max_size) +
              static_cast<std::size_t>(everyone_ - 1) * kAckBytes),
      scratch_(memory.scratch),
      inbox_(memory.inbox) {}

void Worker::run() {
  send_all();
  complete_sends();
  end_and_bye();
}

void Worker::send_all() {
  for (long long k = 0; k < quota_; ++k) {
    const int to = pick_destination();
    const Plan plan = plan_of(config_, self_, to, pairs_[static_cast<std::size_t>(to)].sent);
    wait_for_room(to, plan.len);
    send_data(to, plan);
    while (progress(0)) {
    }
    reap();
  }
}

void Worker::complete_sends() {
  while (!pending_.empty()) {
    reap();
    if (!pending_.empty() && !progress(20)) watch("completing its kept and lent sends");
  }
}

void Worker::end_and_bye() {
  for (int to = 0; to < everyone_; ++to) {
    if (to != self_) send_control(to, kEnd, pairs_[static_cast<std::size_t>(to)].sent);
  }
  while (ends_ < everyone_ - 1) {
    if (!progress(100)) watch("waiting for the others' ends");
  }
  for (int to = 0; to < everyone_; ++to) {
    if (to != self_) send_control(to, kBye, 0);
  }
  while (byes_ < everyone_ - 1) {
    if (!progress(100)) watch("waiting for the others' byes");
  }
}

int Worker::pick_destination() {
  rng_ = mix(rng_ + 0x9E3779B97F4A7C15ull);
  const int to = static_cast<int>(rng_ % static_cast<std::uint64_t>(everyone_ - 1));
  return to >= self_ ? to + 1 : to;
}

void Worker::wait_for_room(int to, std::size_t len) {
  const Pair &p = pairs_[static_cast<std::size_t>(to)];
  while (p.sent - p.acked >= static_cast<std::uint64_t>(config_.window) ||
         (in_flight_bytes_ > 0 && in_flight_bytes_ + len > budget_) ||
         pending_.size() >= kPendingMax) {
    reap();
    if (!progress(20)) watch("sending (waiting for acknowledgements)");
  }
}

void Worker::send_data(int to, const Plan &plan) {
  Pair &p = pairs_[static_cast<std::size_t>(to)];
  const rocl_gid_t dest = peers_.gid[static_cast<std::size_t>(to)];
  const int tag = static_cast<int>(p.sent & kSeqMask);
  const auto flags = static_cast<unsigned>(plan.mode);
  int rc = ROCL_OK;
  if (plan.mode == Mode::kHandover || plan.mode == Mode::kKept) {
    void *b = rocl_bfget(plan.len);
    if (b == nullptr) die(std::string("rocl_bfget: ") + rocl_last_error());
    fill_payload(config_.seed, self_, to, p.sent, static_cast<unsigned char *>(b), plan.len);
    if (plan.mode == Mode::kHandover) rc = rocl_bftoret(b);
    if (rc == ROCL_OK) rc = rocl_sendx(me_, dest, tag, kDomain, flags, b, plan.len);
    if (rc == ROCL_OK && plan.mode == Mode::kKept) pending_.push_back({to, b, nullptr, nullptr});
  } else if (plan.mode == Mode::kCopied) {
    fill_payload(config_.seed, self_, to, p.sent, scratch_.data(), plan.len);
    rc = rocl_sendx(me_, dest, tag, kDomain, flags, scratch_.data(), plan.len);
  } else {
    auto memory = std::make_unique_for_overwrite<unsigned char[]>(plan.len);
    fill_payload(config_.seed, self_, to, p.sent, memory.get(), plan.len);
    rocl_request_t r = ROCL_REQUEST_NULL;
    rc = rocl_isendx_lend(me_, dest, tag, kDomain, flags, memory.get(), plan.len, &r);
    if (rc == ROCL_OK && r != ROCL_REQUEST_NULL)
      pending_.push_back({to, nullptr, r, std::move(memory)});
  }
  if (rc != ROCL_OK) {
    die(who(self_) + ": sending message " + std::to_string(p.sent) + " (" +
        std::to_string(plan.len) + " B) to " + who(to) + " failed: " + rocl_last_error());
  }
  ++p.sent;
  in_flight_bytes_ += plan.len;
  totals_.sent.fetch_add(1, std::memory_order_relaxed);
  totals_.sent_bytes.fetch_add(static_cast<long long>(plan.len), std::memory_order_relaxed);
  last_progress_ = Clock::now();
}

void Worker::send_control(int to, Control kind, std::uint64_t value) {
  const int rc = rocl_sendx(me_, peers_.gid[static_cast<std::size_t>(to)], kControlTag + kind,
                            kDomain, 0, &value, sizeof value);
  if (rc != ROCL_OK) {
    die(who(self_) + ": sending control " + std::to_string(kind) + " to " + who(to) +
        " failed: " + rocl_last_error());
  }
}

// Takes back what completed of the kept buffers and lent sends.
void Worker::reap() {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    Pending &s = pending_[i];
    bool done = false;
    if (s.buffer != nullptr) {
      const int state = rocl_bfstat(s.buffer);
      done = state != ROCL_BF_PENDING;
      if (state != ROCL_BF_PENDING && state != ROCL_BF_SENT)
        fail("a kept buffer's send to " + who(s.to) + " ended in state " + std::to_string(state));
      if (done && rocl_bfret(s.buffer) != ROCL_OK)
        fail(std::string("rocl_bfret of a kept buffer: ") + rocl_last_error());
    } else {
      int flag = 0;
      rocl_status_t st{};
      const int rc = rocl_test(&s.request, &flag, &st);
      if (rc != ROCL_OK) fail("a lent send to " + who(s.to) + " failed: " + rocl_last_error());
      done = flag != 0 || rc != ROCL_OK;
    }
    if (done) {
      last_progress_ = Clock::now();
    } else if (kept++ != i) {
      pending_[kept - 1] = std::move(s);
    }
  }
  pending_.resize(kept);
}

// One receive, waiting up to timeout_ms; false if nothing came.
bool Worker::progress(int timeout_ms) {
  void *into = into_inbox_ ? inbox_.data() : nullptr;
  rocl_status_t st{};
  const int rc = rocl_recvx(me_, ROCL_ANY_GID, ROCL_ANY_TAG, kDomain, into,
                            into != nullptr ? inbox_.size() : 0, &st, timeout_ms);
  if (rc == ROCL_ETIMEDOUT) return false;
  if (rc != ROCL_OK) die(who(self_) + ": rocl_recvx failed: " + rocl_last_error());
  into_inbox_ = !into_inbox_;
  last_progress_ = Clock::now();
  const auto from = peers_.index.find(st.origin);
  if (from == peers_.index.end()) {
    fail("a message from " + std::to_string(st.origin) + ", no soak resource");
  } else if (st.tag >= kControlTag) {
    on_control(from->second, st);
  } else {
    on_data(from->second, st);
  }
  if (into == nullptr && rocl_bfret(st.ptr) != ROCL_OK)
    fail(std::string("rocl_bfret of a received buffer: ") + rocl_last_error());
  return true;
}

void Worker::on_data(int from, const rocl_status_t &st) {
  Pair &p = pairs_[static_cast<std::size_t>(from)];
  if (p.ended) fail("a data message from " + who(from) + " after its end");
  std::uint64_t seq = p.received;
  if (static_cast<std::uint64_t>(st.tag) != (seq & kSeqMask)) {
    // Resynchronise on the tag, so that one loss is reported once.
    const std::uint64_t said =
        (seq & ~static_cast<std::uint64_t>(kSeqMask)) | static_cast<std::uint64_t>(st.tag);
    fail("from " + who(from) + ": message " + std::to_string(said) + " where " +
         std::to_string(seq) + " was due (" + (said < seq ? "duplicated or late" : "lost") + ")");
    if (said < seq) return;
    seq = said;
  }
  const Plan plan = plan_of(config_, from, self_, seq);
  const auto *bytes = static_cast<const unsigned char *>(st.ptr);
  std::string bad;
  if (st.len != plan.len) {
    bad = "its length is " + std::to_string(st.len) + ", not " + std::to_string(plan.len);
  } else if (st.flags != static_cast<unsigned>(plan.mode)) {
    bad = "its flags are " + std::to_string(st.flags);
  } else {
    bad = check_payload(config_.seed, from, self_, seq, bytes, st.len);
  }
  if (!bad.empty()) fail("message " + std::to_string(seq) + " from " + who(from) + ": " + bad);
  p.received = seq + 1;
  ++p.unacked;
  p.unacked_bytes += st.len;
  totals_.received.fetch_add(1, std::memory_order_relaxed);
  totals_.received_bytes.fetch_add(static_cast<long long>(st.len), std::memory_order_relaxed);
  if (p.unacked * 2 >= static_cast<std::uint64_t>(config_.window) || p.unacked_bytes >= kAckBytes) {
    send_control(from, kAck, p.received);
    p.unacked = 0;
    p.unacked_bytes = 0;
  }
}

void Worker::on_control(int from, const rocl_status_t &st) {
  Pair &p = pairs_[static_cast<std::size_t>(from)];
  std::uint64_t value = 0;
  if (st.len != sizeof value) {
    fail("a control message of " + std::to_string(st.len) + " B from " + who(from));
    return;
  }
  std::memcpy(&value, st.ptr, sizeof value);
  totals_.controls.fetch_add(1, std::memory_order_relaxed);
  switch (st.tag - kControlTag) {
    case kAck:
      on_ack(from, value);
      break;
    case kEnd:
      if (p.ended) fail("a second end from " + who(from));
      if (value != p.received) {
        fail("the end from " + who(from) + " says " + std::to_string(value) + " messages, " +
             std::to_string(p.received) + " came");
      }
      p.ended = true;
      p.end_count = value;
      ++ends_;
      break;
    case kBye:
      if (!p.ended || p.bye)
        fail("a bye from " + who(from) + (p.bye ? " twice" : " before its end"));
      p.bye = true;
      ++byes_;
      break;
    default:
      fail("a control message of tag " + std::to_string(st.tag) + " from " + who(from));
  }
}

void Worker::on_ack(int from, std::uint64_t count) {
  Pair &p = pairs_[static_cast<std::size_t>(from)];
  if (count < p.acked || count > p.sent) {
    fail("an acknowledgement of " + std::to_string(count) + " messages from " + who(from) +
         ", which had " + std::to_string(p.acked) + " of " + std::to_string(p.sent));
    return;
  }
  for (; p.acked < count; ++p.acked) in_flight_bytes_ -= plan_of(config_, self_, from, p.acked).len;
}

// Ends the process if nothing moved for config.stall_ms, saying where.
void Worker::watch(const char *phase) {
  const auto idle =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_progress_);
  if (idle.count() < config_.stall_ms) return;
  std::ostringstream s;
  s << who(self_) << ": nothing for " << idle.count() << " ms while " << phase << "; sent "
    << totals_.sent.load() << " (process), " << pending_.size() << " sends pending, "
    << in_flight_bytes_ << " B unacknowledged; ends " << ends_ << ", byes " << byes_ << " of "
    << everyone_ - 1 << "; missing:";
  int shown = 0;
  for (int i = 0; i < everyone_ && shown < 8; ++i) {
    const Pair &p = pairs_[static_cast<std::size_t>(i)];
    if (i == self_ || (p.ended && p.bye) || (ends_ < everyone_ - 1 && p.ended)) continue;
    s << " " << who(i) << " (received " << p.received << ", sent " << p.sent << ", acked "
      << p.acked << ")";
    ++shown;
  }
  die(s.str());
}

// "thread R.T" (rank, thread) for a global index.
std::string Worker::who(int index) const {
  return "thread " + std::to_string(index / config_.threads) + "." +
         std::to_string(index % config_.threads);
}

}  // namespace

void run_worker(const Config &config, const Peers &peers, int self, Totals &totals,
                ThreadMemory &memory) {
  Worker(config, peers, self, totals, memory).run();
}

}  // namespace soak
