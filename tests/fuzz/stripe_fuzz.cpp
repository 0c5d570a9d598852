// stripe_fuzz.cpp - libFuzzer target for the receiving side of striped
// messages (src/core/stripe_wire.hpp, stripe_reassembly.hpp): every
// fragment another process sends passes parse_fragment and the reassembly,
// and every other message of a pair with a striped one ahead waits in it.
// Built and run by scripts/fuzz.sh (clang++-14,
// -fsanitize=fuzzer,address,undefined), not by the CMake project.
//
// The input is a list of operations, an opcode byte (modulo 5) and its bytes:
//   0 LEN(2) BYTES  a fragment message of raw bytes (up to LEN of them)
//   1 B0..B3        a well-formed fragment of a built message: id 0..3,
//                   source 1..2 (B0); destination 1..2 and total k * 4096 + r
//                   (B1) as its sender chose them on its first fragment;
//                   index (B2); with B0's top bit a mismatch (B3: total + 4096,
//                   total + 1, the other destination, twice the fragment size)
//   2 B0            an ordinary message of pair (source, destination) from
//                   B0, offered to hold() (handed on at once if not taken)
//   3 FB(4) TOTAL(8) INDEX(2) B0  a fragment header of those fields (id,
//                   source 0x300..0x301, destination 1..2 from B0) with as
//                   many bytes as its offset needs (big totals: the pool
//                   refuses beyond its 64 MiB)
//   4 B0            from now on deliver refuses messages for destination
//                   B0 % 3 (0: none)
// Raw and header-made fragments never have source 1 or 2: only built
// messages and ordinary ones share pairs, so a model of the reassembly
// knows what must be handed on, in which order, and acknowledged.
// Checked after every operation: what was handed on and acknowledged is
// what the model says (a pair's ordinary messages in the order they came; a
// held one never before a striped message of its pair whose head came
// before it; a striped message once, whole: its length its total, its
// bytes its fragments'), holds() and hold() agree with it; a parse accepts
// a built fragment unless it has one fragment. At the end (the reassembly
// destroyed) no pool buffer is in use. Any broken invariant aborts.
//
// With ROCL_FUZZ_WRITE_SEEDS=<dir> in the environment the binary writes
// seed inputs to <dir> and exits.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "core/stripe_reassembly.hpp"
#include "core/stripe_wire.hpp"

#include "fuzz_util.hpp"

using namespace rocl::impl;

namespace {

constexpr rocl::fuzz::Target kTarget{.name = "stripe_fuzz"};

using ull = unsigned long long;

constexpr std::uint32_t kFragment = FragmentHeader::kMinFragmentBytes;
constexpr rocl_gid_t kRawSource = 0x300;  // header-made fragments: 0x300, 0x301
constexpr std::int32_t kBuiltTag = 100;   // + the message id
constexpr std::int32_t kOrdinaryTag = 1000;
constexpr std::size_t kPoolCap = std::size_t{64} << 20;
constexpr std::size_t kMaxBody = std::size_t{64} << 10;  // of a header-made fragment

enum Op : std::uint8_t { kRaw, kBuilt, kOrdinary, kMade, kRefuse, kOps };

bool built_source(rocl_gid_t source) {
  return source == 1 || source == 2;
}

std::byte pattern(rocl_gid_t source, std::uint64_t id, std::uint64_t offset) {
  return static_cast<std::byte>((offset * 7 + (offset >> 8) + id * 13 + source * 101) & 0xff);
}

using Key = std::pair<rocl_gid_t, std::uint64_t>;  // (source, message id)
using Pair = std::pair<rocl_gid_t, rocl_gid_t>;    // (source, destination)

// What a built message's sender chose for it.
struct Params {
  rocl_gid_t destination;
  std::uint64_t total;
  std::uint32_t fragment_bytes;
};

// A message handed on (to deliver): as the callback saw it or the model says.
struct Event {
  rocl_gid_t destination, source;
  bool striped;
  std::uint64_t id;  // a striped message's id, an ordinary one's number in its pair
  std::uint64_t length;
  bool operator==(const Event &) const = default;
};

class Run {
 public:
  Run()
      : pool_(config()),
        stripes_(std::make_unique<StripeReassembly>(
            pool_, [this](rocl_gid_t d, Message *m) { return deliver(d, m, false); },
            [this](const std::string &line) { log(line); },
            [this](rocl_gid_t s, std::uint64_t id) {
              if (built_source(s)) acks_.push_back(Key{s, id});
            })) {}
  ~Run() {
    const StripeReassembly::Counts c = stripes_->counts();
    CHECK(c.messages == striped_handed_on_, "%llu messages counted, %llu handed on",
          ull(c.messages), ull(striped_handed_on_));
    CHECK(c.held == held_, "%llu held counted, %llu held", ull(c.held), ull(held_));
    CHECK(stripes_->in_progress() >= assemblies_.size(), "%zu in progress, the model's %zu",
          stripes_->in_progress(), assemblies_.size());
    stripes_.reset();  // drops what is incomplete or held
    CHECK(pool_.stats().in_use_buffers == 0, "%zu buffers left in use",
          pool_.stats().in_use_buffers);
  }
  Run(const Run &) = delete;
  Run &operator=(const Run &) = delete;

