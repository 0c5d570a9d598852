// dir_protocol_fuzz.cpp - libFuzzer target for the directory client
// protocol (src/directory/dir_protocol.hpp): what a directory server reads
// from a process's Unix or tcp socket and what the process reads back, and
// the attribute lists those messages carry (src/directory/attr_list.hpp).
// Built and run by scripts/fuzz.sh (clang++-14,
// -fsanitize=fuzzer,address,undefined), not by the CMake project.
//
// The first input byte picks the mode (modulo 3):
//   0: u8 request | a byte stream as read from the socket. parse_message
//      takes messages off its front until it needs more bytes or refuses a
//      header (where the server disconnects): a message is found exactly
//      when its header is good and its whole body is there, and it encodes
//      again (encode_message) to the bytes it came from. Each goes through
//      check_request, and through check_reply as the reply to the request
//      op `request` picked (1..kMaxOp), a batch's body through
//      decode_batch. Accepted: the body is what the op asks for (a list
//      decodes to the body's bytes, `most` is 1..kMaxBatchAnswers, an error
//      sentence is the body made printable); refused: a non-empty sentence,
//      and the list, `most` and the sentence passed in are untouched.
//   1: u8 most | u64 after | a batch body for decode_batch. Accepted: at
//      most `most` answers with gids above `after`, increasing, <= INT64_MAX,
//      and BatchWriter builds the same bytes from them (when they fit its
//      kBatchBytes); refused: a sentence, *out untouched.
//   2: u16 split | two attribute lists, A (split bytes) and B (the rest),
//      each through AttrList::decode. Accepted: bytes() are the input,
//      count and charge as the entries say, the charge within the capacity,
//      every name found, and a list rebuilt with add / add_unspecified /
//      fill has the same bytes (but for a slot's space past its answer,
//      which an encoding may carry). Refused: ROCL_EINVAL, a sentence,
//      out untouched. Then A.fill_from(B): ROCL_OK, each slot of A holds
//      B's value of that name or none, and A's bytes still decode;
//      ROCL_ENOSPC: A unchanged. clear_answers() leaves no answer.
// Any broken invariant aborts. Every allocation is bounded by the
// protocol's limits (scripts/fuzz.sh runs this target with a malloc limit).
//
// With ROCL_FUZZ_WRITE_SEEDS=<dir> in the environment the binary writes
// seed inputs (a conversation's requests and replies, batches, lists) to
// <dir> and exits.
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "directory/attr_list.hpp"
#include "directory/dir_protocol.hpp"
#include "status/status.hpp"

#include "fuzz_util.hpp"

using namespace rocl::impl;
using namespace rocl::impl::dirproto;

