// dir_protocol.hpp - the wire protocol between a process and its node's
// directory server (directory_server.hpp, remote_directory.hpp) over a Unix
// stream socket.
//
// ---- Messages (all integers little-endian) -------------------------------------
//
//   header, 32 bytes:
//     u32 magic     kMagic = bytes "RDIR"
//     u16 version   kVersion (3; both sides must speak the same one)
//     u16 op        Op below
//     u32 body_len  bytes of the body that follows, <= kMaxBody (1 MiB;
//                   a REPLY: + kReplySlack)
//     i32 status    replies: ROCL_OK or a negative ROCL_E* code; requests: 0
//     u64 gid       the gid argument / answer
//     u64 aux       the cursor id of QUERY_NEXT / QUERY_STOP / QUERY_START's reply,
//                   QUERY_START's most answers; a failed request's REPLY:
//                   kClosing or 0
//   then body_len bytes: an encoded AttrList (attr_list.hpp), a challenge or
//   proof, a batch of answers (below), or (a reply with status < 0) the
//   server's error sentence.
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
//     QUERY_START    gid = after, aux = most,      -> aux = cursor id or 0,
//                    body = pattern                   body = a batch (below)
//     QUERY_NEXT     gid = after, aux = cursor,    -> aux = cursor, body = a batch
//                    body = u32 most
//     QUERY_STOP     aux = cursor                  -> status
//     REMOVE_CONTEXT gid                           -> gid = how many removed
//     SPAWN          gid = where (any gid: the host  -> gid = the new process's
//                    of the server that issued it;      context, once registered
//                    0: this host), aux = time limit    (spawn_table.hpp)
//                    in ms (0: none), body = the
//                    request (spawn_request.hpp)
//   A failed request's REPLY has status < 0 and the sentence as body, and
//   aux kClosing when the server closes the connection after it (a client
//   that broke the protocol, a refused proof): only then is the connection
//   lost. Other failures, ROCL_EPEER included (another server of the
//   federation did not answer), leave it as it was.
//   A REPLY's body may exceed kMaxBody by kReplySlack (a batch of one answer
//   is a whole resource: a REGISTER body plus "context", plus the framing);
//   a request's may not.
//
// ---- Batched multi-answer queries (version 3) ------------------------------------
//
// A multi-answer query answers in batches: QUERY_START and QUERY_NEXT ask
// for the resources matching the cursor's pattern whose gid is larger than
// `after` (0: from the start), at most `most` of them (1..kMaxBatchAnswers);
// the server sends them in increasing gid order, as many as fit: it stops at
// `most` answers or when one more would take the body past kBatchBytes
// (but always sends one if one matches). A batch body:
//     u32 count     answers that follow, 0..most
//     u32 flags     kBatchMore: more resources matched after the last answer
//                   (the server keeps the cursor); no other bit. count 0
//                   never has kBatchMore.
//   then count answers, each 8-aligned:
//     u64 gid       > after, > the previous answer's gid, <= INT64_MAX
//     u32 len       bytes of the list that follows, a multiple of 8
//     u32 zero
//     len bytes     the resource's whole attribute list ("context" included),
//                   AttrList encoding; the client fills answer slots from it
// and nothing after the last answer. The server keeps a cursor (the pattern)
// only while kBatchMore is set: QUERY_START's reply has aux = its id then and
// 0 otherwise; a batch without kBatchMore frees it (no QUERY_STOP needed).
// A client that must ask again after its cursor is gone (see
// remote_directory.cpp: it re-asks when the removal epoch moved) sends
// QUERY_START with the pattern and `after` again.
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
inline constexpr std::uint16_t kVersion = 3;
inline constexpr std::size_t kHeaderBytes = 32;
inline constexpr std::size_t kMaxBody = std::size_t{1} << 20;
inline constexpr std::size_t kReplySlack = 4096;
inline constexpr std::size_t kMaxReplyBody = kMaxBody + kReplySlack;
// Batches of answers (version 3, above).
inline constexpr std::uint32_t kMaxBatchAnswers = 64;
inline constexpr std::size_t kBatchBytes = 64 * 1024;
inline constexpr std::size_t kBatchHeaderBytes = 8;
inline constexpr std::size_t kBatchEntryBytes = 16;  // before the list
inline constexpr std::uint32_t kBatchMore = 1;
inline constexpr std::size_t kChallengeBytes = 32;
inline constexpr std::size_t kProofBytes = 32;
// Longest error sentence a reply may carry.
inline constexpr std::size_t kMaxSentence = 4096;
inline constexpr std::string_view kProveLabel = "rocl-dir";
inline constexpr std::string_view kServerProveLabel = "rocl-dir-server";
// aux flag of the REPLY to PROVE: the removal epoch page's fd is attached.
inline constexpr std::uint64_t kEpochPageAttached = 1;
// aux flag of a failed request's REPLY: the server closes the connection.
inline constexpr std::uint64_t kClosing = 1;
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
  kSpawn = 11,
};
inline constexpr std::uint16_t kMaxOp = 11;
// SPAWN's aux: its time limit in ms, at most this (0: none).
inline constexpr std::uint64_t kMaxSpawnLimitMs = 0x7fffffff;

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
// and body_len <= kMaxBody (kMaxReplyBody for a REPLY). ROCL_OK, or ROCL_EINVAL with what the peer
// sent wrong in *what ("a bad magic 0x...", "protocol version 1, but this side speaks version 2
// ...", ...); *out is only set on success.
int decode_header(std::span<const std::byte> bytes, Header *out, std::string *what);

