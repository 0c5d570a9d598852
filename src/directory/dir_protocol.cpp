// dir_protocol.cpp - the directory wire protocol (see dir_protocol.hpp).
#include "directory/dir_protocol.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "directory/little_endian.hpp"
#include "status/status.hpp"

namespace rocl::impl::dirproto {
namespace {

// The lowest error code rocl.h defines: a REPLY's status is one of them.
constexpr std::int64_t kLowestCode = ROCL_EEXIST;

using le::get;
using le::put;

std::string format(const char *fmt, unsigned long long a, unsigned long long b = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

// Decodes an AttrList body, the decode sentence into *what on failure.
int decode_list(const char *op, std::span<const std::byte> body, AttrList *attrs,
                std::string *what) {
  AttrList tmp(1);
  if (AttrList::decode(body, tmp) != ROCL_OK) {
    *what = std::string("a bad attribute list in ") + op + ": " + last_error();
    return ROCL_EINVAL;
  }
  if (attrs != nullptr) {
    *attrs = std::move(tmp);
  }
  return ROCL_OK;
}

int expect_len(const char *op, std::span<const std::byte> body, std::size_t len,
               std::string *what) {
  if (body.size() != len) {
    *what = std::string(op) + format(" with a body of %llu bytes (expected %llu)",
                                     static_cast<unsigned long long>(body.size()),
                                     static_cast<unsigned long long>(len));
    return ROCL_EINVAL;
  }
  return ROCL_OK;
}

}  // namespace

const char *op_name(std::uint16_t op) noexcept {
  switch (static_cast<Op>(op)) {
    case Op::kHello:
      return "HELLO";
    case Op::kProve:
      return "PROVE";
    case Op::kReply:
      return "REPLY";
    case Op::kRegister:
      return "REGISTER";
    case Op::kRemove:
      return "REMOVE";
    case Op::kQuery:
      return "QUERY";
    case Op::kQueryStart:
      return "QUERY_START";
    case Op::kQueryNext:
      return "QUERY_NEXT";
    case Op::kQueryStop:
      return "QUERY_STOP";
    case Op::kRemoveContext:
      return "REMOVE_CONTEXT";
    case Op::kSpawn:
      return "SPAWN";
  }
  return "an unknown op";
}

void encode_header(const Header &h, std::byte out[kHeaderBytes]) {
  put<std::uint32_t>(out, h.magic);
  put<std::uint16_t>(out + 4, h.version);
  put<std::uint16_t>(out + 6, h.op);
  put<std::uint32_t>(out + 8, h.body_len);
  put<std::uint32_t>(out + 12, static_cast<std::uint32_t>(h.status));
  put<std::uint64_t>(out + 16, h.gid);
  put<std::uint64_t>(out + 24, h.aux);
}

int decode_header(std::span<const std::byte> bytes, Header *out, std::string *what) {
  if (bytes.size() < kHeaderBytes) {
    *what = format("a truncated header (%llu of %llu bytes)", bytes.size(), kHeaderBytes);
    return ROCL_EINVAL;
  }
  Header h;
  h.magic = get<std::uint32_t>(bytes.data());
  h.version = get<std::uint16_t>(bytes.data() + 4);
  h.op = get<std::uint16_t>(bytes.data() + 6);
  h.body_len = get<std::uint32_t>(bytes.data() + 8);
  h.status = static_cast<std::int32_t>(get<std::uint32_t>(bytes.data() + 12));
  h.gid = get<std::uint64_t>(bytes.data() + 16);
  h.aux = get<std::uint64_t>(bytes.data() + 24);
  if (h.magic != kMagic) {
    *what = format("a bad magic 0x%08llx (expected 0x%08llx, \"RDIR\")", h.magic, kMagic);
    return ROCL_EINVAL;
  }
  if (h.version != kVersion) {
    *what = format(
        "directory protocol version %llu, but this side speaks version %llu (the rocl "
        "library and the directory server, rocld or roclrun, must come from the same rocl "
        "release)",
        h.version, kVersion);
    return ROCL_EINVAL;
  }
  if (h.op == 0 || h.op > kMaxOp) {
    *what = format("unknown op %llu", h.op);
    return ROCL_EINVAL;
  }
  const std::size_t limit =
      h.op == static_cast<std::uint16_t>(Op::kReply) ? kMaxReplyBody : kMaxBody;
  if (h.body_len > limit) {
    *what = format("a body of %llu bytes (limit %llu)", h.body_len, limit);
    return ROCL_EINVAL;
  }
  *out = h;
  return ROCL_OK;
}

std::vector<std::byte> encode_message(Op op, std::int32_t status, std::uint64_t gid,
                                      std::uint64_t aux, std::span<const std::byte> body) {
  std::vector<std::byte> msg(kHeaderBytes + body.size());
  Header h;
  h.op = static_cast<std::uint16_t>(op);
  h.body_len = static_cast<std::uint32_t>(body.size());
  h.status = status;
  h.gid = gid;
  h.aux = aux;
  encode_header(h, msg.data());
  if (!body.empty()) {
    std::memcpy(msg.data() + kHeaderBytes, body.data(), body.size());
  }
  return msg;
}

std::vector<std::byte> encode_error(std::int32_t status, std::string_view sentence, bool closing) {
  if (sentence.size() > kMaxSentence) {
    sentence = sentence.substr(0, kMaxSentence);
  }
  return encode_message(Op::kReply, status, 0, closing ? kClosing : 0,
                        std::as_bytes(std::span(sentence)));
}

int parse_message(std::span<const std::byte> buf, Message *out, std::size_t *consumed,
                  std::string *what) {
  if (buf.size() < kHeaderBytes) {
    return 0;
  }
  Header h;
  if (decode_header(buf.first(kHeaderBytes), &h, what) != ROCL_OK) {
    return ROCL_EINVAL;
  }
  if (buf.size() - kHeaderBytes < h.body_len) {
    return 0;
  }
  out->header = h;
  out->body = buf.subspan(kHeaderBytes, h.body_len);
  *consumed = kHeaderBytes + h.body_len;
  return 1;
}

int check_request(const Message &m, AttrList *attrs, std::string *what, std::uint32_t *most) {
  const char *name = op_name(m.header.op);
  switch (static_cast<Op>(m.header.op)) {
    case Op::kProve:
      return expect_len(name, m.body, kProofBytes + kChallengeBytes, what);
    case Op::kRegister:
    case Op::kQuery:
      return decode_list(name, m.body, attrs, what);
    case Op::kQueryStart:
      if (m.header.aux < 1 || m.header.aux > kMaxBatchAnswers) {
        *what = format("QUERY_START asking for %llu answers at most (must be 1..%llu)",
                       m.header.aux, kMaxBatchAnswers);
        return ROCL_EINVAL;
      }
      if (decode_list(name, m.body, attrs, what) != ROCL_OK) {
        return ROCL_EINVAL;
      }
      if (most != nullptr) {
        *most = static_cast<std::uint32_t>(m.header.aux);
      }
      return ROCL_OK;
    case Op::kQueryNext: {
      if (expect_len(name, m.body, 4, what) != ROCL_OK) {
        return ROCL_EINVAL;
      }
      const std::uint32_t n = get<std::uint32_t>(m.body.data());
      if (n < 1 || n > kMaxBatchAnswers) {
        *what = format("QUERY_NEXT asking for %llu answers at most (must be 1..%llu)", n,
                       kMaxBatchAnswers);
        return ROCL_EINVAL;
      }
      if (most != nullptr) {
        *most = n;
      }
      return ROCL_OK;
    }
    case Op::kRemove:
    case Op::kQueryStop:
    case Op::kRemoveContext:
      return expect_len(name, m.body, 0, what);
    case Op::kSpawn:
      if (m.header.aux > kMaxSpawnLimitMs) {
        *what = format("SPAWN with a time limit of %llu ms (at most %llu; 0: none)", m.header.aux,
                       kMaxSpawnLimitMs);
        return ROCL_EINVAL;
      }
      return decode_list(name, m.body, attrs, what);
    case Op::kHello:
    case Op::kReply:
      *what = std::string(name) + ", which only a server sends";
      return ROCL_EINVAL;
  }
  *what = format("unknown op %llu", m.header.op);
  return ROCL_EINVAL;
}

int check_reply(Op request, const Message &m, AttrList *attrs, std::string *sentence,
                std::string *what) {
  if (m.header.op != static_cast<std::uint16_t>(Op::kReply)) {
    *what = std::string(op_name(m.header.op)) + " where a REPLY to " +
            op_name(static_cast<std::uint16_t>(request)) + " was due";
    return ROCL_EINVAL;
  }
  if (m.header.status > 0 || m.header.status < kLowestCode) {
    *what = format("a REPLY with status %lld, not a rocl code",
                   static_cast<unsigned long long>(static_cast<long long>(m.header.status)));
    return ROCL_EINVAL;
  }
  if (m.header.status < 0) {
    if ((m.header.aux & ~kClosing) != 0) {
      *what = format("a failed REPLY with unknown flags 0x%llx", m.header.aux);
      return ROCL_EINVAL;
    }
    if (m.body.size() > kMaxSentence) {
      *what = format("an error sentence of %llu bytes (limit %llu)", m.body.size(), kMaxSentence);
      return ROCL_EINVAL;
    }
    sentence->clear();
    for (std::byte b : m.body) {  // printable ASCII only: it ends up in logs
      const char c = static_cast<char>(b);
      sentence->push_back(c >= 0x20 && c < 0x7f ? c : '?');
    }
    return ROCL_OK;
  }
  switch (request) {
    case Op::kProve:
      if ((m.header.aux & ~kEpochPageAttached) != 0) {
        *what = format("a REPLY to PROVE with unknown flags 0x%llx", m.header.aux);
        return ROCL_EINVAL;
      }
      return expect_len("REPLY to PROVE", m.body, kProofBytes, what);
    case Op::kQuery:
      return decode_list("REPLY", m.body, attrs, what);
    case Op::kQueryStart:
    case Op::kQueryNext:
      return ROCL_OK;  // a batch: decode_batch checks it
    default:
      return expect_len("REPLY", m.body, 0, what);
  }
}

std::vector<std::byte> encode_most(std::uint32_t most) {
  std::vector<std::byte> body(4);
  put<std::uint32_t>(body.data(), most);
  return body;
}

BatchWriter::BatchWriter(std::uint32_t most) : most_(most), body_(kBatchHeaderBytes) {}

bool BatchWriter::add(std::uint64_t gid, std::span<const std::byte> list) {
  const std::size_t entry = kBatchEntryBytes + list.size();
  if (count_ >= most_ || (count_ > 0 && body_.size() + entry > kBatchBytes)) {
    return false;
  }
  const std::size_t at = body_.size();
  body_.resize(at + entry);  // zero filled: the u32 zero is written
  put<std::uint64_t>(body_.data() + at, gid);
  put<std::uint32_t>(body_.data() + at + 8, static_cast<std::uint32_t>(list.size()));
  if (!list.empty()) {
    std::memcpy(body_.data() + at + kBatchEntryBytes, list.data(), list.size());
  }
  count_ += 1;
  return true;
}

std::vector<std::byte> BatchWriter::finish(bool more) {
  put<std::uint32_t>(body_.data(), count_);
  put<std::uint32_t>(body_.data() + 4, more && count_ > 0 ? kBatchMore : 0);
  return std::move(body_);
}

int decode_batch(std::span<const std::byte> body, std::uint32_t most, std::uint64_t after,
                 Batch *out, std::string *what) {
  if (body.size() < kBatchHeaderBytes) {
    *what =
        format("a batch of %llu bytes (its header alone is %llu)", body.size(), kBatchHeaderBytes);
    return ROCL_EINVAL;
  }
  const std::uint32_t count = get<std::uint32_t>(body.data());
  const std::uint32_t flags = get<std::uint32_t>(body.data() + 4);
  if (count > most) {
    *what = format("a batch 'count' of %llu answers (%llu were asked for at most)", count, most);
    return ROCL_EINVAL;
  }
  if ((flags & ~kBatchMore) != 0) {
    *what = format("a batch with unknown 'flags' 0x%llx", flags);
    return ROCL_EINVAL;
  }
  const bool more = (flags & kBatchMore) != 0;
  if (more && count == 0) {
    *what = "a batch of 0 answers whose 'flags' say more follow";
    return ROCL_EINVAL;
  }
  Batch batch;
  batch.more = more;
  batch.answers.reserve(count);
  std::uint64_t prev = after;
  std::size_t off = kBatchHeaderBytes;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t left = body.size() - off;
    if (left < kBatchEntryBytes) {
      *what =
          format("a batch cut short: answer %llu of %llu has no room for its header", i + 1, count);
      return ROCL_EINVAL;
    }
    const std::byte *p = body.data() + off;
    const std::uint64_t gid = get<std::uint64_t>(p);
    const std::uint32_t len = get<std::uint32_t>(p + 8);
    const std::uint32_t zero = get<std::uint32_t>(p + 12);
    if (gid <= prev || gid > static_cast<std::uint64_t>(INT64_MAX)) {
      *what = format(
          "a batch answer 'gid' 0x%llx not above 0x%llx (answers must be in "
          "increasing gid order, after the one asked from, and > 0 as int64)",
          gid, prev);
      return ROCL_EINVAL;
    }
    if (zero != 0) {
      *what =
          format("a batch answer (gid 0x%llx) whose reserved field is 0x%llx, not 0", gid, zero);
      return ROCL_EINVAL;
    }
    if (len > left - kBatchEntryBytes || len % 8 != 0) {
      *what =
          format("a batch answer (gid 0x%llx) with a list 'len' of %llu bytes", gid, len) +
          format(" (%llu bytes left in the body; a multiple of 8 is due)", left - kBatchEntryBytes);
      return ROCL_EINVAL;
    }
    BatchAnswer a;
    a.gid = gid;
    if (AttrList::decode(body.subspan(off + kBatchEntryBytes, len), a.attrs) != ROCL_OK) {
      *what = format("a batch answer (gid 0x%llx) with a bad attribute list: ", gid) + last_error();
      return ROCL_EINVAL;
    }
    batch.answers.push_back(std::move(a));
    prev = gid;
    off += kBatchEntryBytes + len;
  }
  if (off != body.size()) {
    *what = format("a batch with %llu bytes after its %llu answers", body.size() - off, count);
    return ROCL_EINVAL;
  }
  *out = std::move(batch);
  return ROCL_OK;
}

}  // namespace rocl::impl::dirproto