  void raw(const std::uint8_t *p, std::size_t n) {
    std::vector<std::byte> bytes(n);
    if (n != 0) std::memcpy(bytes.data(), p, n);
    constexpr std::size_t at = offsetof(FragmentHeader, header) + offsetof(CoreHeader, source);
    if (n >= at + sizeof(rocl_gid_t)) {  // keep the built messages' sources for them
      rocl_gid_t source;
      std::memcpy(&source, bytes.data() + at, sizeof source);
      if (built_source(source)) source += 0x100;
      std::memcpy(bytes.data() + at, &source, sizeof source);
    }
    if (Message *m = message(CoreHeader{kRawSource, 0, 0}, bytes.data(), n)) {
      stripes_->take_fragment(m);
    }
    settle();
  }

  void made(const std::uint8_t *b) {
    FragmentHeader h;
    std::memcpy(&h.fragment_bytes, b, 4);
    std::memcpy(&h.total, b + 4, 8);
    std::uint16_t index;
    std::memcpy(&index, b + 12, 2);
    h.message_id = b[14] & 7;
    h.header = CoreHeader{kRawSource + ((b[14] >> 3) & 1), 5, 0};
    h.destination = 1 + ((b[14] >> 4) & 1);
    h.offset = std::uint64_t{index} * h.fragment_bytes;
    std::uint64_t n = 0;
    if (h.offset < h.total) n = std::min<std::uint64_t>(h.fragment_bytes, h.total - h.offset);
    if (n > kMaxBody) n = 16;  // wrong, but not megabytes
    std::vector<std::byte> bytes(sizeof h + n, std::byte{0x5a});
    std::memcpy(bytes.data(), &h, sizeof h);
    if (Message *m = message(CoreHeader{kRawSource, 0, 0}, bytes.data(), bytes.size())) {
      stripes_->take_fragment(m);
    }
    settle();
  }

