// tcp_handshake.cpp - the job-secret handshake of the TCP transport
// (tcp_handshake.hpp; the messages: "Handshake" in tcp_transport.hpp).
#include "transport/tcp/tcp_handshake.hpp"

#include <cstring>

#include "transport/tcp/tcp_conn_table.hpp"
#include "transport/tcp/tcp_hello.hpp"
#include "transport/tcp/tcp_internal.hpp"
#include "transport/tcp/tcp_socket.hpp"

namespace rocl::impl::tcp::detail {
// What the connector logs of a refusal, and what its send() then says.
struct Refusal {
  const char *logged;
  const char *said;
};

namespace {
// How long the acceptor's answers may take to write (the driver waits).
constexpr auto kAnswerTimeout = std::chrono::milliseconds(100);

constexpr Refusal kClosed{"closed the connection during the handshake",
                          "refused the connection during the handshake"};
constexpr Refusal kBadProof{"job secret proof did not verify",
                            "refused: job secret proof did not verify"};
}  // namespace

Handshake::Handshake(Shared &shared, ConnTable &table) : shared_(shared), table_(table) {
  if (shared_.env.secret == nullptr) {
    own_secret_ = JobSecret::generate();
    secret_ = &*own_secret_;
  } else {
    secret_ = shared_.env.secret;
  }
}

// Counts and logs a refusal the connector saw; returns what connect() says.
std::string Handshake::refused(const std::string &who, const Refusal &why) {
  shared_.counters.refused.fetch_add(1);
  shared_.log("tcp: peer " + who + " refused: " + why.logged);
  return why.said;
}

std::string Handshake::connect(int fd, const std::string &who, const std::string &own_address,
                               Clock::time_point deadline) {
  tcp::Hello hello = make_hello(shared_.env.instance, own_address);
  JobSecret::Challenge theirs{};
  if (!io_full(fd, &hello, sizeof hello, true, deadline) ||
      !io_full(fd, theirs.data(), theirs.size(), false, deadline)) {
    return refused(who, kClosed);
  }
  const auto mine = JobSecret::random_challenge();
  auto answer = make_answer(*secret_, theirs, mine);
  std::array<std::uint8_t, 33> verdict{};
  if (!io_full(fd, answer.data(), answer.size(), true, deadline) ||
      !io_full(fd, verdict.data(), 1, false, deadline)) {
    return refused(who, kClosed);
  }
  if (verdict[0] != 0) return refused(who, kBadProof);
  JobSecret::Digest their_proof{};
  if (!io_full(fd, their_proof.data(), their_proof.size(), false, deadline)) {
    return refused(who, kClosed);
  }
  if (!secret_->verify(tcp::kAcceptLabel, mine, their_proof)) return refused(who, kBadProof);
  return "";
}

Step Handshake::accept_step(Conn &c) {
  const std::size_t want = c.rx == Rx::kHello ? sizeof(tcp::Hello) : kAnswerBytes;
  const ssize_t n = read_some(c.fd, c.buf.data() + c.got, want - c.got);
  if (n == 0) return Step::kIdle;
  if (n < 0) return to_step(refuse(c, "closed the connection during the handshake"));
  c.got += static_cast<std::size_t>(n);
  // A stranger's bytes are refused on its first 4, not after 56.
  if (c.rx == Rx::kHello && c.got >= 4 && c.got < want &&
      !hello_magic_ok(std::span<const std::byte>(c.buf.data(), c.got))) {
    return to_step(on_hello(c));
  }
  if (c.got < want) return Step::kMore;
  c.got = 0;
  return to_step(c.rx == Rx::kHello ? on_hello(c) : on_proof(c));
}

// A Hello is in c.buf (or its first bytes, whose magic is wrong): check
// it, send our challenge.
bool Handshake::on_hello(Conn &c) {
  const std::string why =
      check_hello(std::span<const std::byte>(c.buf.data(), sizeof(tcp::Hello)), &c.hello_address);
  if (!why.empty()) return refuse(c, why);
  c.challenge = JobSecret::random_challenge();
  if (!io_full(c.fd, c.challenge.data(), c.challenge.size(), true, Clock::now() + kAnswerTimeout)) {
    return refuse(c, "could not send the challenge");
  }
  c.rx = Rx::kProof;
  return true;
}

// The connector's proof and challenge are in c.buf: verify, answer.
bool Handshake::on_proof(Conn &c) {
  JobSecret::Challenge theirs;
  std::array<std::uint8_t, 33> verdict{};
  if (!check_answer(*secret_, c.challenge, std::span<const std::byte>(c.buf.data(), kAnswerBytes),
                    &theirs)) {
    verdict[0] = 1;
    io_full(c.fd, verdict.data(), 1, true, Clock::now() + kAnswerTimeout);
    return refuse(c, "job secret proof did not verify");
  }
  const auto mine = secret_->prove(tcp::kAcceptLabel, theirs);
  std::memcpy(verdict.data() + 1, mine.data(), 32);
  if (!io_full(c.fd, verdict.data(), verdict.size(), true, Clock::now() + kAnswerTimeout)) {
    return refuse(c, "could not send the handshake answer");
  }
  c.rx = Rx::kHeader;
  if (!c.hello_address.empty()) table_.adopt(c, c.hello_address);
  return true;
}

bool Handshake::refuse(Conn &c, const std::string &why) {
  shared_.counters.refused.fetch_add(1);
  shared_.log("tcp: peer " + c.peer_name + " refused: " + why);
  return false;
}

}  // namespace rocl::impl::tcp::detail
