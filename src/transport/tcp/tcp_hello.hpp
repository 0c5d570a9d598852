// tcp_hello.hpp - the bytes of the TCP transport's handshake ("Handshake" in
// tcp_transport.hpp) made and checked apart from any socket: the connector's
// Hello and its answer to the acceptor's challenge, which the acceptor reads
// from a stranger before anything else (tcp_handshake.cpp does the I/O).
// Free functions: no state, no system call.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "security/job_secret.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace rocl::impl::tcp::detail {

inline constexpr std::size_t kAnswerBytes = 64;  // the connector's proof + its challenge

// The connector's Hello: own_address (its listening address,
// "tcp:<ipv4>:<port>"; "" for a connector that takes no messages back) is
// cut to kHelloAddressBytes - 1 bytes, the rest of the field NUL.
Hello make_hello(std::uint64_t instance, std::string_view own_address);

// Whether the first bytes of what a peer sent (4 or more) can start a
// Hello: its magic. The acceptor refuses a stranger on them.
bool hello_magic_ok(std::span<const std::byte> first);

// Checks a received Hello (sizeof(Hello) bytes; fewer: refused, on the
// magic if there are 4): the magic, the version, and the address field
// NUL-padded holding "" or a tcp address. "" and *address set to the address on success; otherwise
// what to log of the peer ("hello magic 0x... is not ..."), *address
// untouched.
std::string check_hello(std::span<const std::byte> bytes, std::string *address);

// The connector's answer to the acceptor's challenge `theirs`: the proof
// of the secret, then the connector's own challenge `mine`.
std::array<std::uint8_t, kAnswerBytes> make_answer(const JobSecret &secret,
                                                   const JobSecret::Challenge &theirs,
                                                   const JobSecret::Challenge &mine);

// Checks the connector's answer (kAnswerBytes; fewer: refused) to our
// `challenge`: true and *theirs set to the connector's challenge if the
// proof verifies; false, *theirs untouched, if not.
bool check_answer(const JobSecret &secret, const JobSecret::Challenge &challenge,
                  std::span<const std::byte> answer, JobSecret::Challenge *theirs);

}  // namespace rocl::impl::tcp::detail
