// shm_connect_fuzz.cpp - libFuzzer target for what the two processes of an
// shm connection read of each other before trusting it
// (src/transport/shm/shm_handshake.hpp, used by shm_connect.cpp and
// shm_slot_reader.cpp): the address a receiver publishes (parse_address),
// the header of its inbox that a connector maps (read_shape + shape_ok: the
// connector then writes into the ring of the slot it claims), and the Hello
// a connector writes first in its slot (hello_ok). Built and run by
// scripts/fuzz.sh (clang++-14, -fsanitize=fuzzer,address,undefined), not by
// the CMake project.
//
// The secret (all zero bytes) and the inbox's challenge are fixed, so that
// a seed can hold a valid proof. The first input byte picks the mode
// (modulo 3):
//   0: the rest is an address. Accepted: "shm:" and three numbers, each
//      the decimal number its 1..20 digits write (no wrap-around), pid
//      1..2^31-1, fd 0..2^31-1; the host tag is what follows; the address
//      written again from the fields parses to the same fields.
//   1: u64 mapped | a SegHeader's bytes (zeros past the input's end).
//      Accepted: magic and version, 1..kMaxSlots slots, their controls
//      inside the header, rings of a power of two from 4096 bytes, and
//      every slot's ring inside the `mapped` bytes, the last one ending at
//      the end (computed without overflow).
//   2: u32 slot | a Hello's bytes. Accepted exactly when the magic, the
//      slot and the proof are right; then make_hello with its fields makes
//      the same bytes (but for the unused pad).
// Any broken invariant aborts.
//
// With ROCL_FUZZ_WRITE_SEEDS=<dir> in the environment the binary writes
// seed inputs (addresses, inbox headers, Hellos) to <dir> and exits.
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "transport/shm/shm_handshake.hpp"
#include "transport/shm/shm_transport.hpp"

#include "fuzz_util.hpp"

using namespace rocl::impl;
using namespace rocl::impl::shm::detail;

