// reassembly.cpp - fragments to messages; see reassembly.hpp.
#include "wire/reassembly.hpp"

#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <new>

#include "status/status.hpp"

namespace rocl::wire {

using impl::fail;

namespace {

int peer_len(std::string_view peer) {
  return static_cast<int>(peer.size() > 200 ? 200 : peer.size());
}
const char *peer_ptr(std::string_view peer) {
  return peer.empty() ? "" : peer.data();
}

}  // namespace

Reassembly::Reassembly(std::uint64_t total_length, std::span<std::byte> destination,
                       std::size_t max_ranges)
    : total_(total_length), destination_(destination), max_ranges_(max_ranges) {}

int Reassembly::add(const MessageHeader &f, std::span<const std::byte> bytes,
                    std::string_view peer) {
  const int pl = peer_len(peer);
  const char *p = peer_ptr(peer);
  const std::uint64_t off = f.fragment_offset;
  const std::uint64_t len = f.fragment_length;
  if (bytes.size() != len) {
    return fail(ROCL_EPEER,
                "frame from %.*s: fragment_length %" PRIu64
                " but %zu payload bytes arrived "
                "(message_id %" PRIu64 ")",
                pl, p, len, bytes.size(), f.message_id);
  }
  if (len == 0) {
    return fail(ROCL_EPEER,
                "frame from %.*s: fragment_length 0 carries nothing (message_id %" PRIu64 ")", pl,
                p, f.message_id);
  }
  if (f.total_length != total_) {
    return fail(ROCL_EPEER,
                "frame from %.*s: total_length %" PRIu64 " differs from %" PRIu64
                " of message_id %" PRIu64 "'s first fragment",
                pl, p, f.total_length, total_, f.message_id);
  }
  if (off > total_ || len > total_ - off) {
    return fail(ROCL_EPEER,
                "frame from %.*s: fragment_offset %" PRIu64 " + fragment_length %" PRIu64
                " exceeds total_length %" PRIu64,
                pl, p, off, len, total_);
  }
  const std::uint64_t end = off + len;  // cannot wrap: end <= total_
  if (end > destination_.size()) {
    return fail(ROCL_EINTERNAL,
                "reassembly of message_id %" PRIu64
                ": destination of %zu bytes is shorter than "
                "total_length %" PRIu64,
                f.message_id, destination_.size(), total_);
  }
  // next: first range beginning at or after off; prev: the one before it.
  auto next = ranges_.lower_bound(off);
  auto prev = next == ranges_.begin() ? ranges_.end() : std::prev(next);
  if (next != ranges_.end() && next->first < end) {
    return fail(ROCL_EPEER,
                "frame from %.*s: fragment_offset %" PRIu64 " + fragment_length %" PRIu64
                " overlaps bytes [%" PRIu64 ", %" PRIu64
                ") already received of message_id %" PRIu64,
                pl, p, off, len, next->first, next->second, f.message_id);
  }
  if (prev != ranges_.end() && prev->second > off) {
    return fail(ROCL_EPEER,
                "frame from %.*s: fragment_offset %" PRIu64 " + fragment_length %" PRIu64
                " overlaps bytes [%" PRIu64 ", %" PRIu64
                ") already received of message_id %" PRIu64,
                pl, p, off, len, prev->first, prev->second, f.message_id);
  }
  const bool join_prev = prev != ranges_.end() && prev->second == off;
  const bool join_next = next != ranges_.end() && next->first == end;
  if (!join_prev && !join_next && ranges_.size() >= max_ranges_) {
    return fail(ROCL_EPEER,
                "frame from %.*s: fragment_offset %" PRIu64 " + fragment_length %" PRIu64
                " would be disjoint range %zu of message_id %" PRIu64 ", over the limit %zu",
                pl, p, off, len, ranges_.size() + 1, f.message_id, max_ranges_);
  }
  std::memcpy(destination_.data() + off, bytes.data(), len);
  received_ += len;
  if (join_prev && join_next) {
    prev->second = next->second;
    ranges_.erase(next);
  } else if (join_prev) {
    prev->second = end;
  } else if (join_next) {
    const std::uint64_t next_end = next->second;
    ranges_.erase(next);
    ranges_.emplace(off, next_end);
  } else {
    ranges_.emplace_hint(next, off, end);
  }
  return ROCL_OK;
}

int ReassemblyTable::add(std::uint64_t origin, const MessageHeader &f,
                         std::span<const std::byte> bytes, std::string_view peer) {
  const int pl = peer_len(peer);
  const char *p = peer_ptr(peer);
  if (f.kind != Kind::kFragment) {
    return fail(ROCL_EINVAL, "reassembly: frame from %.*s of kind %u is not a fragment", pl, p,
                static_cast<unsigned>(f.kind));
  }
  const Key key{origin, f.message_id};
  auto it = open_.find(key);
  if (it == open_.end()) {
    if (open_.size() >= limits_.max_open_messages) {
      return fail(ROCL_ENOMEM,
                  "frame from %.*s: message_id %" PRIu64
                  " would be open message %zu, over the limit %zu",
                  pl, p, f.message_id, open_.size() + 1, limits_.max_open_messages);
    }
    if (f.total_length > limits_.max_open_bytes - open_bytes_) {
      return fail(ROCL_ENOMEM,
                  "frame from %.*s: total_length %" PRIu64 " of message_id %" PRIu64
                  " would raise open reassembly bytes from %" PRIu64 " over the limit %" PRIu64,
                  pl, p, f.total_length, f.message_id, open_bytes_, limits_.max_open_bytes);
    }
    if (f.total_length > SIZE_MAX) {
      return fail(ROCL_ENOMEM, "frame from %.*s: total_length %" PRIu64 " cannot be addressed", pl,
                  p, f.total_length);
    }
    const auto size = static_cast<std::size_t>(f.total_length);
    // Exactly total_length bytes (at least one for new[]), left uninitialised:
    // the message is complete only once every byte has been written.
    std::unique_ptr<std::byte[]> data(new (std::nothrow) std::byte[size == 0 ? 1 : size]);
    if (data == nullptr) {
      return fail(ROCL_ENOMEM,
                  "frame from %.*s: no memory for total_length %" PRIu64 " of message_id %" PRIu64,
                  pl, p, f.total_length, f.message_id);
    }
    Reassembly r(f.total_length, std::span<std::byte>(data.get(), size), limits_.max_ranges);
    if (int rc = r.add(f, bytes, peer); rc != ROCL_OK) {
      return rc;
    }
    it = open_.emplace(key, Open{f, std::move(data), std::move(r)}).first;
    open_bytes_ += f.total_length;
    return it->second.reassembly.complete() ? kMessageComplete : ROCL_OK;
  }
  Open &o = it->second;
  const MessageHeader &first = o.header;
  if (f.source != first.source) {
    return fail(ROCL_EPEER,
                "frame from %.*s: source 0x%016" PRIx64 " differs from 0x%016" PRIx64
                " of message_id %" PRIu64 "'s first fragment",
                pl, p, f.source, first.source, f.message_id);
  }
  if (f.destination != first.destination) {
    return fail(ROCL_EPEER,
                "frame from %.*s: destination 0x%016" PRIx64 " differs from 0x%016" PRIx64
                " of message_id %" PRIu64 "'s first fragment",
                pl, p, f.destination, first.destination, f.message_id);
  }
  if (f.tag != first.tag) {
    return fail(ROCL_EPEER,
                "frame from %.*s: tag %" PRId32 " differs from %" PRId32 " of message_id %" PRIu64
                "'s first fragment",
                pl, p, f.tag, first.tag, f.message_id);
  }
  if (f.domain != first.domain) {
    return fail(ROCL_EPEER,
                "frame from %.*s: domain %" PRIu32 " differs from %" PRIu32
                " of message_id %" PRIu64 "'s first fragment",
                pl, p, f.domain, first.domain, f.message_id);
  }
  if (o.reassembly.complete()) {
    return fail(ROCL_EPEER,
                "frame from %.*s: fragment_offset %" PRIu64 " arrived for message_id %" PRIu64
                ", which is complete already",
                pl, p, f.fragment_offset, f.message_id);
  }
  if (int rc = o.reassembly.add(f, bytes, peer); rc != ROCL_OK) {
    return rc;
  }
  return o.reassembly.complete() ? kMessageComplete : ROCL_OK;
}

int ReassemblyTable::take(std::uint64_t origin, std::uint64_t message_id, ReassembledMessage *out) {
  if (out == nullptr) {
    return fail(ROCL_EINVAL, "reassembly: take needs somewhere to put the message");
  }
  auto it = open_.find(Key{origin, message_id});
  if (it == open_.end()) {
    return fail(ROCL_ENOTFOUND,
                "reassembly: no open message_id %" PRIu64 " from context 0x%016" PRIx64, message_id,
                origin);
  }
  if (!it->second.reassembly.complete()) {
    return fail(ROCL_EBUSY,
                "reassembly: message_id %" PRIu64 " from context 0x%016" PRIx64 " has %" PRIu64
                " of %" PRIu64 " bytes",
                message_id, origin, it->second.reassembly.received(),
                it->second.reassembly.total_length());
  }
  out->header = it->second.header;
  out->length = it->second.header.total_length;
  out->data = std::move(it->second.data);
  open_bytes_ -= out->length;
  open_.erase(it);
  return ROCL_OK;
}

std::size_t ReassemblyTable::drop_peer(std::uint64_t origin) {
  auto it = open_.lower_bound(Key{origin, 0});
  std::size_t dropped = 0;
  while (it != open_.end() && it->first.first == origin) {
    open_bytes_ -= it->second.header.total_length;
    it = open_.erase(it);
    ++dropped;
  }
  return dropped;
}

const Reassembly *ReassemblyTable::find(std::uint64_t origin, std::uint64_t message_id) const {
  auto it = open_.find(Key{origin, message_id});
  return it == open_.end() ? nullptr : &it->second.reassembly;
}

}  // namespace rocl::wire