  void built(const std::uint8_t *b) {
    const std::uint64_t id = b[0] & 3;
    const rocl_gid_t source = 1 + ((b[0] >> 2) & 1);
    const Key key{source, id};
    auto [sent, first] = senders_.try_emplace(key);
    if (first) {
      static constexpr std::uint64_t kRest[] = {0, 1, 100, kFragment - 1};
      const std::uint64_t k = 1 + ((b[1] >> 1) & 3);
      std::uint64_t r = kRest[(b[1] >> 3) & 3];
      if (k == 1 && r == 0) r = 1;  // more than one fragment
      sent->second = Params{rocl_gid_t{1} + (b[1] & 1), k * kFragment + r, kFragment};
    }
    Params p = sent->second;
    if ((b[0] & 0x80) != 0) {
      switch (b[3] & 3) {
        case 0:
          p.total += kFragment;
          break;
        case 1:
          p.total += 1;
          break;
        case 2:
          p.destination ^= 3;
          break;
        default:
          p.fragment_bytes *= 2;
          break;
      }
    }
    FragmentHeader h;
    h.fragment_bytes = p.fragment_bytes;
    h.destination = p.destination;
    h.header = CoreHeader{source, kBuiltTag + std::int32_t(id), 3};
    h.message_id = id;
    h.offset = (b[2] % fragment_count(p.total, p.fragment_bytes)) * p.fragment_bytes;
    h.total = p.total;
    const std::size_t n = std::min<std::uint64_t>(p.fragment_bytes, p.total - h.offset);
    std::vector<std::byte> bytes(sizeof h + n);
    std::memcpy(bytes.data(), &h, sizeof h);
    for (std::size_t k = 0; k < n; ++k) bytes[sizeof h + k] = pattern(source, id, h.offset + k);
    Message *m = message(CoreHeader{source, 0, 0}, bytes.data(), bytes.size());
    if (m == nullptr) return;  // the pool is full (of raw messages' blocks)

    FragmentHeader parsed;
    const char *bad = parse_fragment(bytes.data(), bytes.size(), &parsed);
    CHECK((bad == nullptr) == (h.total > h.fragment_bytes), "a built fragment: %s",
          bad != nullptr ? bad : "accepted");
    no_block_ = false;
    stripes_->take_fragment(m);
    if (bad == nullptr) model_fragment(h, n);
    settle();
  }

  void ordinary(std::uint8_t b) {
    const Pair pair{1 + (b & 1), 1 + ((b >> 1) & 1)};
    const std::uint64_t seq = sent_[pair] + 1;
    Message *m = message(CoreHeader{pair.first, kOrdinaryTag, 0}, &seq, sizeof seq);
    if (m == nullptr) return;
    sent_[pair] = seq;
    const bool waits = queues_.contains(pair);
    CHECK(stripes_->holds(pair.first, pair.second) == waits, "holds() for (%llu, %llu)",
          ull(pair.first), ull(pair.second));
    const bool taken = stripes_->hold(pair.second, m);
    CHECK(taken == waits, "hold() of message %llu of (%llu, %llu): %d", ull(seq), ull(pair.first),
          ull(pair.second), int(taken));
    if (taken) {
      ++held_;
      queues_[pair].push_back(Slot{Key{}, seq});
    } else {
      expected_.push_back(Event{pair.second, pair.first, false, seq, sizeof seq});
      if (deliver(pair.second, m, true) != ROCL_OK) release(m);  // the core would drop it
    }
    settle();
  }

  void refuse(std::uint8_t b) { refused_ = b % 3; }

 private:
  // In a pair's queue, as the model has it: a striped message or a held one.
  struct Slot {
    Key striped;
    std::uint64_t held = 0;  // its number in the pair, 0: a striped message
  };
  struct Assembly {
    Params p;
    std::vector<bool> have;
    std::size_t missing;
    bool block;
  };

  static PoolConfig config() {
    PoolConfig c;
    c.cap_bytes = kPoolCap;
    return c;
  }

  Message *message(const CoreHeader &header, const void *bytes, std::size_t n) {
    BlockHeader *b = pool_.allocate(n);
    if (b == nullptr) return nullptr;
    if (n != 0) std::memcpy(payload_of(b), bytes, n);
    Message *m = message_in(b);
    m->header = header;
    m->data = payload_of(b);
    m->length = n;
    b->state.store(BlockState::kLibrary);
    return m;
  }
  void release(Message *m) {
    BlockHeader *b = block_of(m);
    end_message(b);
    pool_.release(b, BlockState::kLibrary);
  }

  void log(const std::string &line) {
    CHECK(!line.empty() && line.find('\n') == std::string::npos, "log line \"%s\"", line.c_str());
    if (line.find("has no block") != std::string::npos) no_block_ = true;
  }

