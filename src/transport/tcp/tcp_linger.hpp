// tcp_linger.hpp - the TCP transport's shutdown over its connections (see
// "Shutdown" in tcp_transport.hpp): whether accepted messages are still
// here, the sentence for those dropped, and the graceful close. Called with
// no driver left but the transport's thread (holds_accepted) or none.
#pragma once

#include "transport/tcp/tcp_conn.hpp"

namespace rocl::impl::tcp::detail {

class ConnTable;
struct Shared;

// Whether a live connection still holds something send() accepted: bytes
// queued (a message's, or a rendezvous request's or reply's, which a peer
// waits for) or, with `parked_too`, a parked rendezvous message.
bool holds_accepted(ConnTable &table, bool parked_too);

// No driver left: one sentence per peer whose messages are still here
// (queued, or parked until their receiver takes them); they are dropped
// with the connection.
void report_dropped(ConnTable &table, const Shared &shared);

// No driver left: shuts down the sending side of every live connection
// (the peer reads all we wrote, then EOF), then reads and discards until
// each peer closes too, or until deadline: closing with unread input would
// send a RST, and a RST may destroy bytes the peer has not read yet.
void close_gracefully(ConnTable &table, Clock::time_point deadline);

}  // namespace rocl::impl::tcp::detail
