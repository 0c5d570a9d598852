// ncs_wire_fuzz.cpp - libFuzzer target for the header of NCS messages
// (layers/ncs/src/wire.hpp): check_header is what every message another
// process sends passes before NCS queues it, returns its credits
// (credits.hpp) or checks its checksum (message_checksum, CRC32C). Built
// and run by scripts/fuzz.sh (clang++-14, -fsanitize=fuzzer,address,
// undefined), not by the CMake project.
//
// The first input byte picks the mode:
//   even: u8 processes - 1 | u16 window | u8 taken | a message (header
//         and payload, exactly its bytes on the heap). check_header
//         accepted: the magic, a known channel and flags, payload_size the
//         rest of the message, thread ids 0..NCS_MAX_THREADS-1, the sending
//         process 0..processes-1; refused: a sentence, *out untouched. An
//         accepted message is then handled as Runtime::deliver and take
//         do: its checksum computed (nothing read past the message), a
//         credit message's credits given back to a route whose sender had
//         taken `taken` credits of a window of `window` (after it, 0..window
//         credits left, the sum capped at the window), a credited message
//         owed back (0, or a batch of 1..max(1, window / 2)).
//   odd:  u8 channel | u8 flags | u16 window | i32 from_thread,
//         from_process, to_thread | u32 credits | u16 flip | a payload
//         (the rest): the message a sender builds, checksummed. Accepted
//         by check_header exactly when its fields are in range; its
//         checksum matches, and no longer once the payload byte at `flip`
//         changes. crc32c agrees with a bitwise reference and continues
//         across a split of the bytes.
// Any broken invariant aborts.
//
// With ROCL_FUZZ_WRITE_SEEDS=<dir> in the environment the binary writes
// seed inputs (messages of each channel, built messages) to <dir> and
// exits.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "credits.hpp"
#include "ncs.h"
#include "wire.hpp"

#include "fuzz_util.hpp"

using namespace ncs;