  // The reassembly's deliver (direct: the run's own, for a message not held).
  int deliver(rocl_gid_t destination, Message *m, bool direct) {
    const rocl_gid_t source = m->header.source;
    const auto *p = static_cast<const std::byte *>(m->data);
    if (m->header.tag == kOrdinaryTag && built_source(source)) {
      std::uint64_t seq;
      CHECK(m->length == sizeof seq, "ordinary message of %zu bytes", std::size_t(m->length));
      std::memcpy(&seq, p, sizeof seq);
      actual_.push_back(Event{destination, source, false, seq, m->length});
    } else {
      CHECK(!direct, "a striped message handed on directly");
      ++striped_handed_on_;
      if (built_source(source)) {
        const std::int32_t id = m->header.tag - kBuiltTag;
        CHECK(id >= 0 && id < 4 && m->header.domain == 3, "a built message with tag %d",
              int(m->header.tag));
        for (std::uint64_t k = 0; k < m->length; ++k) {
          CHECK(p[k] == pattern(source, id, k),
                "message %d from %llu: byte %llu of %llu is not its fragment's", int(id),
                ull(source), ull(k), ull(m->length));
        }
        actual_.push_back(Event{destination, source, true, std::uint64_t(id), m->length});
      } else {
        CHECK(m->length > kFragment, "a striped message of %zu bytes", std::size_t(m->length));
      }
    }
    // Whoever has the block next must not find these bytes.
    std::memset(m->data, 0xa5, m->length);
    if (refused_ != 0 && destination == refused_) return ROCL_EBADGID;
    release(m);
    return ROCL_OK;
  }

  // A built fragment the parse accepts, taken: what the reassembly does.
  void model_fragment(const FragmentHeader &h, std::size_t n) {
    const Key key{h.header.source, h.message_id};
    if (completed_.contains(key)) {  // a repeat of a message handed on: acked again
      expected_acks_.push_back(key);
      return;
    }
    auto [it, fresh] = assemblies_.try_emplace(key);
    Assembly &a = it->second;
    if (fresh) {
      a.p = Params{h.destination, h.total, h.fragment_bytes};
      a.have.assign(fragment_count(h.total, h.fragment_bytes), false);
      a.missing = a.have.size();
      a.block = !no_block_;
    } else {
      CHECK(!no_block_, "a block refused for message %llu of %llu, not new", ull(key.second),
            ull(key.first));
    }
    if (a.p.destination != h.destination || a.p.total != h.total ||
        a.p.fragment_bytes != h.fragment_bytes) {
      return;  // dropped: disagrees with its message's first fragment
    }
    const std::uint64_t index = h.offset / h.fragment_bytes;
    CHECK(n == std::min<std::uint64_t>(h.fragment_bytes, h.total - h.offset), "length");
    if (a.have[index]) return;  // a repeat
    a.have[index] = true;
    --a.missing;
    const Pair pair{h.header.source, h.destination};
    if (index == 0) queues_[pair].push_back(Slot{key, 0});
    if (a.missing == 0) {
      if (a.block) {
        completed_.insert(key);
        expected_acks_.push_back(key);
      }
      release_ready(pair);
    }
  }

  void release_ready(const Pair &pair) {
    auto q = queues_.find(pair);
    if (q == queues_.end()) return;
    std::deque<Slot> &slots = q->second;
    while (!slots.empty()) {
      const Slot &front = slots.front();
      if (front.held != 0) {
        expected_.push_back(Event{pair.second, pair.first, false, front.held, 8});
      } else {
        auto a = assemblies_.find(front.striped);
        CHECK(a != assemblies_.end(), "a queued message without its assembly");
        if (a->second.missing != 0) break;
        if (a->second.block) {
          expected_.push_back(
              Event{pair.second, pair.first, true, front.striped.second, a->second.p.total});
        }
        assemblies_.erase(a);
      }
      slots.pop_front();
    }
    if (slots.empty()) queues_.erase(q);
  }

