// rma_wire_fuzz.cpp - libFuzzer target for the requests of rocl's MPI
// one-sided operations (layers/mpi/src/rma_wire.hpp): decode() is the gate
// every request from another process passes before the RMA agent applies
// it to window memory. Built and run by scripts/fuzz.sh (clang++-14,
// -fsanitize=fuzzer,address,undefined), not by the CMake project.
//
// The input is a request's bytes. Accepted: its sizes agree (header,
// blocks, data as declared; the data as long as the elements need), every
// block lies within the limits, and encoding the decoded request gives
// the same bytes back. Refused: a non-empty sentence. Any broken
// invariant aborts.
//
// With ROCL_FUZZ_WRITE_SEEDS=<dir> in the environment the binary writes
// seed inputs (a valid request of each kind) to <dir> and exits.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "reductions.hpp"
#include "rma_wire.hpp"

#include "fuzz_util.hpp"

using namespace rmpi;
using namespace rmpi::wire;

namespace {

constexpr rocl::fuzz::Target kTarget{.name = "rma_wire_fuzz"};

void check_one(const char *p, std::size_t n) {
  Request r;
  std::string why;
  if (!decode(p, n, &r, &why)) {
    CHECK(!why.empty(), "a refusal without a sentence");
    return;
  }
  const Header &h = r.h;
  CHECK(r.layout.blocks.size() == h.nblocks, "%zu blocks for %u", r.layout.blocks.size(),
        h.nblocks);
  CHECK(h.nblocks <= kMaxBlocks && h.data_len <= kMaxData, "limits");
  std::uint64_t packed = 0;
  for (const Block &b : r.layout.blocks) packed += b.len;
  CHECK(packed == r.layout.packed, "packed %zu, blocks %llu", r.layout.packed,
        static_cast<unsigned long long>(packed));
  CHECK(h.data_len == expected_data(h, r.layout), "data %llu",
        static_cast<unsigned long long>(h.data_len));
  const bool separate = (h.flags & kSeparateData) != 0;
  CHECK((r.data != nullptr) == (!separate && h.data_len != 0), "inline data pointer");
  if (h.kind == kAccumulate || h.kind == kCompareSwap) {
    CHECK(h.op < kBuiltins && h.basic >= -1, "accumulate op %u type %d", h.op, h.basic);
  }
  // The same request, encoded again, is the same bytes.
  const std::vector<char> again =
      encode(h, r.layout, r.data, separate ? 0 : std::size_t(h.data_len));
  CHECK(again.size() == n && std::memcmp(again.data(), p, n) == 0, "re-encoding differs");
}

std::vector<std::vector<char>> seeds() {
  std::vector<std::vector<char>> out;
  static const Block kOne[] = {{0, 8}};
  static const Block kStrided[] = {{0, 4}, {16, 4}, {32, 4}};
  const Layout one{kOne, 8, 8}, strided{kStrided, 48, 12};
  const char data[64] = {1, 2, 3, 4, 5, 6, 7, 8};
  auto add = [&](std::uint8_t kind, const Layout &l, std::size_t count, std::size_t inline_len,
                 std::uint8_t flags, std::uint8_t op, std::int8_t basic) {
    Header h;
    h.key = 1;
    h.kind = kind;
    h.flags = flags;
    h.op = op;
    h.basic = basic;
    h.reply = kind == kPut ? 0 : 7;
    h.count = std::uint32_t(count);
    h.nblocks = std::uint32_t(l.blocks.size());
    h.extent = l.extent;
    h.offset = 16;
    h.data_len = expected_data(h, l);
    out.push_back(encode(h, l, data, inline_len));
  };
  add(kPut, one, 2, 16, 0, 0, -1);
  add(kPut, strided, 1, 0, kSeparateData, 0, -1);
  add(kGet, strided, 2, 0, 0, 0, -1);
  add(kAccumulate, one, 1, 8, 0, kSum, 3);
  add(kAccumulate, one, 1, 0, 0, kNoOp, -1);
  add(kCompareSwap, one, 1, 16, 0, kReplace, 3);
  add(kLock, Layout{}, 0, 0, kExclusive, 0, -1);
  add(kUnlock, Layout{}, 0, 0, 0, 0, -1);
  add(kFlush, Layout{}, 0, 0, 0, 0, -1);
  return out;
}

void write_seeds(const char *dir) {
  int i = 0;
  for (const std::vector<char> &s : seeds()) {
    check_one(s.data(), s.size());  // every seed decodes
    rocl::fuzz::write_file(std::string(dir) + "/seed-" + std::to_string(i++), s);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  rocl::fuzz::seeds_then_exit(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A copy of exactly the input's length: reads past it are caught.
  std::vector<char> bytes(data, data + size);
  check_one(bytes.data(), bytes.size());
  return 0;
}
