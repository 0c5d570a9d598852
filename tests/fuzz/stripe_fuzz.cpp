// stripe_fuzz.cpp - libFuzzer target for the receiving side of striped
// messages (src/core/stripe_wire.hpp, stripe_reassembly.hpp): every
// fragment another process sends passes parse_fragment and the reassembly.
// Built and run by scripts/fuzz.sh (clang++-14,
// -fsanitize=fuzzer,address,undefined), not by the CMake project.
//
// The input is a list of operations, each an opcode byte and its bytes:
//   0 LEN(2) BYTES  a fragment message of raw bytes (its source moved out
//                   of the range the built ones use)
//   1 B0..B3        a well-formed fragment of one of a few messages (id,
//                   source, destination, index from the bytes; sometimes a
//                   mismatching total), whose bytes follow a pattern
//   2 B0            an ordinary message of a pair, offered to hold()
// Checked: a message handed on has the length and bytes its fragments
// carried; a pair's ordinary messages leave in the order they came; at
// the end (the reassembly destroyed) no pool buffer is in use. Any broken
// invariant aborts.
//
// With ROCL_FUZZ_WRITE_SEEDS=<dir> in the environment the binary writes
// seed inputs to <dir> and exits.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "core/stripe_reassembly.hpp"
#include "core/stripe_wire.hpp"

using namespace rocl::impl;