namespace {

constexpr rocl::fuzz::Target kTarget{.name = "dir_protocol_fuzz",
                                     .last_error = rocl::impl::last_error};

using rocl::fuzz::Bytes;
using rocl::fuzz::View;
using rocl::fuzz::write_file;

constexpr std::uint64_t kMaxGid = static_cast<std::uint64_t>(INT64_MAX);

bool same(View a, View b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

std::uint32_t u32_at(View v, std::size_t at) {
  std::uint32_t x = 0;
  for (std::size_t i = 0; i < 4; ++i) x |= static_cast<std::uint32_t>(v[at + i]) << (8 * i);
  return x;
}

// A list that a refusal must leave as it is.
AttrList sentinel() {
  AttrList l(64);
  (void)l.add("sentinel", std::string_view("untouched"));
  return l;
}

// ---- attribute lists ------------------------------------------------------------

// The decoded list's encoding with the bytes of each slot's space past its
// answer cleared (an encoding may carry anything there; add() and fill()
// write zeros).
Bytes canonical(const AttrList &l) {
  const View b = l.bytes();
  Bytes out(b.begin(), b.end());
  for (const AttrList::Attr &a : l) {
    if (!a.slot) continue;
    // The value area starts after the name's padding; for an unfilled slot
    // a.value is null, so find the area from the name.
    const auto *name_at = reinterpret_cast<const std::byte *>(a.name.data());
    const std::byte *area = name_at + ((a.name.size() + 7) & ~std::size_t{7});
    const std::size_t from = static_cast<std::size_t>(area - b.data()) + a.len;
    std::memset(out.data() + from, 0, a.space - a.len);
  }
  return out;
}

void check_decoded(const AttrList &l, View input) {
  CHECK(same(l.bytes(), input), "decode kept other bytes (%zu, %zu)", l.bytes().size(),
        input.size());
  std::size_t n = 0, charged = 0;
  AttrList rebuilt(static_cast<int>(l.capacity()));
  for (const AttrList::Attr &a : l) {
    n += 1;
    charged += AttrList::kChargePerAttr + a.name.size() + a.space;
    CHECK(!a.name.empty() && a.name.size() <= AttrList::kMaxNameLen, "name of %zu bytes",
          a.name.size());
    CHECK(a.len <= a.space && (a.slot || (a.specified() && a.len == a.space)),
          "attribute '%.*s': len %zu space %zu slot %d", static_cast<int>(a.name.size()),
          a.name.data(), a.len, a.space, int(a.slot));
    const auto found = l.find(a.name);
    CHECK(found && found->name == a.name && found->space == a.space, "find('%.*s')",
          static_cast<int>(a.name.size()), a.name.data());
    int rc;
    if (a.slot) {
      rc = rebuilt.add_unspecified(a.name, a.space);
      if (rc == ROCL_OK && a.specified()) rc = rebuilt.fill(a.name, a.bytes());
    } else {
      rc = rebuilt.add(a.name, a.bytes());
    }
    CHECK(rc == ROCL_OK, "rebuilding attribute %zu: %d", n, rc);
  }
  CHECK(n == l.count() && charged == l.charged() && charged <= l.capacity(),
        "count %zu/%zu charge %zu/%zu capacity %zu", n, l.count(), charged, l.charged(),
        l.capacity());
  CHECK(same(rebuilt.bytes(), canonical(l)), "the rebuilt list has other bytes");
  const AttrList copy(l);
  CHECK(same(copy.bytes(), l.bytes()), "a copy has other bytes");
}

// AttrList::decode and its invariants; true if accepted.
bool decode_list(View input, AttrList *out) {
  AttrList l = sentinel();
  const Bytes before(l.bytes().begin(), l.bytes().end());
  clear_error();
  const int rc = AttrList::decode(input, l);
  if (rc != ROCL_OK) {
    CHECK(rc == ROCL_EINVAL, "decode rc %d", rc);
    CHECK(last_error()[0] != '\0', "a refused list without a sentence");
    CHECK(same(l.bytes(), before), "a refused decode changed the list");
    return false;
  }
  check_decoded(l, input);
  *out = std::move(l);
  return true;
}

void check_fill_from(AttrList &a, const AttrList &b) {
  const Bytes before(a.bytes().begin(), a.bytes().end());
  const int rc = a.fill_from(b);
  if (rc != ROCL_OK) {
    CHECK(rc == ROCL_ENOSPC, "fill_from rc %d", rc);
    CHECK(same(a.bytes(), before), "a refused fill_from changed the list");
    return;
  }
  for (const AttrList::Attr &s : a) {
    if (!s.slot) continue;
    const auto answer = b.find(s.name);
    if (answer && answer->specified()) {
      CHECK(s.specified() && same(s.bytes(), answer->bytes()), "slot '%.*s' not answered",
            static_cast<int>(s.name.size()), s.name.data());
    } else {
      CHECK(!s.specified(), "slot '%.*s' answered from nothing", static_cast<int>(s.name.size()),
            s.name.data());
    }
  }
  AttrList back(1);
  CHECK(AttrList::decode(a.bytes(), back) == ROCL_OK, "a filled list does not decode");
  a.clear_answers();
  for (const AttrList::Attr &s : a) CHECK(!s.slot || !s.specified(), "an answer left");
  CHECK(AttrList::decode(a.bytes(), back) == ROCL_OK, "a cleared list does not decode");
}

void list_mode(View in) {
  if (in.size() < 2) return;
  rocl::fuzz::Reader r(in);
  const std::size_t split = r.u16();
  in = r.rest();
  const View first = in.first(split < in.size() ? split : in.size());
  const View second = in.subspan(first.size());
  AttrList a(1), b(1);
  const bool have_a = decode_list(first, &a);
  const bool have_b = decode_list(second, &b);
  if (have_a && have_b) check_fill_from(a, b);
}

// ---- batches ------------------------------------------------------------------

// decode_batch and its invariants; true if accepted.
bool check_batch(View body, std::uint32_t most, std::uint64_t after) {
  Batch out;
  out.more = true;
  out.answers.resize(1);
  out.answers[0].gid = 0x5eed;
  std::string what;
  const int rc = decode_batch(body, most, after, &out, &what);
  if (rc != ROCL_OK) {
    CHECK(rc == ROCL_EINVAL, "decode_batch rc %d", rc);
    CHECK(!what.empty(), "a refused batch without a sentence");
    CHECK(out.more && out.answers.size() == 1 && out.answers[0].gid == 0x5eed,
          "a refused batch changed *out");
    return false;
  }
  CHECK(out.answers.size() <= most, "%zu answers, %u asked for", out.answers.size(), most);
  CHECK(!out.more || !out.answers.empty(), "more after no answer");
  std::uint64_t prev = after;
  BatchWriter w(most);
  bool fits = true;
  for (const BatchAnswer &a : out.answers) {
    CHECK(a.gid > prev && a.gid <= kMaxGid, "gid %#" PRIx64 " after %#" PRIx64, a.gid, prev);
    prev = a.gid;
    fits = fits && w.add(a.gid, a.attrs.bytes());
  }
  if (fits) {
    const Bytes again = w.finish(out.more);
    CHECK(same(again, body), "a batch encodes again to other bytes (%zu, %zu)", again.size(),
          body.size());
  }
  return true;
}

void batch_mode(View in) {
  if (in.size() < 9) return;
  rocl::fuzz::Reader r(in);
  const std::uint32_t most = r.u8();
  const std::uint64_t after = r.u64();
  check_batch(r.rest(), most, after);
}

// ---- messages -------------------------------------------------------------------

bool is_list_request(Op op) {
  return op == Op::kRegister || op == Op::kQuery || op == Op::kQueryStart || op == Op::kSpawn;
}

void check_request_of(const Message &m) {
  const auto op = static_cast<Op>(m.header.op);
  AttrList attrs = sentinel();
  const Bytes before(attrs.bytes().begin(), attrs.bytes().end());
  std::uint32_t most = 0x5eed;
  std::string what;
  const int rc = check_request(m, &attrs, &what, &most);
  std::string what2;
  CHECK(check_request(m, nullptr, &what2, nullptr) == rc, "check_request without outputs");
  if (rc != ROCL_OK) {
    CHECK(rc == ROCL_EINVAL, "check_request rc %d", rc);
    CHECK(!what.empty(), "a refused %s without a sentence", op_name(m.header.op));
    CHECK(same(attrs.bytes(), before) && most == 0x5eed, "a refused request changed outputs");
    return;
  }
  CHECK(op != Op::kHello && op != Op::kReply, "a server op accepted as a request");
  if (is_list_request(op)) {
    CHECK(same(attrs.bytes(), m.body), "%s's list is not its body", op_name(m.header.op));
  } else {
    CHECK(same(attrs.bytes(), before), "%s changed the list", op_name(m.header.op));
  }
  switch (op) {
    case Op::kProve:
      CHECK(m.body.size() == kProofBytes + kChallengeBytes, "PROVE of %zu", m.body.size());
      break;
    case Op::kQueryStart:
      CHECK(most == m.header.aux && most >= 1 && most <= kMaxBatchAnswers, "most %u", most);
      break;
    case Op::kQueryNext:
      CHECK(
          m.body.size() == 4 && most == u32_at(m.body, 0) && most >= 1 && most <= kMaxBatchAnswers,
          "QUERY_NEXT most %u", most);
      break;
    case Op::kRemove:
    case Op::kQueryStop:
    case Op::kRemoveContext:
      CHECK(m.body.empty(), "%s with a body", op_name(m.header.op));
      break;
    case Op::kSpawn:
      CHECK(m.header.aux <= kMaxSpawnLimitMs, "SPAWN limit %" PRIu64, m.header.aux);
      break;
    default:
      break;
  }
  if (op != Op::kQueryStart && op != Op::kQueryNext) CHECK(most == 0x5eed, "most set");
}

void check_reply_of(Op request, const Message &m) {
  AttrList attrs = sentinel();
  const Bytes before(attrs.bytes().begin(), attrs.bytes().end());
  std::string sentence = "untouched", what;
  const int rc = check_reply(request, m, &attrs, &sentence, &what);
  if (rc != ROCL_OK) {
    CHECK(rc == ROCL_EINVAL, "check_reply rc %d", rc);
    CHECK(!what.empty(), "a refused reply without a sentence");
    CHECK(same(attrs.bytes(), before) && sentence == "untouched",
          "a refused reply changed outputs");
    return;
  }
  CHECK(m.header.op == static_cast<std::uint16_t>(Op::kReply), "op %u accepted as a reply",
        unsigned(m.header.op));
  CHECK(m.header.status <= 0 && m.header.status >= ROCL_EEXIST, "status %d", m.header.status);
  if (m.header.status < 0) {
    CHECK((m.header.aux & ~kClosing) == 0, "failed reply aux %#" PRIx64, m.header.aux);
    CHECK(sentence.size() == m.body.size() && sentence.size() <= kMaxSentence,
          "sentence of %zu for a body of %zu", sentence.size(), m.body.size());
    for (char c : sentence) CHECK(c >= 0x20 && c < 0x7f, "unprintable %#x", unsigned(c) & 0xff);
    CHECK(same(attrs.bytes(), before), "a failed reply changed the list");
    return;
  }
  CHECK(sentence == "untouched", "a successful reply set a sentence");
  switch (request) {
    case Op::kProve:
      CHECK(m.body.size() == kProofBytes && (m.header.aux & ~kEpochPageAttached) == 0,
            "REPLY to PROVE");
      break;
    case Op::kQuery:
      CHECK(same(attrs.bytes(), m.body), "the QUERY reply's list is not its body");
      break;
    case Op::kQueryStart:
    case Op::kQueryNext:
      check_batch(m.body, kMaxBatchAnswers, 0);
      break;
    default:
      CHECK(m.body.empty(), "a REPLY to %s with a body",
            op_name(static_cast<std::uint16_t>(request)));
  }
  if (request != Op::kQuery) CHECK(same(attrs.bytes(), before), "the list changed");
}

void stream_mode(View in) {
  if (in.empty()) return;
  const auto request = static_cast<Op>(1 + static_cast<unsigned>(in[0]) % kMaxOp);
  View buf = in.subspan(1);
  for (;;) {
    Message m;
    m.header.gid = 0x5eed;
    std::size_t consumed = 0x5eed;
    std::string what;
    const int rc = parse_message(buf, &m, &consumed, &what);
    Header h;
    std::string why;
    const int hrc = buf.size() >= kHeaderBytes ? decode_header(buf, &h, &why) : ROCL_EINVAL;
    if (rc != 1) {
      CHECK(m.header.gid == 0x5eed && consumed == 0x5eed, "parse_message set outputs: %d", rc);
      if (rc == ROCL_EINVAL) {
        CHECK(!what.empty() && hrc == ROCL_EINVAL && why == what, "a refused header: '%s' '%s'",
              what.c_str(), why.c_str());
      } else {
        CHECK(rc == 0, "parse_message rc %d", rc);
        CHECK(
            buf.size() < kHeaderBytes || (hrc == ROCL_OK && buf.size() < kHeaderBytes + h.body_len),
            "more bytes wanted with %zu there", buf.size());
      }
      return;
    }
    CHECK(hrc == ROCL_OK && consumed == kHeaderBytes + h.body_len && consumed <= buf.size(),
          "consumed %zu of %zu", consumed, buf.size());
    CHECK(m.body.data() == buf.data() + kHeaderBytes && m.body.size() == h.body_len,
          "the body is not after the header");
    const std::size_t limit =
        m.header.op == static_cast<std::uint16_t>(Op::kReply) ? kMaxReplyBody : kMaxBody;
    CHECK(m.header.op >= 1 && m.header.op <= kMaxOp && m.body.size() <= limit, "op %u body %zu",
          unsigned(m.header.op), m.body.size());
    const Bytes again = encode_message(static_cast<Op>(m.header.op), m.header.status, m.header.gid,
                                       m.header.aux, m.body);
    CHECK(same(again, buf.first(consumed)), "a message encodes again to other bytes");
    check_request_of(m);
    check_reply_of(request, m);
    buf = buf.subspan(consumed);
  }
}

// ---- seed generator ---------------------------------------------------------

AttrList seed_list() {
  AttrList l(256);
  (void)l.add("type", std::string_view("worker"));
  (void)l.add("context", std::string_view("\x05\0\0\0\0\0\1\0", 8));
  (void)l.add_unspecified("name", 32);
  return l;
}

void append(Bytes &out, const Bytes &more) {
  out.insert(out.end(), more.begin(), more.end());
}

Bytes seed_batch(bool more) {
  BatchWriter w(4);
  const AttrList l = seed_list();
  AttrList filled = l;
  (void)filled.fill("name", std::as_bytes(std::span("w-1", 3)));
  (void)w.add(0x0001000000000007ull, l.bytes());
  (void)w.add(0x0001000000000009ull, filled.bytes());
  return w.finish(more);
}

// A stream: mode 0, the request op the replies answer, then messages.
void write_stream(const std::string &path, Op request, const std::vector<Bytes> &messages) {
  Bytes in = {std::byte{0}, static_cast<std::byte>(static_cast<unsigned>(request) - 1)};
  for (const Bytes &m : messages) append(in, m);
  write_file(path, in);
}

void write_seeds(const char *dir) {
  const std::string d = std::string(dir) + "/seed-";
  const AttrList l = seed_list();
  Bytes proof(kProofBytes + kChallengeBytes, std::byte{0x11});
  write_stream(
      d + "prove", Op::kProve,
      {encode_message(Op::kHello, 0, 0, 0, std::span(proof).first(kChallengeBytes)),
       encode_message(Op::kProve, 0, 0, 0, proof),
       encode_message(Op::kReply, 0, 0, kEpochPageAttached, std::span(proof).first(kProofBytes))});
  write_stream(d + "register", Op::kRegister,
               {encode_message(Op::kRegister, 0, 0x0001000000000001ull, 0, l.bytes()),
                encode_message(Op::kReply, 0, 0x0001000000000007ull, 0, {}),
                encode_message(Op::kRemove, 0, 0x0001000000000007ull, 0, {}),
                encode_message(Op::kRemoveContext, 0, 0x0001000000000001ull, 0, {})});
  write_stream(d + "query", Op::kQuery,
               {encode_message(Op::kQuery, 0, 0, 0, l.bytes()),
                encode_message(Op::kReply, 0, 0x0001000000000007ull, 0, l.bytes())});
  const Bytes batch = seed_batch(true);
  write_stream(d + "query-start", Op::kQueryStart,
               {encode_message(Op::kQueryStart, 0, 0, 4, l.bytes()),
                encode_message(Op::kReply, 0, 0, 3, batch),
                encode_message(Op::kQueryNext, 0, 0x0001000000000009ull, 3, encode_most(4)),
                encode_message(Op::kReply, 0, 0, 3, seed_batch(false)),
                encode_message(Op::kQueryStop, 0, 0, 3, {})});
  write_stream(d + "spawn", Op::kSpawn,
               {encode_message(Op::kSpawn, 0, 0, 5000, l.bytes()),
                encode_error(ROCL_EPEER, "spawn: no such program", true)});
  // A truncated message: the stream needs more bytes.
  Bytes cut = encode_message(Op::kQuery, 0, 0, 0, l.bytes());
  cut.resize(cut.size() - 5);
  write_stream(d + "truncated", Op::kQuery, {cut});

  Bytes b = {std::byte{1}, std::byte{4}};
  for (int i = 0; i < 8; ++i) b.push_back(std::byte{0});
  append(b, batch);
  write_file(d + "batch", b);

  AttrList filled = l;
  (void)filled.fill("name", std::as_bytes(std::span("worker-1", 8)));
  AttrList answer(128);
  (void)answer.add("name", std::string_view("w"));
  (void)answer.add("type", std::string_view("other"));
  const std::size_t split = filled.bytes().size();
  Bytes lists = {std::byte{2}, static_cast<std::byte>(split), static_cast<std::byte>(split >> 8)};
  append(lists, Bytes(filled.bytes().begin(), filled.bytes().end()));
  append(lists, Bytes(answer.bytes().begin(), answer.bytes().end()));
  write_file(d + "lists", lists);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  rocl::fuzz::seeds_then_exit(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rocl::fuzz::pick_mode(data, size, {stream_mode, batch_mode, list_mode});
  return 0;
}