  // After each operation: the reassembly did what the model did.
  void settle() {
    CHECK(actual_.size() == expected_.size() && actual_ == expected_,
          "%zu messages handed on, %zu expected; first difference: %s", actual_.size(),
          expected_.size(), describe_difference().c_str());
    CHECK(acks_ == expected_acks_, "%zu acks, %zu expected", acks_.size(), expected_acks_.size());
    actual_.clear();
    expected_.clear();
    acks_.clear();
    expected_acks_.clear();
  }
  std::string describe_difference() const {
    auto show = [](const std::vector<Event> &v, std::size_t i) {
      if (i >= v.size()) return std::string("nothing");
      const Event &e = v[i];
      char s[160];
      std::snprintf(s, sizeof s, "%s %llu of (%llu, %llu), %llu bytes",
                    e.striped ? "striped" : "ordinary", ull(e.id), ull(e.source),
                    ull(e.destination), ull(e.length));
      return std::string(s);
    };
    std::size_t i = 0;
    while (i < actual_.size() && i < expected_.size() && actual_[i] == expected_[i]) ++i;
    return "handed on " + show(actual_, i) + ", expected " + show(expected_, i);
  }

  BufferPool pool_;
  std::unique_ptr<StripeReassembly> stripes_;
  rocl_gid_t refused_ = 0;
  bool no_block_ = false;  // the log said the pool had no block for a message
  std::map<Key, Params> senders_;
  std::map<Pair, std::uint64_t> sent_;  // ordinary messages made per pair
  // The model.
  std::map<Key, Assembly> assemblies_;
  std::map<Pair, std::deque<Slot>> queues_;
  std::set<Key> completed_;
  std::uint64_t held_ = 0, striped_handed_on_ = 0;
  std::vector<Event> actual_, expected_;
  std::vector<Key> acks_, expected_acks_;
};

void run(const std::uint8_t *data, std::size_t size) {
  Run r;
  std::size_t at = 0;
  auto left = [&] { return size - at; };
  while (at < size) {
    switch (data[at++] % kOps) {
      case kRaw: {
        if (left() < 2) return;
        std::size_t len = data[at] | std::size_t{data[at + 1]} << 8;
        at += 2;
        len = std::min(len, left());
        r.raw(data + at, len);
        at += len;
        break;
      }
      case kBuilt:
        if (left() < 4) return;
        r.built(data + at);
        at += 4;
        break;
      case kOrdinary:
        if (left() < 1) return;
        r.ordinary(data[at++]);
        break;
      case kMade:
        if (left() < 15) return;
        r.made(data + at);
        at += 15;
        break;
      default:
        if (left() < 1) return;
        r.refuse(data[at++]);
        break;
    }
  }
}

// Writes inputs for the seeds.
class Seed {
 public:
  // Fragment `index` of message `id` from `source` (B1 `choice`: what its
  // first fragment sets), `mismatch` 1..4 one of the four.
  Seed &built(int id, int source, int index, int choice = 0, int mismatch = 0) {
    const int b0 = (id & 3) | (source - 1) << 2 | (mismatch != 0 ? 0x80 : 0);
    return add({kBuilt, std::uint8_t(b0), std::uint8_t(choice), std::uint8_t(index),
                std::uint8_t(mismatch != 0 ? mismatch - 1 : 0)});
  }
  Seed &ordinary(int source, int destination) {
    return add({kOrdinary, std::uint8_t((source - 1) | (destination - 1) << 1)});
  }
  Seed &made(std::uint32_t fragment_bytes, std::uint64_t total, std::uint16_t index, int id) {
    std::vector<std::uint8_t> b(16);
    b[0] = kMade;
    std::memcpy(&b[1], &fragment_bytes, 4);
    std::memcpy(&b[5], &total, 8);
    std::memcpy(&b[13], &index, 2);
    b[15] = std::uint8_t(id);
    return add(b);
  }
  Seed &raw(const std::vector<std::uint8_t> &bytes) {
    std::vector<std::uint8_t> b = {kRaw, std::uint8_t(bytes.size()),
                                   std::uint8_t(bytes.size() >> 8)};
    b.insert(b.end(), bytes.begin(), bytes.end());
    return add(b);
  }
  Seed &refuse(int destination) { return add({kRefuse, std::uint8_t(destination)}); }
  std::vector<std::uint8_t> bytes;

