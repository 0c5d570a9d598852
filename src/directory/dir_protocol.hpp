// dir_protocol.hpp - the wire protocol between a process and its node's
// directory server (directory_server.hpp, remote_directory.hpp) over a Unix
// stream socket.
//
// ---- Messages (all integers little-endian) -------------------------------------
//
//   header, 32 bytes:
//     u32 magic     kMagic = bytes "RDIR"
//     u16 version   kVersion (2; both sides must speak the same one)
//     u16 op        Op below
//     u32 body_len  bytes of the body that follows, <= kMaxBody (1 MiB)
//     i32 status    replies: ROCL_OK or a negative ROCL_E* code; requests: 0
//     u64 gid       the gid argument / answer
//     u64 aux       the cursor id of QUERY_NEXT / QUERY_STOP / QUERY_START's reply
//   then body_len bytes: an encoded AttrList (attr_list.hpp), a challenge or
//   proof, or (a reply with status < 0) the server's error sentence.
//
// ---- Conversation ----------------------------------------------------------------
//
//   server -> HELLO   body: the server's 32-byte challenge
//   client -> PROVE   body: JobSecret::prove(kProveLabel, server challenge) (32)
//                           + the client's own 32-byte challenge
//   server -> REPLY   OK, body: prove(kServerProveLabel, client challenge),
//                     aux: flags, kEpochPageAttached when the server passes
//                     its removal epoch page (below) with this reply; or
//                     ROCL_EPEER "directory refused: job secret proof did not
//                     verify" and the server closes the connection.
//   then any number of request -> REPLY round trips:
//     REGISTER       gid = context, body = attrs   -> gid = new gid
//     REMOVE         gid                           -> status
//     QUERY          gid, body = attrs             -> gid, body = filled attrs
//     QUERY_START    body = pattern                -> aux = cursor id
//     QUERY_NEXT     aux = cursor, body = attrs    -> gid, body = filled attrs
//     QUERY_STOP     aux = cursor                  -> status
//     REMOVE_CONTEXT gid                           -> gid = how many removed
//   A failed request's REPLY has status < 0 and the sentence as body.
//
// Everything received is checked (parse_message, check_body) before use; a
// peer that breaks the protocol is disconnected.
//
// ---- The removal epoch page (version 2) -------------------------------------------
//
// The server counts removals: every REMOVE that removed a resource, every
// REMOVE_CONTEXT that removed any, and every closed connection whose
// contexts still had resources add 1 (a release store), after the
// directory changed and BEFORE the reply is queued. The counter lives in a
// sealed memfd of kEpochPageBytes the server creates at start
// (removal_epoch.hpp); the reply to PROVE carries that file descriptor as
// SCM_RIGHTS ancillary data on its first byte and sets kEpochPageAttached
// in aux. The client maps it read-only: with one load it can tell whether
// anything left the directory since it cached a route (RoCL section 4.1).
// Layout, in the host's byte order (the page never leaves the node):
//     offset 0   u64 kEpochPageMagic
//     offset 64  u64 the removal counter (a lock-free std::atomic), alone
//                on its cache line; the rest of the page is zero
// The seals forbid shrinking and growing (no SIGBUS for a mapping) and,
// where the kernel has F_SEAL_FUTURE_WRITE, any writable mapping but the
// server's. A client that gets no page (aux without the flag, or the
// descriptor lost or unusable) works without the epoch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "directory/attr_list.hpp"

