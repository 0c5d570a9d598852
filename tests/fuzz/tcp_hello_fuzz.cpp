// tcp_hello_fuzz.cpp - libFuzzer target for the tcp transport's handshake
// (src/transport/tcp/tcp_hello.hpp): the bytes a connecting stranger sends
// before anything else, which the acceptor checks (hello_magic_ok on the
// first 4, check_hello on the Hello, check_answer on the answer to its
// challenge). Built and run by scripts/fuzz.sh (clang++-14,
// -fsanitize=fuzzer,address,undefined), not by the CMake project.
//
// The secret (all zero bytes) and the acceptor's challenge are fixed, so
// that a seed can hold a valid answer. The first input byte picks the mode:
//   even: the rest is what the connector sends: a Hello (56 bytes), then
//         its answer (64). The first 4 bytes: hello_magic_ok refuses them
//         exactly when check_hello refuses the magic. check_hello accepted:
//         the address is "" or a tcp address, and make_hello with its
//         instance and address makes the same bytes; refused: a sentence,
//         the address untouched. check_answer accepted: the proof is the
//         secret's on the challenge, make_answer makes the same bytes, and
//         the acceptor's proof on the connector's challenge verifies for
//         the connector; refused: the connector's challenge untouched.
//   odd:  u64 instance | an address (the rest): make_hello and check_hello.
//         Accepted exactly when the address (cut to the field) is "" or a
//         tcp address up to a NUL followed by NULs only; then the address
//         read is the one written up to its first NUL.
// Any broken invariant aborts.
//
// With ROCL_FUZZ_WRITE_SEEDS=<dir> in the environment the binary writes
// seed inputs (valid handshakes, a stranger's bytes, built Hellos) to <dir>
// and exits.
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "status/status.hpp"
#include "transport/tcp/tcp_hello.hpp"
#include "transport/tcp/tcp_socket.hpp"

#include "fuzz_util.hpp"

using namespace rocl::impl;
using namespace rocl::impl::tcp;
using namespace rocl::impl::tcp::detail;