namespace {

constexpr rocl::fuzz::Target kTarget{.name = "ncs_wire_fuzz"};

using rocl::fuzz::Bytes;
using rocl::fuzz::View;
using rocl::fuzz::write_file;

bool in_range(int id, int limit) {
  return id >= 0 && id < limit;
}

// The header rules, restated.
bool valid(const Header &h, std::size_t len, int processes) {
  return h.magic == kMagic && static_cast<unsigned>(h.channel) <= 3 &&
         (h.flags & ~(kChecksummed | kCredited)) == 0 && len >= sizeof h &&
         h.payload_size == len - sizeof h && in_range(h.to_thread, NCS_MAX_THREADS) &&
         in_range(h.from_thread, NCS_MAX_THREADS) && in_range(h.from_process, processes);
}

// check_header and its invariants; true and *out if accepted.
bool check(const void *message, std::size_t len, int processes, Header *out) {
  Header h;
  h.checksum = 0x5eed;
  const char *why = check_header(message, len, processes, &h);
  Header seen{};
  if (len >= sizeof seen) std::memcpy(&seen, message, sizeof seen);
  const bool ok = len >= sizeof seen && valid(seen, len, processes);
  CHECK((why == nullptr) == ok, "check_header says '%s' of a header that is %s", why ? why : "fine",
        ok ? "valid" : "not");
  if (why != nullptr) {
    CHECK(why[0] != '\0' && h.checksum == 0x5eed, "a refusal without a sentence or with *out");
    return false;
  }
  CHECK(std::memcmp(&h, &seen, sizeof h) == 0, "*out is not the header");
  *out = h;
  return true;
}

void raw_mode(View in) {
  rocl::fuzz::Reader r(in);
  const int processes = static_cast<int>(r.u8()) + 1;
  const int window = static_cast<int>(r.u16());
  const int taken = static_cast<int>(r.u8());
  in = r.rest();
  // Exactly the message's bytes on the heap, as rocl hands them over.
  auto message = std::make_unique<std::byte[]>(in.size() + (in.empty() ? 1 : 0));
  if (!in.empty()) std::memcpy(message.get(), in.data(), in.size());
  Header h;
  if (!check(message.get(), in.size(), processes, &h)) return;
  const void *payload = message.get() + sizeof h;
  if ((h.flags & kChecksummed) != 0) (void)message_checksum(h, payload);
  const Route back{h.to_thread, 0, h.from_thread, h.from_process};
  if (h.channel == Channel::kCredit) {
    SendCredits credits(window);
    for (int i = 0; i < taken && i < window; ++i) CHECK(credits.take(back), "take %d", i);
    const int before = credits.left(back);
    credits.give_back(back, h.credits);
    const std::int64_t want = std::min<std::int64_t>(window, std::int64_t{before} + h.credits);
    CHECK(credits.left(back) == want, "%d credits left of a window of %d after %d + %" PRIu32,
          credits.left(back), window, before, h.credits);
  }
  if ((h.flags & kCredited) != 0) {
    CreditDebts debts;
    const Route route{h.from_thread, h.from_process, h.to_thread, 0};
    const std::uint32_t n = debts.took(route, h.window);
    const std::uint32_t batch = std::max(1, h.window / 2);
    CHECK(n == 0 || n == batch, "%" PRIu32 " credits owed for a window of %u", n,
          unsigned(h.window));
  }
}

std::uint32_t reference_crc32c(View bytes) {
  std::uint32_t crc = ~0u;
  for (const std::byte b : bytes) {
    crc ^= static_cast<std::uint32_t>(b);
    for (int k = 0; k < 8; ++k) crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82f63b78 : crc >> 1;
  }
  return ~crc;
}

void build_mode(View in) {
  rocl::fuzz::Reader r(in);
  Header h;
  h.channel = static_cast<Channel>(r.u8());
  h.flags = r.u8() | kChecksummed;
  h.window = r.u16();
  h.from_thread = static_cast<std::int32_t>(r.u32());
  h.from_process = static_cast<std::int32_t>(r.u32());
  h.to_thread = static_cast<std::int32_t>(r.u32());
  h.credits = r.u32();
  const std::size_t flip = r.u16();
  const View payload = r.rest();
  h.payload_size = payload.size();
  Bytes message(sizeof h + payload.size());
  std::memcpy(message.data() + sizeof h, payload.data(), payload.size());
  h.checksum = message_checksum(h, message.data() + sizeof h);
  std::memcpy(message.data(), &h, sizeof h);
  const int processes = h.from_process >= 0 && h.from_process < 256 ? h.from_process + 1 : 256;
  Header got;
  if (check(message.data(), message.size(), processes, &got)) {
    CHECK(message_checksum(got, message.data() + sizeof got) == got.checksum, "checksum");
  }
  // CRC32C: the reference's, and across a split.
  const View all(message);
  const std::uint32_t crc = crc32c(0, all.data(), all.size());
  CHECK(crc == reference_crc32c(all), "crc32c %08x, the reference %08x", crc,
        reference_crc32c(all));
  const std::size_t cut = flip % (all.size() + 1);
  CHECK(crc32c(crc32c(0, all.data(), cut), all.data() + cut, all.size() - cut) == crc,
        "crc32c split at %zu", cut);
  if (!payload.empty()) {
    message[sizeof h + flip % payload.size()] ^= std::byte{0x5a};
    CHECK(message_checksum(h, message.data() + sizeof h) != h.checksum,
          "a changed payload byte keeps the checksum");
  }
}

// ---- seed generator ---------------------------------------------------------

template <class T>
void put(Bytes &out, T v) {
  const auto *p = reinterpret_cast<const std::byte *>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

Bytes raw_seed(Channel channel, std::uint8_t flags, std::uint32_t credits, const char *payload) {
  Bytes in = {std::byte{0}, std::byte{3}};  // 4 processes
  put<std::uint16_t>(in, 8);                // window
  put<std::uint8_t>(in, 6);                 // taken
  Header h;
  h.channel = channel;
  h.flags = flags;
  h.window = 8;
  h.from_thread = 2;
  h.from_process = 1;
  h.to_thread = 3;
  h.credits = credits;
  h.payload_size = std::strlen(payload);
  if ((flags & kChecksummed) != 0) h.checksum = message_checksum(h, payload);
  put(in, h);
  in.insert(in.end(), reinterpret_cast<const std::byte *>(payload),
            reinterpret_cast<const std::byte *>(payload) + h.payload_size);
  return in;
}

void write_seeds(const char *dir) {
  const std::string d = std::string(dir) + "/seed-";
  write_file(d + "p2p", raw_seed(Channel::kPointToPoint, kCredited, 0, "hello, thread 3"));
  write_file(d + "p2p-checksummed",
             raw_seed(Channel::kPointToPoint, kChecksummed | kCredited, 0, "checked bytes"));
  write_file(d + "collective", raw_seed(Channel::kCollective, 0, 0, "reduce me"));
  write_file(d + "signal", raw_seed(Channel::kSignal, 0, 0, ""));
  write_file(d + "credit", raw_seed(Channel::kCredit, 0, 4, ""));
  write_file(d + "credit-huge", raw_seed(Channel::kCredit, 0, 0x7fffffff, ""));
  Bytes build = {std::byte{1}, std::byte{0}, std::byte{kCredited}};
  put<std::uint16_t>(build, 8);
  for (std::int32_t v : {5, 2, 7}) put(build, v);
  put<std::uint32_t>(build, 0);
  put<std::uint16_t>(build, 3);
  const char *payload = "a payload of some bytes";
  build.insert(build.end(), reinterpret_cast<const std::byte *>(payload),
               reinterpret_cast<const std::byte *>(payload) + std::strlen(payload));
  write_file(d + "build", build);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  rocl::fuzz::seeds_then_exit(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rocl::fuzz::pick_mode(data, size, {raw_mode, build_mode});
  return 0;
}
