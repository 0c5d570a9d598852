// wire_fuzz.cpp - libFuzzer target for the frame validator, the one gate
// every received frame header passes (wire/validate.hpp). Built and run by
// scripts/fuzz.sh (clang++-14, -fsanitize=fuzzer,address,undefined), not by
// the CMake project.
//
// Input: a sequence of records, each
//   1 byte op | 64 header bytes | payload
// where the payload is the next fragment_length bytes (fewer if the input
// ends). Every record's header bytes go through parse_header +
// validate_header, decode_header, decode_frame_header (which reads a 32-byte
// short header when the kind byte says so) and check_wrap_header; op picks
// the peer name (op & 3). Checked for every record: the entry points agree
// with each other, a rejection is ROCL_EPEER with a sentence naming the
// peer, an accepted header obeys the bounds (lengths within the limits, the
// fragment inside its message, gids neither 0 nor all ones), and a short
// header stands for an eager frame of its length. Any disagreement aborts.
//
// With ROCL_FUZZ_WRITE_SEEDS=<dir> in the environment the binary writes a few
// valid seed inputs to <dir> and exits.
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "status/status.hpp"
#include "wire/validate.hpp"

#include "fuzz_util.hpp"

using namespace rocl::wire;

namespace {

constexpr Limits kLimits{.max_message_bytes = 1u << 16, .max_fragment_bytes = 1u << 12};
const char *const kPeers[4] = {"ctx0", "ctx1", "ctx2", "ctx3"};

constexpr rocl::fuzz::Target kTarget{.name = "wire_fuzz", .last_error = rocl::impl::last_error};

constexpr std::uint64_t kAllOnes = ~std::uint64_t{0};

void check_rejection(int rc, const char *peer) {
  CHECK(rc == ROCL_EPEER, "rc %d", rc);
  const std::string expected = std::string("frame from ") + peer;
  CHECK(std::strncmp(rocl::impl::last_error(), expected.c_str(), expected.size()) == 0,
        "sentence '%s' does not name %s", rocl::impl::last_error(), peer);
}

void check_accepted(const MessageHeader &h) {
  CHECK(h.magic == kMagic && h.version == kVersion, "magic %#x version %u", unsigned(h.magic),
        unsigned(h.version));
  CHECK(h.total_length <= kLimits.max_message_bytes, "%" PRIu64, h.total_length);
  CHECK(h.fragment_length <= kLimits.max_fragment_bytes, "%" PRIu32, h.fragment_length);
  CHECK(h.fragment_offset <= h.total_length &&
            h.fragment_length <= h.total_length - h.fragment_offset,
        "range %" PRIu64 "+%" PRIu32 " of %" PRIu64, h.fragment_offset, h.fragment_length,
        h.total_length);
  CHECK(h.source != 0 && h.source != kAllOnes && h.destination != 0 && h.destination != kAllOnes,
        "gids %#" PRIx64 " %#" PRIx64, h.source, h.destination);
  CHECK(h.tag >= 0, "tag %d", h.tag);
}

// One record's header bytes through every entry point of the validator.
void check_record(std::span<const std::byte> record, const char *peer) {
  MessageHeader parsed;
  CHECK(parse_header(record, &parsed), "%zu bytes", record.size());
  rocl::impl::clear_error();
  const int validated = validate_header(parsed, kLimits, peer);
  if (validated != ROCL_OK) {
    check_rejection(validated, peer);
  } else {
    check_accepted(parsed);
  }
  MessageHeader decoded;
  const int rc = decode_header(record, kLimits, peer, &decoded);
  CHECK(rc == validated, "decode_header %d, validate_header %d", rc, validated);
  if (rc == ROCL_OK) {
    CHECK(std::memcmp(&decoded, &parsed, sizeof decoded) == 0, "decode_header changed fields");
  }
  // The frame entry of a transport that sends both header kinds.
  std::size_t header_bytes = 0;
  MessageHeader framed;
  const int frc = decode_frame_header(record, kLimits, peer, &framed, &header_bytes);
  const bool is_short = static_cast<Kind>(record[kKindOffset]) == Kind::kShort;
  if (frc != ROCL_OK) {
    check_rejection(frc, peer);
  } else if (is_short) {
    CHECK(header_bytes == sizeof(ShortHeader), "%zu", header_bytes);
    CHECK(framed.kind == Kind::kEager && framed.fragment_offset == 0 &&
              framed.fragment_length == framed.total_length,
          "a short header is an eager frame of its length");
    check_accepted(framed);
    ShortHeader sh;
    const int src = decode_short_header(record.data(), kLimits, peer, &sh);
    CHECK(src == ROCL_OK, "decode_short_header %d where decode_frame_header accepted", src);
  } else {
    CHECK(header_bytes == sizeof(MessageHeader), "%zu", header_bytes);
    CHECK(validated == ROCL_OK, "decode_frame_header accepted what validate_header refused");
  }
  if (!is_short) {
    CHECK((frc == ROCL_OK) == (validated == ROCL_OK), "decode_frame_header %d, validate %d", frc,
          validated);
  }
  const int wrc = check_wrap_header(record.data(), peer);
  if (wrc != ROCL_OK) check_rejection(wrc, peer);
  CHECK(kind_name(static_cast<Kind>(record[kKindOffset])) != nullptr, "kind name");
}

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
    rocl::fuzz::write_file(std::string(dir) + "/seed-" + std::to_string(i), seeds[i]);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  rocl::fuzz::seeds_then_exit(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rocl::fuzz::View input = rocl::fuzz::as_view(data, size);
  while (input.size() >= 1 + sizeof(MessageHeader)) {
    const auto op = static_cast<std::uint8_t>(input[0]);
    input = input.subspan(1);
    const auto record = input.first(sizeof(MessageHeader));
    check_record(record, kPeers[op & 3]);
    MessageHeader h;
    CHECK(parse_header(record, &h), "%zu bytes", record.size());
    input = input.subspan(sizeof h);
    input = input.subspan(h.fragment_length < input.size() ? h.fragment_length : input.size());
  }
  return 0;
}
