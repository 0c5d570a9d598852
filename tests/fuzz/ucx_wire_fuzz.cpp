// ucx_wire_fuzz.cpp - libFuzzer target for the header of the ucx
// transport's active messages (src/transport/ucx/ucx_wire.hpp):
// check_header() is what every active message from another process passes
// before anything else reads it, and a hello's proof is checked against
// the job secret. Built and run by scripts/fuzz.sh (clang++-14,
// -fsanitize=fuzzer,address,undefined), not by the CMake project.
//
// The input is a payload length (2 bytes) and the header's bytes, then a
// hello's payload if the rest is long enough. Accepted: a 32-byte header
// with the magic and a known kind, a hello only with a Hello's payload
// size. A hello's proof made by the fuzzer never verifies. Any broken
// invariant aborts.
//
// With ROCL_FUZZ_WRITE_SEEDS=<dir> in the environment the binary writes
// seed inputs (a message header, a hello) to <dir> and exits.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "transport/ucx/ucx_wire.hpp"

#include "fuzz_util.hpp"

using namespace rocl::impl;
using namespace rocl::impl::ucx;

namespace {

constexpr rocl::fuzz::Target kTarget{.name = "ucx_wire_fuzz"};

const JobSecret &secret() {
  static const JobSecret s = JobSecret::generate();
  return s;
}

std::vector<std::uint8_t> seed(AmKind kind, std::uint16_t payload) {
  std::vector<std::uint8_t> b(2 + sizeof(AmHeader));
  std::memcpy(b.data(), &payload, 2);
  const AmHeader h{kAmMagic, kind, 21, CoreHeader{11, 3, 7}};
  std::memcpy(b.data() + 2, &h, sizeof h);
  b.resize(b.size() + payload);
  return b;
}

void write_seeds(const char *dir) {
  const std::string d = std::string(dir) + "/";
  rocl::fuzz::write_file(d + "message", seed(AmKind::kMessage, 8));
  rocl::fuzz::write_file(d + "hello", seed(AmKind::kHello, sizeof(Hello)));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  rocl::fuzz::seeds_then_exit(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size < 2) return 0;
  std::uint16_t payload;
  std::memcpy(&payload, data, 2);
  data += 2, size -= 2;
  const std::size_t header_length = size < sizeof(AmHeader) ? size : sizeof(AmHeader) + (size % 3);
  if (header_length > size) return 0;
  AmHeader h{};
  const char *bad = check_header(data, header_length, payload, &h);
  if (bad != nullptr) {
    CHECK(*bad != '\0');
    return 0;
  }
  CHECK(header_length == sizeof(AmHeader));
  CHECK(h.magic == kAmMagic);
  CHECK(h.kind == AmKind::kMessage || h.kind == AmKind::kHello);
  if (h.kind == AmKind::kHello) {
    CHECK(payload == sizeof(Hello));
    const std::size_t rest = size - header_length;
    if (rest >= sizeof(Hello)) {
      Hello hello;
      std::memcpy(&hello, data + header_length, sizeof hello);
      CHECK(!secret().verify("rocl-ucx", hello_challenge("ucx:00", hello.nonce), hello.proof));
    }
  }
  return 0;
}
