// rma_wire.hpp - the messages between an origin and a target's RMA agent
// (win.hpp): one request per operation, in the agent's resource's domain
// kRequestDomain with the request's kind as tag, answered (where it asks
// for an answer) in kReplyDomain with the request's reply tag.
//
// A request is a fixed header, the target layout's blocks (nblocks pairs
// of displacement and length) and, for operations that carry data, the
// packed origin bytes: inline, or (kSeparateData) in the next message from
// the same origin, tag kData, so that a long put travels from the origin's
// memory into the target's without staging. The processes of one job share
// a byte order: fields travel in the host's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "win.hpp"

namespace rmpi::wire {

inline constexpr std::uint32_t kRequestDomain = 2;
inline constexpr std::uint32_t kReplyDomain = 3;

enum Kind : std::uint8_t {
  kPut = 1,
  kGet,
  kAccumulate,   // fetches the old values too when reply != 0
  kCompareSwap,  // data: the new value then the compare value
  kLock,         // answered when granted
  kUnlock,       // answered when every earlier request is applied
  kFlush,        // answered when every earlier request is applied
  kData,         // the bytes of the previous request (kSeparateData)
  kStop,         // from the agent's own process: end the thread
};
enum Flags : std::uint8_t { kSeparateData = 1, kExclusive = 2 };
// A reply's rocl message flag: the request failed (the reason comes with
// the next flush or unlock's answer).
inline constexpr unsigned kFailed = 1;

struct Header {
  std::uint32_t key = 0;  // the target's window at its agent
  std::uint8_t kind = 0;
  std::uint8_t flags = 0;
  std::uint8_t op = 0;      // accumulates: the predefined op's index
  std::int8_t basic = -1;   // accumulates: the predefined type's index (-1: none)
  std::uint32_t reply = 0;  // tag of the answer (0: none wanted)
  std::uint32_t count = 0;  // target elements
  std::uint32_t nblocks = 0;
  std::uint32_t reserved = 0;
  std::int64_t extent = 0;     // of a target element
  std::int64_t offset = 0;     // bytes from the window's base (dynamic: an address)
  std::uint64_t data_len = 0;  // the origin bytes, inline or separate
};
static_assert(sizeof(Header) == 48, "the header's size is part of the protocol");

struct WireBlock {
  std::int64_t disp;
  std::uint64_t len;
};

// Upper bounds a request must respect before anything is allocated for it.
inline constexpr std::uint32_t kMaxBlocks = 1u << 20;
inline constexpr std::uint64_t kMaxData = std::uint64_t(1) << 40;

// A request as the agent reads it.
struct Request {
  Header h;
  std::vector<Block> blocks;  // what layout.blocks views
  Layout layout;
  const char *data = nullptr;  // inline data (nullptr if separate or none)
};

// The request's bytes: header, blocks, inline data (or none).
std::vector<char> encode(const Header &h, const Layout &l, const char *data,
                         std::size_t inline_len);
// Checks a received request's bytes: false with *why saying what is wrong
// (a sentence naming the field), true with *out filled. It needs nothing
// but the bytes (fuzzed alone: tests/fuzz/rma_wire_fuzz.cpp).
bool decode(const char *p, std::size_t n, Request *out, std::string *why);
// The bytes a request's data must have (0 for those that carry none).
std::uint64_t expected_data(const Header &h, const Layout &l);

}  // namespace rmpi::wire