namespace {

constexpr rocl::fuzz::Target kTarget{.name = "shm_connect_fuzz"};

using rocl::fuzz::Bytes;
using rocl::fuzz::View;
using rocl::fuzz::write_file;
using u128 = unsigned __int128;

const JobSecret kSecret{};  // all zero: fixed, so that the seeds stay valid

JobSecret::Challenge challenge() {
  JobSecret::Challenge c;
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<std::uint8_t>(0xa0 + i);
  return c;
}

// The decimal digits of v, as written after the leading zeros of `digits`.
bool writes(std::string_view digits, std::uint64_t v) {
  const auto first = digits.find_first_not_of('0');
  const std::string_view number = first == std::string_view::npos ? "0" : digits.substr(first);
  return number == std::to_string(v);
}

void address_mode(View in) {
  const std::string_view a(reinterpret_cast<const char *>(in.data()), in.size());
  const auto p = parse_address(a);
  if (!p) return;
  CHECK(a.substr(0, 4) == "shm:", "'%.*s'", static_cast<int>(a.size()), a.data());
  CHECK(p->pid >= 1 && p->fd >= 0, "pid %d fd %d", int(p->pid), p->fd);
  std::string_view rest = a.substr(4);
  const std::uint64_t fields[3] = {static_cast<std::uint64_t>(p->pid),
                                   static_cast<std::uint64_t>(p->fd), p->size};
  for (const std::uint64_t field : fields) {
    const auto colon = rest.find(':');
    CHECK(colon != std::string_view::npos && colon >= 1 && colon <= 20, "a number of %zu digits",
          colon);
    CHECK(writes(rest.substr(0, colon), field), "'%.*s' read as %" PRIu64, static_cast<int>(colon),
          rest.data(), field);
    rest.remove_prefix(colon + 1);
  }
  CHECK(p->host == rest, "host '%s'", p->host.c_str());
  const std::string again = "shm:" + std::to_string(p->pid) + ":" + std::to_string(p->fd) + ":" +
                            std::to_string(p->size) + ":" + p->host;
  const auto q = parse_address(again);
  CHECK(q && q->pid == p->pid && q->fd == p->fd && q->size == p->size && q->host == p->host,
        "'%s' written again does not parse the same", again.c_str());
}

void header_mode(View in) {
  rocl::fuzz::Reader r(in);
  const std::uint64_t mapped = r.u64();
  in = r.rest();
  alignas(SegHeader) std::byte raw[sizeof(SegHeader)] = {};
  std::memcpy(raw, in.data(), in.size() < sizeof raw ? in.size() : sizeof raw);
  const SegShape s = read_shape(*reinterpret_cast<const SegHeader *>(raw));
  if (!shape_ok(s, mapped)) return;
  CHECK(s.magic == kSegMagic && s.version == kSegVersion, "magic %#" PRIx64 " version %u", s.magic,
        s.version);
  CHECK(s.slots >= 1 && s.slots <= kMaxSlots, "%" PRIu64 " slots", s.slots);
  CHECK(4096 + s.slots * sizeof(SlotCtl) <= s.header_bytes, "slot controls past the header");
  CHECK(s.ring_bytes >= 4096 && (s.ring_bytes & (s.ring_bytes - 1)) == 0, "rings of %" PRIu64,
        s.ring_bytes);
  // Where the connector puts the ring of each slot it may claim.
  for (const std::uint64_t slot : {std::uint64_t{0}, s.slots - 1}) {
    const u128 begin = u128{s.header_bytes} + u128{slot} * s.ring_bytes;
    CHECK(begin + s.ring_bytes <= mapped,
          "slot %" PRIu64 "'s ring of %" PRIu64 " bytes at %" PRIu64 " + %" PRIu64 " * %" PRIu64
          " is outside the %" PRIu64 " mapped bytes",
          slot, s.ring_bytes, s.header_bytes, slot, s.ring_bytes, mapped);
  }
  CHECK(u128{s.header_bytes} + u128{s.slots} * s.ring_bytes == mapped, "the rings end early");
}

void hello_mode(View in) {
  rocl::fuzz::Reader r(in);
  const std::uint32_t slot = r.u32();
  in = r.rest();
  Hello h{};
  std::memcpy(&h, in.data(), in.size() < sizeof h ? in.size() : sizeof h);
  const auto proof = kSecret.prove(shm::kProofLabel, challenge());
  const bool right = h.magic == kHelloMagic && h.slot == slot &&
                     std::memcmp(h.proof, proof.data(), proof.size()) == 0;
  const bool ok = hello_ok(h, slot, kSecret, challenge());
  CHECK(ok == right, "hello_ok %d for a Hello that is %s", int(ok), right ? "right" : "wrong");
  if (!ok) return;
  Hello again = make_hello(kSecret, challenge(), h.pid, slot, h.pool_fd, h.pool_bytes);
  again.pad = h.pad;
  CHECK(std::memcmp(&again, &h, sizeof h) == 0, "a Hello makes other bytes again");
}

// ---- seed generator ---------------------------------------------------------

void append(Bytes &out, const void *p, std::size_t n) {
  const auto *b = static_cast<const std::byte *>(p);
  out.insert(out.end(), b, b + n);
}

Bytes header_seed(std::uint32_t slots, std::uint64_t ring_bytes) {
  const std::uint64_t header_bytes = header_bytes_for(slots);
  const std::uint64_t mapped = header_bytes + slots * ring_bytes;
  Bytes in = {std::byte{1}};
  append(in, &mapped, 8);
  alignas(SegHeader) std::byte raw[sizeof(SegHeader)] = {};
  auto *h = reinterpret_cast<SegHeader *>(raw);
  h->magic = kSegMagic;
  h->version = kSegVersion;
  h->slots = slots;
  h->ring_bytes = ring_bytes;
  h->header_bytes = header_bytes;
  std::memcpy(h->challenge, challenge().data(), 32);
  h->pool_fd = 5;
  h->pool_pid = 1234;
  h->pool_bytes = 1 << 20;
  append(in, raw, sizeof raw);
  return in;
}

void write_seeds(const char *dir) {
  const std::string d = std::string(dir) + "/seed-";
  int i = 0;
  for (const std::string_view a :
       {"shm:4242:7:1118208:boot-1234/pid-4026531836/net-4026531840",
        "shm:1:0:0:", "shm:2147483647:2147483647:18446744073709551615:h"}) {
    Bytes in = {std::byte{0}};
    append(in, a.data(), a.size());
    write_file(d + "address-" + std::to_string(i++), in);
  }
  write_file(d + "header-2x4096", header_seed(2, 4096));
  write_file(d + "header-64x64k", header_seed(64, 65536));
  write_file(d + "header-1024x1m", header_seed(kMaxSlots, 1 << 20));
  // Refused: 2 rings of 2^63 bytes, whose product wraps around to 0 (a
  // connector once took it and put its ring past the end of the mapping).
  Bytes wraps = header_seed(2, 4096);
  const std::uint64_t mapped = header_bytes_for(2), huge = std::uint64_t{1} << 63;
  std::memcpy(wraps.data() + 1, &mapped, 8);
  std::memcpy(wraps.data() + 1 + 8 + offsetof(SegHeader, ring_bytes), &huge, 8);
  write_file(d + "header-wraps", wraps);
  for (const std::uint32_t slot : {0u, 3u}) {
    Bytes in = {std::byte{2}};
    append(in, &slot, 4);
    const Hello h =
        make_hello(kSecret, challenge(), 4242, slot, slot == 0 ? ~0u : 9, slot == 0 ? 0 : 1 << 20);
    append(in, &h, sizeof h);
    const std::uint64_t probe = 0x7ffd12345678;
    append(in, &probe, 8);
    write_file(d + "hello-" + std::to_string(slot), in);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  rocl::fuzz::seeds_then_exit(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rocl::fuzz::pick_mode(data, size, {address_mode, header_mode, hello_mode});
  return 0;
}