namespace {

#define CHECK(cond, ...)                                       \
  do {                                                         \
    if (!(cond)) {                                             \
      std::fprintf(stderr, "stripe_fuzz: %s failed: ", #cond); \
      std::fprintf(stderr, __VA_ARGS__);                       \
      std::fprintf(stderr, "\n");                              \
      std::abort();                                            \
    }                                                          \
  } while (0)

constexpr std::uint32_t kFragment = FragmentHeader::kMinFragmentBytes;
constexpr rocl_gid_t kBuiltSource = 0x100, kDestination = 0x200, kRawSource = 0x1000;
constexpr int kBuiltTag = 7, kOrdinaryTag = 9;

std::byte pattern(rocl_gid_t source, std::uint64_t id, std::uint64_t offset) {
  return static_cast<std::byte>((offset * 7 + id * 13 + source) & 0xff);
}
std::uint64_t built_total(rocl_gid_t source, std::uint64_t id) {
  return (id % 3 + 1) * kFragment + 1 + (source & 0xf) * 5;
}

class Run {
 public:
  Run()
      : pool_(config()),
        stripes_(std::make_unique<StripeReassembly>(
            pool_, [this](rocl_gid_t d, Message *m) { return deliver(d, m); },
            [](const std::string &) {}, [](rocl_gid_t, std::uint64_t) {})) {}
  ~Run() {
    stripes_.reset();
    CHECK(pool_.stats().in_use_buffers == 0, "%zu buffers left in use",
          pool_.stats().in_use_buffers);
  }

  Message *message(rocl_gid_t source, int tag, const void *bytes, std::size_t n) {
    BlockHeader *b = pool_.allocate(n);
    if (b == nullptr) return nullptr;
    if (n != 0) std::memcpy(payload_of(b), bytes, n);
    Message *m = message_in(b);
    m->header = CoreHeader{source, tag, 0};
    m->data = payload_of(b);
    m->length = n;
    b->state.store(BlockState::kLibrary);
    return m;
  }

  void raw(std::vector<std::byte> bytes) {
    if (bytes.size() >= offsetof(FragmentHeader, header) + sizeof(rocl_gid_t)) {
      rocl_gid_t source;  // out of the built messages' range
      std::memcpy(&source, bytes.data() + offsetof(FragmentHeader, header), sizeof source);
      source |= kRawSource;
      std::memcpy(bytes.data() + offsetof(FragmentHeader, header), &source, sizeof source);
    }
    if (Message *m = message(kRawSource, 0, bytes.data(), bytes.size())) stripes_->take_fragment(m);
  }

  void built(const std::uint8_t *b) {
    const rocl_gid_t source = kBuiltSource + (b[1] & 1);
    const std::uint64_t id = (b[0] & 3) + 1;
    std::uint64_t total = built_total(source, id);
    if ((b[0] & 0x80) != 0) total += kFragment;  // disagrees with its message
    const std::uint64_t index = b[2] % fragment_count(total, kFragment);
    FragmentHeader h;
    h.fragment_bytes = kFragment;
    h.destination = kDestination + (b[3] & 1);
    h.header = CoreHeader{source, kBuiltTag, 0};
    h.message_id = id;
    h.offset = index * kFragment;
    h.total = total;
    const std::size_t n = std::min<std::uint64_t>(kFragment, total - h.offset);
    std::vector<std::byte> bytes(sizeof h + n);
    std::memcpy(bytes.data(), &h, sizeof h);
    for (std::size_t k = 0; k < n; ++k) bytes[sizeof h + k] = pattern(source, id, h.offset + k);
    if (Message *m = message(source, 0, bytes.data(), bytes.size())) stripes_->take_fragment(m);
  }

  void ordinary(std::uint8_t b) {
    const rocl_gid_t source = kBuiltSource + (b & 1), destination = kDestination + ((b >> 1) & 1);
    const std::uint64_t seq = ++sent_[{source, destination}];
    Message *m = message(source, kOrdinaryTag, &seq, sizeof seq);
    if (m == nullptr) return;
    if (!stripes_->hold(destination, m)) deliver(destination, m);
  }

 private:
  static PoolConfig config() {
    PoolConfig c;
    c.cap_bytes = std::size_t{64} << 20;
    return c;
  }

  int deliver(rocl_gid_t destination, Message *m) {
    const rocl_gid_t source = m->header.source;
    if (m->header.tag == kOrdinaryTag) {
      std::uint64_t seq;
      CHECK(m->length == sizeof seq, "ordinary message of %zu bytes", std::size_t(m->length));
      std::memcpy(&seq, m->data, sizeof seq);
      std::uint64_t &last = received_[{source, destination}];
      CHECK(seq == last + 1, "pair (%llx, %llx): message %llu after %llu",
            static_cast<unsigned long long>(source), static_cast<unsigned long long>(destination),
            static_cast<unsigned long long>(seq), static_cast<unsigned long long>(last));
      last = seq;
    } else if (source < kRawSource) {  // a built message: its bytes follow the pattern
      CHECK(m->header.tag == kBuiltTag, "tag %d", m->header.tag);
      const auto *p = static_cast<const std::byte *>(m->data);
      bool whole = true;
      std::uint64_t id = 0;
      for (std::uint64_t candidate = 1; candidate <= 4; ++candidate) {
        if (built_total(source, candidate) == m->length ||
            built_total(source, candidate) + kFragment == m->length) {
          bool same = true;
          for (std::uint64_t k = 0; k < m->length && same; ++k) {
            same = p[k] == pattern(source, candidate, k);
          }
          if (same) id = candidate;
        }
      }
      whole = id != 0;
      CHECK(whole, "a message of %zu bytes from %llx whose bytes are not its fragments'",
            std::size_t(m->length), static_cast<unsigned long long>(source));
    }
    BlockHeader *b = block_of(m);
    end_message(b);
    pool_.release(b, BlockState::kLibrary);
    return ROCL_OK;
  }

  BufferPool pool_;
  std::unique_ptr<StripeReassembly> stripes_;
  std::map<std::pair<rocl_gid_t, rocl_gid_t>, std::uint64_t> sent_, received_;
};

void run(const std::uint8_t *data, std::size_t size) {
  Run r;
  std::size_t at = 0;
  while (at < size) {
    const std::uint8_t op = data[at++] % 3;
    if (op == 0) {
      if (size - at < 2) break;
      std::size_t len = (data[at] | std::size_t{data[at + 1]} << 8) % 8192;
      at += 2;
      len = std::min(len, size - at);
      std::vector<std::byte> bytes(len);
      if (len != 0) std::memcpy(bytes.data(), data + at, len);
      at += len;
      r.raw(std::move(bytes));
    } else if (op == 1) {
      if (size - at < 4) break;
      r.built(data + at);
      at += 4;
    } else {
      if (size - at < 1) break;
      r.ordinary(data[at++]);
    }
  }
}

std::vector<std::vector<std::uint8_t>> seeds() {
  std::vector<std::vector<std::uint8_t>> out;
  // Message 1 of source 0x100 (2 fragments), an ordinary message between.
  out.push_back({1, 0, 0, 0, 0, 2, 0, 1, 0, 1, 0, 0, 2, 0});
  // Out of order, a repeat, a mismatch, two pairs.
  out.push_back({1, 1, 1, 2, 1, 2, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 2, 3, 1, 0x81, 0, 0, 0});
  // Raw bytes: a header's worth of zeros, and a short one.
  std::vector<std::uint8_t> raw = {0, 64, 0};
  raw.resize(raw.size() + 64, 0);
  out.push_back(raw);
  out.push_back({0, 3, 0, 'R', 'T', 'S'});
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  if (const char *dir = std::getenv("ROCL_FUZZ_WRITE_SEEDS")) {
    int i = 0;
    for (const std::vector<std::uint8_t> &s : seeds()) {
      run(s.data(), s.size());
      const std::string name = std::string(dir) + "/seed-" + std::to_string(i++);
      std::FILE *f = std::fopen(name.c_str(), "wb");
      CHECK(f != nullptr, "cannot write %s", name.c_str());
      std::fwrite(s.data(), 1, s.size(), f);
      std::fclose(f);
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  run(data, size);
  return 0;
}
