// wire_fuzz.cpp - libFuzzer target for the frame validator and reassembly.
// Built and run by scripts/fuzz.sh (clang++-14, -fsanitize=fuzzer,address,
// undefined), not by the CMake project.
//
// Input: a sequence of records, each
//   1 byte op | 64-byte header | payload
// where the payload is the next fragment_length bytes (fewer if the input
// ends). op & 3: 0 add the frame after validate_header, 1 add it after
// decode_header (or decode_frame_header if op & 16, which reads a 32-byte
// short header when the kind byte says so), 2 take (origin, message_id),
// 3 drop the origin;
// origin = (op >> 2) & 3 picks one of four peer contexts.
// Every header goes through parse_header + validate_header; valid frames go
// to a ReassemblyTable, which allocates exactly total_length bytes per
// message (so ASan sees any write past the message). A shadow model predicts
// each result and checks received() <= total_length, the byte counts, and
// every rebuilt message byte for byte; any disagreement aborts.
//
// With ROCL_FUZZ_WRITE_SEEDS=<dir> in the environment the binary writes a few
// valid seed inputs to <dir> and exits.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "status/status.hpp"
#include "wire/reassembly.hpp"
#include "wire/validate.hpp"

using namespace rocl::wire;

namespace {

constexpr Limits kLimits{.max_message_bytes = 1u << 16, .max_fragment_bytes = 1u << 12};
constexpr TableLimits kTableLimits{
    .max_open_messages = 8, .max_open_bytes = 1u << 15, .max_ranges = 16};
constexpr std::uint64_t kContexts[4] = {0x0001000000000001, 0x0001000000000002, 0x0002000000000001,
                                        0x7fff000000000001};
const char *const kPeers[4] = {"ctx0", "ctx1", "ctx2", "ctx3"};

#define CHECK(cond, ...)                                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::fprintf(stderr, "wire_fuzz: %s failed: ", #cond);                 \
      std::fprintf(stderr, __VA_ARGS__);                                     \
      std::fprintf(stderr, " (last error: %s)\n", rocl::impl::last_error()); \
      std::abort();                                                          \
    }                                                                        \
  } while (0)

// What the table should hold for one open message.
struct Shadow {
  MessageHeader first;
  std::vector<int> bytes;  // -1: not received
  std::uint64_t received = 0;
  std::size_t ranges = 0;
};
using Key = std::pair<std::uint64_t, std::uint64_t>;

struct Model {
  ReassemblyTable table{kTableLimits};
  std::map<Key, Shadow> open;
  std::uint64_t open_bytes = 0;

  void check_all() const {
    CHECK(table.open_messages() == open.size(), "%zu vs %zu", table.open_messages(), open.size());
    CHECK(table.open_bytes() == open_bytes, "%" PRIu64 " vs %" PRIu64, table.open_bytes(),
          open_bytes);
    CHECK(open_bytes <= kTableLimits.max_open_bytes, "%" PRIu64, open_bytes);
    for (const auto &[key, s] : open) {
      const Reassembly *r = table.find(key.first, key.second);
      CHECK(r != nullptr, "message_id %" PRIu64, key.second);
      CHECK(r->received() <= r->total_length(), "%" PRIu64, r->received());
      CHECK(r->received() == s.received, "%" PRIu64 " vs %" PRIu64, r->received(), s.received);
      CHECK(r->ranges() == s.ranges, "%zu vs %zu", r->ranges(), s.ranges);
      CHECK(r->complete() == (s.received == s.first.total_length), "message_id %" PRIu64,
            key.second);
    }
  }