namespace {

constexpr rocl::fuzz::Target kTarget{.name = "tcp_hello_fuzz",
                                     .last_error = rocl::impl::last_error};

using rocl::fuzz::Bytes;
using rocl::fuzz::View;
using rocl::fuzz::write_file;

const JobSecret kSecret{};  // all zero: fixed, so that the seeds stay valid

// The acceptor's challenge: fixed too (random in the transport).
JobSecret::Challenge challenge() {
  JobSecret::Challenge c;
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<std::uint8_t>(0xc0 + i);
  return c;
}

bool same(View a, View b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

bool is_address(std::string_view a) {
  sockaddr_in ignored{};
  return a.empty() || parse_address(a, &ignored);
}

// check_hello and its invariants; true and *address if accepted.
bool check(View hello, std::string *address) {
  std::string got = "untouched";
  const std::string why = check_hello(hello, &got);
  if (hello.size() >= 4 && !hello_magic_ok(hello.first(4))) {
    CHECK(why.find("magic") != std::string::npos, "a wrong magic not refused: '%s'", why.c_str());
  }
  if (!why.empty()) {
    CHECK(got == "untouched", "a refusal set the address");
    CHECK(hello.size() < 4 || !hello_magic_ok(hello.first(4)) ||
              why.find("magic") == std::string::npos,
          "a good magic refused: '%s'", why.c_str());
    return false;
  }
  CHECK(hello.size() >= sizeof(Hello) && hello_magic_ok(hello), "accepted %zu bytes", hello.size());
  CHECK(got.size() < kHelloAddressBytes && got.find('\0') == std::string::npos && is_address(got),
        "accepted address '%s'", got.c_str());
  Hello h;
  std::memcpy(&h, hello.data(), sizeof h);
  CHECK(h.version == tcp::kHandshakeVersion, "version %u", h.version);
  const Hello again = make_hello(h.instance, got);
  CHECK(same(std::as_bytes(std::span(&again, 1)), hello.first(sizeof h)),
        "a Hello makes other bytes again");
  *address = got;
  return true;
}

void check_answer_of(View answer) {
  JobSecret::Challenge theirs;
  theirs.fill(0x5e);
  const JobSecret::Challenge untouched = theirs;
  const auto expected = kSecret.prove(tcp::kConnectLabel, challenge());
  const bool proved =
      answer.size() >= kAnswerBytes && std::memcmp(answer.data(), expected.data(), 32) == 0;
  const bool ok = check_answer(kSecret, challenge(), answer, &theirs);
  CHECK(ok == proved, "check_answer %d for a proof that is %s", int(ok),
        proved ? "right" : "wrong");
  if (!ok) {
    CHECK(theirs == untouched, "a refused answer set the challenge");
    return;
  }
  CHECK(std::memcmp(theirs.data(), answer.data() + 32, 32) == 0, "the connector's challenge");
  const auto again = make_answer(kSecret, challenge(), theirs);
  CHECK(same(std::as_bytes(std::span(again)), answer.first(kAnswerBytes)),
        "an answer makes other bytes again");
  const auto mine = kSecret.prove(tcp::kAcceptLabel, theirs);
  CHECK(kSecret.verify(tcp::kAcceptLabel, theirs, mine), "the acceptor's proof");
}

void raw_mode(View in) {
  std::string address;
  if (!check(in.first(in.size() < sizeof(Hello) ? in.size() : sizeof(Hello)), &address)) return;
  check_answer_of(in.subspan(sizeof(Hello)));
}

void build_mode(View in) {
  rocl::fuzz::Reader r(in);
  const std::uint64_t instance = r.u64();
  in = r.rest();
  const std::string_view written(reinterpret_cast<const char *>(in.data()), in.size());
  const Hello h = make_hello(instance, written);
  CHECK(h.instance == instance && h.address[kHelloAddressBytes - 1] == '\0', "make_hello");
  const std::string_view cut = written.substr(0, kHelloAddressBytes - 1);
  const std::string_view upto = cut.substr(0, cut.find('\0'));
  const bool padded = cut.find_first_not_of('\0', upto.size()) == std::string_view::npos;
  std::string address;
  const bool ok = check(std::as_bytes(std::span(&h, 1)), &address);
  CHECK(ok == (padded && is_address(upto)), "check_hello %d for '%.*s'", int(ok),
        static_cast<int>(upto.size()), upto.data());
  if (ok) CHECK(address == upto, "read '%s'", address.c_str());
}

// ---- seed generator ---------------------------------------------------------

void append(Bytes &out, View more) {
  out.insert(out.end(), more.begin(), more.end());
}

Bytes handshake(std::string_view address) {
  Bytes in = {std::byte{0}};
  const Hello h = make_hello(0x1122334455667788ull, address);
  append(in, std::as_bytes(std::span(&h, 1)));
  JobSecret::Challenge mine;
  mine.fill(0x33);
  const auto answer = make_answer(kSecret, challenge(), mine);
  append(in, std::as_bytes(std::span(answer)));
  return in;
}

void write_seeds(const char *dir) {
  const std::string d = std::string(dir) + "/seed-";
  write_file(d + "handshake", handshake("tcp:127.0.0.1:7001"));
  write_file(d + "handshake-host", handshake("tcp:10.1.2.3:65535@host-7"));
  write_file(d + "handshake-no-address", handshake(""));
  Bytes wrong = handshake("tcp:127.0.0.1:7001");
  wrong[1 + sizeof(Hello) + 5] ^= std::byte{1};  // the proof
  write_file(d + "wrong-proof", wrong);
  const std::string_view http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  Bytes stranger = {std::byte{0}};
  append(stranger, std::as_bytes(std::span(http)));
  write_file(d + "stranger", stranger);
  const std::string_view built[] = {"tcp:192.168.0.1:80", std::string_view("tcp:1.2.3.4:5\0xx", 16),
                                    "tcp:::1:80"};
  int i = 0;
  for (const std::string_view address : built) {
    Bytes b = {std::byte{1}, std::byte{7}};
    b.resize(9);  // instance 7
    append(b, std::as_bytes(std::span(address)));
    write_file(d + "build-" + std::to_string(i++), b);
  }
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
