// tcp_hello.cpp - the TCP handshake's messages, made and checked (see
// tcp_hello.hpp).
#include "transport/tcp/tcp_hello.hpp"

#include <cstdio>
#include <cstring>

#include "transport/tcp/tcp_socket.hpp"

namespace rocl::impl::tcp::detail {

Hello make_hello(std::uint64_t instance, std::string_view own_address) {
  Hello hello{tcp::kHelloMagic, tcp::kHandshakeVersion, instance, {}};
  own_address.substr(0, sizeof hello.address - 1).copy(hello.address, sizeof hello.address - 1);
  return hello;
}

bool hello_magic_ok(std::span<const std::byte> first) {
  std::uint32_t magic = 0;
  if (first.size() < sizeof magic) return false;
  std::memcpy(&magic, first.data(), sizeof magic);
  return magic == tcp::kHelloMagic;
}

std::string check_hello(std::span<const std::byte> bytes, std::string *address) {
  Hello hello;
  if (bytes.size() >= sizeof hello.magic && !hello_magic_ok(bytes)) {
    std::memcpy(&hello.magic, bytes.data(), sizeof hello.magic);
    char m[64];
    std::snprintf(m, sizeof m, "hello magic 0x%08x is not 0x%08x", hello.magic, tcp::kHelloMagic);
    return m;
  }
  if (bytes.size() < sizeof hello) {
    return "hello of " + std::to_string(bytes.size()) + " bytes is short of " +
           std::to_string(sizeof hello);
  }
  std::memcpy(&hello, bytes.data(), sizeof hello);
  if (hello.version != tcp::kHandshakeVersion) {
    return "hello version " + std::to_string(hello.version) + " is not supported";
  }
  const std::size_t alen = ::strnlen(hello.address, sizeof hello.address);
  sockaddr_in ignored{};
  if (alen == sizeof hello.address ||
      (alen != 0 && !parse_address(std::string_view(hello.address, alen), &ignored))) {
    return "hello address is not tcp:<ipv4>:<port>";
  }
  for (std::size_t i = alen; i < sizeof hello.address; ++i) {
    if (hello.address[i] != '\0') return "hello address is not NUL-padded";
  }
  address->assign(hello.address, alen);
  return "";
}

std::array<std::uint8_t, kAnswerBytes> make_answer(const JobSecret &secret,
                                                   const JobSecret::Challenge &theirs,
                                                   const JobSecret::Challenge &mine) {
  std::array<std::uint8_t, kAnswerBytes> answer{};
  const auto proof = secret.prove(tcp::kConnectLabel, theirs);
  std::memcpy(answer.data(), proof.data(), proof.size());
  std::memcpy(answer.data() + proof.size(), mine.data(), mine.size());
  return answer;
}

bool check_answer(const JobSecret &secret, const JobSecret::Challenge &challenge,
                  std::span<const std::byte> answer, JobSecret::Challenge *theirs) {
  JobSecret::Digest proof;
  if (answer.size() < proof.size() + theirs->size()) return false;
  std::memcpy(proof.data(), answer.data(), proof.size());
  if (!secret.verify(tcp::kConnectLabel, challenge, proof)) return false;
  std::memcpy(theirs->data(), answer.data() + proof.size(), theirs->size());
  return true;
}

}  // namespace rocl::impl::tcp::detail