  void add(std::uint64_t origin, const char *peer, const MessageHeader &h,
           std::span<const std::byte> payload) {
    const Key key{origin, h.message_id};
    auto it = open.find(key);
    // Predict the outcome.
    bool ok = h.kind == Kind::kFragment && payload.size() == h.fragment_length;
    const std::uint64_t off = h.fragment_offset, end = off + h.fragment_length;
    bool join_prev = false, join_next = false;
    if (ok && it == open.end()) {
      ok = open.size() < kTableLimits.max_open_messages &&
           h.total_length <= kTableLimits.max_open_bytes - open_bytes;
    } else if (ok) {
      const Shadow &s = it->second;
      ok = h.source == s.first.source && h.destination == s.first.destination &&
           h.tag == s.first.tag && h.domain == s.first.domain &&
           h.total_length == s.first.total_length && s.received < s.first.total_length;
      for (std::uint64_t i = off; ok && i < end; ++i) {
        ok = s.bytes[i] < 0;
      }
      if (ok) {
        join_prev = off > 0 && s.bytes[off - 1] >= 0;
        join_next = end < h.total_length && s.bytes[end] >= 0;
        ok = join_prev || join_next || s.ranges < kTableLimits.max_ranges;
      }
    }
    const std::uint64_t before = it == open.end() ? 0 : it->second.received;
    const int rc = table.add(origin, h, payload, peer);
    CHECK((rc >= 0) == ok, "rc %d, predicted %s for offset %" PRIu64 " length %" PRIu32, rc,
          ok ? "success" : "failure", off, h.fragment_length);
    if (rc < 0) {
      CHECK(rocl::impl::last_error()[0] != '\0', "rc %d without a sentence", rc);
      const Reassembly *r = table.find(origin, h.message_id);
      CHECK((r != nullptr) == (it != open.end()), "rejected frame changed the table");
      CHECK(r == nullptr || r->received() == before, "rejected frame changed received()");
      return;
    }
    if (it == open.end()) {
      Shadow s{h, std::vector<int>(h.total_length, -1), 0, 0};
      it = open.emplace(key, std::move(s)).first;
      open_bytes += h.total_length;
    }
    Shadow &s = it->second;
    for (std::uint64_t i = off; i < end; ++i) {
      s.bytes[i] = static_cast<int>(payload[i - off]);
    }
    s.received += h.fragment_length;
    s.ranges += 1 - (join_prev ? 1 : 0) - (join_next ? 1 : 0);
    CHECK((rc == kMessageComplete) == (s.received == h.total_length), "rc %d", rc);
  }

  void take(std::uint64_t origin, std::uint64_t message_id) {
    ReassembledMessage m;
    const int rc = table.take(origin, message_id, &m);
    auto it = open.find(Key{origin, message_id});
    if (it == open.end()) {
      CHECK(rc == ROCL_ENOTFOUND, "rc %d", rc);
      return;
    }
    if (it->second.received != it->second.first.total_length) {
      CHECK(rc == ROCL_EBUSY, "rc %d", rc);
      return;
    }
    CHECK(rc == ROCL_OK, "rc %d", rc);
    CHECK(m.length == it->second.first.total_length, "%" PRIu64, m.length);
    for (std::uint64_t i = 0; i < m.length; ++i) {
      CHECK(static_cast<int>(m.data[i]) == it->second.bytes[i], "byte %" PRIu64, i);
    }
    open_bytes -= m.length;
    open.erase(it);
  }

  void drop(std::uint64_t origin) {
    std::size_t n = 0;
    for (auto it = open.begin(); it != open.end();) {
      if (it->first.first == origin) {
        open_bytes -= it->second.first.total_length;
        it = open.erase(it);
        ++n;
      } else {
        ++it;
      }
    }
    const std::size_t dropped = table.drop_peer(origin);
    CHECK(dropped == n, "%zu vs %zu", dropped, n);
  }
};

// ---- seed generator ---------------------------------------------------------

MessageHeader seed_header(Kind kind, std::uint64_t id, std::uint64_t total, std::uint64_t off,
                          std::uint32_t len) {
  MessageHeader h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.kind = kind;
  h.source = 0x0001000000000010;
  h.destination = 0x0002000000000020;
  h.tag = 1;
  h.domain = 0;
  h.message_id = id;
  h.total_length = total;
  h.fragment_offset = off;
  h.fragment_length = len;
  return h;
}

void put(std::vector<std::uint8_t> &out, std::uint8_t op, const MessageHeader &h) {
  out.push_back(op);
  const auto *p = reinterpret_cast<const std::uint8_t *>(&h);
  out.insert(out.end(), p, p + sizeof h);
  for (std::uint32_t i = 0; i < h.fragment_length; ++i) {
    out.push_back(static_cast<std::uint8_t>(h.fragment_offset + i));
  }
}

