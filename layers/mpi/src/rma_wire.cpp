// rma_wire.cpp - encoding and checking the requests of one-sided
// operations (rma_wire.hpp). decode() reads bytes another process sent:
// it trusts nothing and allocates only after the sizes agree.
#include "rma_wire.hpp"

#include <cstring>

#include "reductions.hpp"

namespace rmpi::wire {

std::vector<char> encode(const Header &h, const Layout &l, const char *data,
                         std::size_t inline_len) {
  std::vector<char> out(sizeof(Header) + l.blocks.size() * sizeof(WireBlock) + inline_len);
  std::memcpy(out.data(), &h, sizeof h);
  char *p = out.data() + sizeof h;
  for (const Block &b : l.blocks) {
    const WireBlock w{b.disp, b.len};
    std::memcpy(p, &w, sizeof w);
    p += sizeof w;
  }
  if (inline_len != 0) std::memcpy(p, data, inline_len);
  return out;
}

std::uint64_t expected_data(const Header &h, const Layout &l) {
  const std::uint64_t bytes = std::uint64_t(h.count) * l.packed;
  switch (h.kind) {
    case kPut:
      return bytes;
    case kAccumulate:
      return h.op == kNoOp ? 0 : bytes;
    case kCompareSwap:
      return 2 * bytes;
    default:
      return 0;
  }
}

namespace {

bool no(std::string *why, const std::string &what) {
  *why = what;
  return false;
}

bool has_layout(std::uint8_t kind) {
  return kind == kPut || kind == kGet || kind == kAccumulate || kind == kCompareSwap;
}

// The op and type of an accumulate as far as the bytes tell: a predefined
// op, and a type index unless the op needs none (whether that type has
// the op is the agent's check: check_types).
bool check_accumulate(const Header &h, std::string *why) {
  if (h.op >= kBuiltins)
    return no(why, "op index " + std::to_string(h.op) + " is no predefined op");
  if (h.basic < -1) return no(why, "type index " + std::to_string(h.basic) + " is negative");
  if (h.basic < 0 && h.op != kReplace && h.op != kNoOp) {
    return no(why, "an accumulate with op index " + std::to_string(h.op) + " names no type");
  }
  if (h.kind == kCompareSwap && h.count != 1)
    return no(why, "compare-and-swap of several elements");
  return true;
}

}  // namespace

bool decode(const char *p, std::size_t n, Request *out, std::string *why) {
  if (n < sizeof(Header)) {
    return no(why, "a request of " + std::to_string(n) + " bytes is shorter than its header");
  }
  Header &h = out->h;
  std::memcpy(&h, p, sizeof h);
  if (h.kind < kPut || h.kind > kStop || h.kind == kData) {
    return no(why, "request kind " + std::to_string(h.kind) + " is unknown");
  }
  const std::size_t rest = n - sizeof h;
  if (h.nblocks > kMaxBlocks || std::size_t(h.nblocks) * sizeof(WireBlock) > rest) {
    return no(why, "the request declares " + std::to_string(h.nblocks) + " blocks in " +
                       std::to_string(rest) + " bytes");
  }
  if (h.data_len > kMaxData) {
    return no(why, "the request declares " + std::to_string(h.data_len) + " bytes of data");
  }
  const std::size_t after_blocks = rest - std::size_t(h.nblocks) * sizeof(WireBlock);
  const bool separate = (h.flags & kSeparateData) != 0;
  if (after_blocks != (separate ? 0 : h.data_len)) {
    return no(why, "the request's data is " + std::to_string(after_blocks) + " bytes, not the " +
                       std::to_string(separate ? 0 : h.data_len) + " it declares");
  }
  if (!has_layout(h.kind)) {
    if (h.nblocks != 0 || h.data_len != 0) return no(why, "a control request carries data");
    out->layout = Layout{};
    out->data = nullptr;
    return true;
  }
  if (h.count > std::uint32_t(INT32_MAX)) return no(why, "a count beyond an int's range");
  Layout &l = out->layout;
  std::vector<Block> &blocks = out->blocks;
  blocks.clear();
  blocks.reserve(h.nblocks);
  l.extent = MPI_Aint(h.extent);
  l.packed = 0;
  const char *b = p + sizeof h;
  for (std::uint32_t k = 0; k < h.nblocks; ++k, b += sizeof(WireBlock)) {
    WireBlock w{};
    std::memcpy(&w, b, sizeof w);
    if (w.len > kMaxData || l.packed + w.len > kMaxData) return no(why, "a block too long");
    if (w.disp > (std::int64_t(1) << 48) || w.disp < -(std::int64_t(1) << 48)) {
      return no(why, "a block displacement out of range");
    }
    blocks.push_back(Block{MPI_Aint(w.disp), std::size_t(w.len)});
    l.packed += w.len;
  }
  l.blocks = blocks;
  if (h.extent > (std::int64_t(1) << 48) || h.extent < -(std::int64_t(1) << 48)) {
    return no(why, "an element extent out of range");
  }
  if (std::uint64_t(h.count) * l.packed > kMaxData)
    return no(why, "the request's data is too long");
  if ((h.kind == kAccumulate || h.kind == kCompareSwap) && !check_accumulate(h, why)) {
    return false;
  }
  if (h.data_len != expected_data(h, l)) {
    return no(why, "the request carries " + std::to_string(h.data_len) + " bytes where its " +
                       std::to_string(h.count) + " elements have " +
                       std::to_string(expected_data(h, l)));
  }
  out->data = separate || h.data_len == 0 ? nullptr : b;
  return true;
}

}  // namespace rmpi::wire