// A whole message: header (body_len set from body) + body.
std::vector<std::byte> encode_message(Op op, std::int32_t status, std::uint64_t gid,
                                      std::uint64_t aux, std::span<const std::byte> body);
// A failed reply: status < 0, the sentence (cut to kMaxSentence) as body.
std::vector<std::byte> encode_error(std::int32_t status, std::string_view sentence,
                                    bool closing = false);

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

// Checks a request for its op (requests: PROVE and REGISTER..
// SPAWN; HELLO and REPLY are server ops): PROVE 64 bytes; REGISTER,
// QUERY, QUERY_START, SPAWN a valid AttrList (decoded into *attrs; SPAWN's
// aux at most kMaxSpawnLimitMs), QUERY_START's
// aux 1..kMaxBatchAnswers; QUERY_NEXT a 4-byte body 1..kMaxBatchAnswers;
// REMOVE, QUERY_STOP, REMOVE_CONTEXT empty. The most answers of QUERY_START
// and QUERY_NEXT go to *most if most != nullptr. ROCL_OK or ROCL_EINVAL +
// *what (*attrs and *most untouched).
int check_request(const Message &m, AttrList *attrs, std::string *what,
                  std::uint32_t *most = nullptr);

// Checks a reply to a request of op `request`: op REPLY; status <= 0 (a
// status < 0 carries a sentence of at most kMaxSentence bytes, returned in
// *sentence); on success the body the request expects: PROVE a 32-byte proof
// (and aux no flag but kEpochPageAttached), QUERY a valid AttrList (into
// *attrs), QUERY_START and QUERY_NEXT anything (decode_batch checks it),
// others empty.
// ROCL_OK or ROCL_EINVAL + *what.
int check_reply(Op request, const Message &m, AttrList *attrs, std::string *sentence,
                std::string *what);

// The body of a QUERY_NEXT request.
std::vector<std::byte> encode_most(std::uint32_t most);

// Builds a batch body (server side).
class BatchWriter {
 public:
  explicit BatchWriter(std::uint32_t most);
  // Appends one answer unless the batch is full (`most` answers, or the body
  // would pass kBatchBytes and it has one already): false then, unchanged.
  bool add(std::uint64_t gid, std::span<const std::byte> list);
  std::uint32_t count() const { return count_; }
  // The body, with kBatchMore if more (and count > 0).
  std::vector<std::byte> finish(bool more);

 private:
  std::uint32_t most_;
  std::uint32_t count_ = 0;
  std::vector<std::byte> body_;
};

struct BatchAnswer {
  std::uint64_t gid = 0;
  AttrList attrs{1};
};
struct Batch {
  std::vector<BatchAnswer> answers;
  bool more = false;
};

// Checks and decodes a batch body (client side) answering a request for at
// most `most` answers with gids > after. Every field is checked against the
// body and nothing outside it is read. ROCL_OK and *out, or ROCL_EINVAL with
// the bad field named in *what (*out unchanged). May throw bad_alloc.
int decode_batch(std::span<const std::byte> body, std::uint32_t most, std::uint64_t after,
                 Batch *out, std::string *what);

}  // namespace rocl::impl::dirproto