void write_seeds(const char *dir) {
  std::vector<std::vector<std::uint8_t>> seeds(5);
  // 0: three fragments in order, then take.
  put(seeds[0], 0, seed_header(Kind::kFragment, 1, 48, 0, 16));
  put(seeds[0], 0, seed_header(Kind::kFragment, 1, 48, 16, 16));
  put(seeds[0], 0, seed_header(Kind::kFragment, 1, 48, 32, 16));
  put(seeds[0], 2, seed_header(Kind::kFragment, 1, 48, 0, 0));
  // 1: out of order on two contexts, a duplicate, then drop one peer.
  put(seeds[1], 0, seed_header(Kind::kFragment, 2, 40, 30, 10));
  put(seeds[1], 4, seed_header(Kind::kFragment, 2, 40, 0, 20));
  put(seeds[1], 0, seed_header(Kind::kFragment, 2, 40, 0, 15));
  put(seeds[1], 0, seed_header(Kind::kFragment, 2, 40, 30, 10));
  put(seeds[1], 3, seed_header(Kind::kFragment, 2, 40, 0, 0));
  put(seeds[1], 4, seed_header(Kind::kFragment, 2, 40, 20, 20));
  put(seeds[1], 6, seed_header(Kind::kFragment, 2, 40, 0, 0));
  // 2: an eager frame, an overlap, a single-fragment message.
  put(seeds[2], 0, seed_header(Kind::kEager, 3, 8, 0, 8));
  put(seeds[2], 8, seed_header(Kind::kFragment, 4, 32, 8, 16));
  put(seeds[2], 8, seed_header(Kind::kFragment, 4, 32, 16, 16));
  put(seeds[2], 0, seed_header(Kind::kFragment, 5, 4, 0, 4));
  put(seeds[2], 2, seed_header(Kind::kFragment, 5, 4, 0, 0));
  // 3: rendezvous frames and a fragment past the end.
  put(seeds[3], 0, seed_header(Kind::kRendezvousRequest, 6, 4096, 0, 0));
  put(seeds[3], 0, seed_header(Kind::kRendezvousReply, 6, 4096, 0, 0));
  put(seeds[3], 0, seed_header(Kind::kFragment, 7, 64, 60, 8));
  // 4: many small disjoint fragments (towards the range limit).
  for (std::uint64_t off = 0; off < 40; off += 2) {
    put(seeds[4], 12, seed_header(Kind::kFragment, 8, 40, off, 1));
  }
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = std::string(dir) + "/seed-" + std::to_string(i);
    std::FILE *f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(seeds[i].data(), 1, seeds[i].size(), f) != seeds[i].size()) {
      std::perror(path.c_str());
      std::exit(1);
    }
    std::fclose(f);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  if (const char *dir = std::getenv("ROCL_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Model model;
  auto input = std::span<const std::byte>(reinterpret_cast<const std::byte *>(data), size);
  while (input.size() >= 1 + sizeof(MessageHeader)) {
    const auto op = static_cast<std::uint8_t>(input[0]);
    input = input.subspan(1);
    const auto record = input;  // header first
    MessageHeader h;
    CHECK(parse_header(input, &h), "%zu bytes", input.size());
    input = input.subspan(sizeof h);
    const std::size_t n = h.fragment_length < input.size() ? h.fragment_length : input.size();
    const auto payload = input.first(n);
    input = input.subspan(n);
    const std::uint64_t origin = kContexts[(op >> 2) & 3];
    const char *peer = kPeers[(op >> 2) & 3];
    switch (op & 3) {
      case 0:
      case 1: {
        rocl::impl::clear_error();
        // op 0 checks the parsed header, op 1 decodes it from the bytes
        // again: as a 64-byte header, or (op & 16) as whichever header its
        // kind byte announces (a short one stands for an eager frame).
        std::size_t header_bytes = 0;
        const int rc = (op & 3) == 0 ? validate_header(h, kLimits, peer)
                       : (op & 16) != 0
                           ? decode_frame_header(record, kLimits, peer, &h, &header_bytes)
                           : decode_header(record, kLimits, peer, &h);
        if (rc != ROCL_OK) {
          CHECK(rc == ROCL_EPEER, "rc %d", rc);
          CHECK(std::strncmp(rocl::impl::last_error(), "frame from ctx", 14) == 0, "sentence");
          break;
        }
        CHECK(h.total_length <= kLimits.max_message_bytes, "%" PRIu64, h.total_length);
        CHECK(h.fragment_offset <= h.total_length &&
                  h.fragment_length <= h.total_length - h.fragment_offset,
              "range");
        model.add(origin, peer, h, payload);
        break;
      }
      case 2:
        model.take(origin, h.message_id);
        break;
      case 3:
        model.drop(origin);
        break;
    }
    model.check_all();
  }
  return 0;
}