 private:
  Seed &add(const std::vector<std::uint8_t> &b) {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return *this;
  }
};

std::vector<std::vector<std::uint8_t>> seeds() {
  std::vector<std::vector<std::uint8_t>> out;
  // Two fragments (total 4097), ordinary messages before, held, after.
  out.push_back(Seed()
                    .ordinary(1, 1)
                    .built(0, 1, 0)
                    .ordinary(1, 1)
                    .ordinary(2, 1)
                    .built(0, 1, 1)
                    .ordinary(1, 1)
                    .bytes);
  // Three and four fragments of two sources out of order, interleaved, a
  // repeat, mismatches of each kind, a resend after completion.
  out.push_back(Seed()
                    .built(1, 1, 2, 0x0c)
                    .built(2, 2, 0, 0x1a)
                    .built(1, 1, 0)
                    .ordinary(1, 2)
                    .ordinary(2, 2)
                    .built(1, 1, 0)
                    .built(1, 1, 1, 0, 1)
                    .built(1, 1, 1, 0, 2)
                    .built(1, 1, 1, 0, 3)
                    .built(1, 1, 1, 0, 4)
                    .built(2, 2, 3)
                    .built(2, 2, 2)
                    .built(1, 1, 1)
                    .ordinary(1, 2)
                    .built(2, 2, 1)
                    .built(1, 1, 2)
                    .bytes);
  // Two striped messages of one pair: the second whole first waits.
  out.push_back(Seed()
                    .built(0, 2, 0, 0x02)
                    .built(3, 2, 0, 0x02)
                    .ordinary(2, 1)
                    .built(3, 2, 1)
                    .ordinary(2, 1)
                    .built(0, 2, 2)
                    .refuse(1)
                    .built(0, 2, 1)
                    .ordinary(2, 1)
                    .bytes);
  // Blocks of all the pool but 32 KiB, then a message that finds no block
  // (its pair's messages wait behind it all the same); a message the pool
  // has no block for at all; fragments the parse refuses.
  Seed full;
  for (int order = 25; order >= 15; --order) {
    full.made(kFragment, (std::uint64_t{1} << order) - 4 * kFragment, 0, 5 + (25 - order));
  }
  out.push_back(full.built(0, 1, 0, 0x1e)
                    .ordinary(1, 1)
                    .built(0, 1, 1)
                    .built(0, 1, 2)
                    .built(0, 1, 3)
                    .built(0, 1, 4)
                    .ordinary(1, 1)
                    .made(std::uint32_t{1} << 31, (std::uint64_t{1} << 40) + 5, 512, 4)
                    .made(kFragment, kFragment, 0, 0)
                    .made(kFragment, std::uint64_t{1} << 40, 1, 1)
                    .made(kFragment * 2, kFragment * 3, 1, 2)
                    .made(100, 1000, 1, 3)
                    .bytes);
  // Raw bytes: a whole last fragment, the same with a receive's pattern as
  // its header and with no destination, a header's worth of zeros, a short
  // one.
  FragmentHeader h;
  h.fragment_bytes = kFragment;
  h.destination = 1;
  h.header = CoreHeader{0x400, 9, 0};
  h.message_id = 1;
  h.offset = kFragment;
  h.total = kFragment + 3;
  std::vector<std::uint8_t> last(sizeof h + 3, 7);
  std::memcpy(last.data(), &h, sizeof h);
  std::vector<std::uint8_t> pattern_header = last;
  h.header.tag = ROCL_ANY_TAG;
  std::memcpy(pattern_header.data(), &h, sizeof h);
  std::vector<std::uint8_t> no_destination = last;
  h.header.tag = 9;
  h.destination = ROCL_NULL_GID;
  std::memcpy(no_destination.data(), &h, sizeof h);
  out.push_back(Seed()
                    .raw(last)
                    .raw(pattern_header)
                    .raw(no_destination)
                    .raw(std::vector<std::uint8_t>(sizeof h, 0))
                    .raw({'R', 'T', 'S'})
                    .bytes);
  return out;
}

void write_seeds(const char *dir) {
  int i = 0;
  for (const std::vector<std::uint8_t> &s : seeds()) {
    run(s.data(), s.size());  // every seed keeps the invariants
    rocl::fuzz::write_file(std::string(dir) + "/seed-" + std::to_string(i++), s);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  rocl::fuzz::seeds_then_exit(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  run(data, size);
  return 0;
}