namespace rocl::impl::dirproto {

inline constexpr std::uint32_t kMagic = 0x52494452;  // bytes "RDIR"
inline constexpr std::uint16_t kVersion = 2;
inline constexpr std::size_t kHeaderBytes = 32;
inline constexpr std::size_t kMaxBody = std::size_t{1} << 20;
inline constexpr std::size_t kChallengeBytes = 32;
inline constexpr std::size_t kProofBytes = 32;
// Longest error sentence a reply may carry.
inline constexpr std::size_t kMaxSentence = 4096;
inline constexpr std::string_view kProveLabel = "rocl-dir";
inline constexpr std::string_view kServerProveLabel = "rocl-dir-server";
// aux flag of the REPLY to PROVE: the removal epoch page's fd is attached.
inline constexpr std::uint64_t kEpochPageAttached = 1;
inline constexpr std::size_t kEpochPageBytes = 4096;
inline constexpr std::uint64_t kEpochPageMagic = 0x48435045'52494452;  // bytes "RDIREPCH"
inline constexpr std::size_t kEpochCounterOffset = 64;
inline constexpr const char *kRefusedSentence =
    "directory refused: job secret proof did not verify";

enum class Op : std::uint16_t {
  kHello = 1,
  kProve = 2,
  kReply = 3,
  kRegister = 4,
  kRemove = 5,
  kQuery = 6,
  kQueryStart = 7,
  kQueryNext = 8,
  kQueryStop = 9,
  kRemoveContext = 10,
};
inline constexpr std::uint16_t kMaxOp = 10;

// Name of an op ("HELLO", ...; "op <n>" style is up to the caller for unknown).
const char *op_name(std::uint16_t op) noexcept;

struct Header {
  std::uint32_t magic = kMagic;
  std::uint16_t version = kVersion;
  std::uint16_t op = 0;
  std::uint32_t body_len = 0;
  std::int32_t status = 0;
  std::uint64_t gid = 0;
  std::uint64_t aux = 0;
};

void encode_header(const Header &h, std::byte out[kHeaderBytes]);
// Reads the 32 bytes (never more) and checks magic, version, op (1..kMaxOp)
// and body_len <= kMaxBody. ROCL_OK, or ROCL_EINVAL with what the peer sent
// wrong in *what ("a bad magic 0x...", "protocol version 1, but this side
// speaks version 2 ...", ...); *out is only set on success.
int decode_header(std::span<const std::byte> bytes, Header *out, std::string *what);

// A whole message: header (body_len set from body) + body.
std::vector<std::byte> encode_message(Op op, std::int32_t status, std::uint64_t gid,
                                      std::uint64_t aux, std::span<const std::byte> body);
// A failed reply: status < 0, the sentence (cut to kMaxSentence) as body.
std::vector<std::byte> encode_error(std::int32_t status, std::string_view sentence);

// One message found in a receive buffer; body points into that buffer.
struct Message {
  Header header;
  std::span<const std::byte> body;
};

// Looks for one message at the start of buf: 1 and *out, *consumed set when a
// whole message is there; 0 when more bytes are needed (buf holds at most a
// header and part of a body); ROCL_EINVAL with *what when the header is bad
// (decided as soon as the 32 header bytes are there, before any body).
int parse_message(std::span<const std::byte> buf, Message *out, std::size_t *consumed,
                  std::string *what);

// Checks a request body for its op (requests: PROVE and REGISTER..
// REMOVE_CONTEXT; HELLO and REPLY are server ops): PROVE 64 bytes; REGISTER,
// QUERY, QUERY_START, QUERY_NEXT a valid AttrList (decoded into *attrs);
// REMOVE, QUERY_STOP, REMOVE_CONTEXT empty. ROCL_OK or ROCL_EINVAL + *what.
int check_request(const Message &m, AttrList *attrs, std::string *what);

// Checks a reply to a request of op `request`: op REPLY; status <= 0 (a
// status < 0 carries a sentence of at most kMaxSentence bytes, returned in
// *sentence); on success the body the request expects: PROVE a 32-byte proof
// (and aux no flag but kEpochPageAttached), QUERY and QUERY_NEXT a valid
// AttrList (into *attrs), others empty.
// ROCL_OK or ROCL_EINVAL + *what.
int check_reply(Op request, const Message &m, AttrList *attrs, std::string *sentence,
                std::string *what);

}  // namespace rocl::impl::dirproto
