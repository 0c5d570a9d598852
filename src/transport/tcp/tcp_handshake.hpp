// tcp_handshake.hpp - both sides of the TCP transport's job-secret
// handshake (see "Handshake" in tcp_transport.hpp): the connector's, run
// to its end in the sending thread, and the acceptor's, a step of the
// receive state machine (Rx::kHello, Rx::kProof) on the driver. A side
// whose check fails counts the refusal and logs "tcp: peer <ip:port>
// refused: ...".
#pragma once

#include <optional>
#include <string>

#include "transport/tcp/tcp_conn.hpp"
#include "transport/tcp/tcp_shared.hpp"

namespace rocl::impl::tcp::detail {

class ConnTable;
struct Refusal;

class Handshake {
 public:
  // Without a job secret in the environment, a random one: only this
  // transport's own connections then succeed.
  Handshake(Shared &shared, ConnTable &table);

  // Connector: says our Hello (with our listening address `own_address`)
  // on the connected socket fd and proves the secret to the peer `who`,
  // blocking until deadline at most. "" on success; otherwise what to say
  // of the peer ("refused ..."), the refusal counted and logged.
  std::string connect(int fd, const std::string &who, const std::string &own_address,
                      Clock::time_point deadline);

  // Acceptor, on the driver: reads what c's handshake needs next and
  // answers it. Once proved, c is in Rx::kHeader and, if the connector
  // takes messages back, the connection we send on to it (ConnTable::adopt).
  Step accept_step(Conn &c);

 private:
  bool on_hello(Conn &c);
  bool on_proof(Conn &c);
  bool refuse(Conn &c, const std::string &why);
  std::string refused(const std::string &who, const Refusal &why);

  Shared &shared_;
  ConnTable &table_;
  std::optional<JobSecret> own_secret_;
  const JobSecret *secret_ = nullptr;
};

}  // namespace rocl::impl::tcp::detail
