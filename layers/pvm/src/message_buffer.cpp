// message_buffer.cpp - one PVM message's bytes and the items and strings
// packed into them and unpacked out of them (see message_buffer.hpp).
// Items travel in the machine's own representation (docs/pvm.md, "Data
// encodings"); a string travels as its length with the NUL, then its bytes.
#include "message_buffer.hpp"

#include <rocl/rocl.h>

#include <algorithm>
#include <cstring>

namespace rpvm {

MessageBuffer::MessageBuffer(void *rocl_buffer, std::size_t len, int encoding)
    : encoding_(encoding), received_(rocl_buffer), size_(len) {}

std::unique_ptr<MessageBuffer> MessageBuffer::described(std::size_t len, int encoding) {
  auto b = std::make_unique<MessageBuffer>(encoding);
  b->size_ = b->cursor_ = len;
  return b;
}

MessageBuffer::~MessageBuffer() {
  if (received_ != nullptr) rocl_bfret(received_);
}

void MessageBuffer::append(const void *bytes, std::size_t len, bool in_place) {
  if (len == 0) return;
  const auto *b = static_cast<const std::byte *>(bytes);
  if (in_place && encoding_ == PvmDataInPlace) {
    pieces_.push_back({b, 0, len});
  } else if (!pieces_.empty() && pieces_.back().borrowed == nullptr) {
    pieces_.back().len += len;
    owned_.insert(owned_.end(), b, b + len);
  } else {
    pieces_.push_back({nullptr, owned_.size(), len});
    owned_.insert(owned_.end(), b, b + len);
  }
  size_ += len;
}

const std::byte *MessageBuffer::contiguous() const noexcept {
  if (received_ != nullptr) return static_cast<const std::byte *>(received_);
  if (pieces_.empty()) return owned_.data();
  if (pieces_.size() == 1) {
    return pieces_[0].borrowed != nullptr ? pieces_[0].borrowed : owned_.data();
  }
  return nullptr;
}

void MessageBuffer::flatten(std::byte *dst) const {
  if (const std::byte *one = contiguous()) {
    if (size_ != 0) std::memcpy(dst, one, size_);
    return;
  }
  for (const Piece &p : pieces_) {
    std::memcpy(dst, p.borrowed != nullptr ? p.borrowed : owned_.data() + p.offset, p.len);
    dst += p.len;
  }
}

// Walks the pieces from the one the last copy ended in: items unpacked in
// turn cost their own bytes, not a walk (or a copy) of the whole message.
void MessageBuffer::copy_out(std::size_t from, std::byte *into, std::size_t len) {
  if (const std::byte *one = contiguous()) {
    std::memcpy(into, one + from, len);
    return;
  }
  if (from < seek_.start) seek_ = {};
  while (len > 0) {
    const Piece &p = pieces_[seek_.piece];
    if (from >= seek_.start + p.len) {
      seek_.start += p.len;
      ++seek_.piece;
      continue;
    }
    const std::size_t in = from - seek_.start, n = std::min(len, p.len - in);
    std::memcpy(into, (p.borrowed != nullptr ? p.borrowed : owned_.data() + p.offset) + in, n);
    into += n;
    from += n;
    len -= n;
  }
}

int MessageBuffer::take(void *into, std::size_t len) {
  if (len > left()) return PvmNoData;
  if (len == 0) return PvmOk;
  copy_out(cursor_, static_cast<std::byte *>(into), len);
  cursor_ += len;
  return PvmOk;
}

void MessageBuffer::put_items(const void *items, int count, int stride, std::size_t size) {
  const auto *p = static_cast<const std::byte *>(items);
  if (stride == 1) {
    append(p, size * std::size_t(count), true);
  } else {
    for (int i = 0; i < count; ++i) append(p + std::size_t(i) * stride * size, size);
  }
}

int MessageBuffer::take_items(void *items, int count, int stride, std::size_t size) {
  auto *p = static_cast<std::byte *>(items);
  if (stride == 1) return take(p, size * std::size_t(count));
  if (left() < size * std::size_t(count)) return PvmNoData;
  for (int i = 0; i < count; ++i) take(p + std::size_t(i) * stride * size, size);
  return PvmOk;
}

int MessageBuffer::put_string(const char *s) {
  if (encoding_ == PvmDataInPlace) return PvmNotImpl;  // as PVM 3.4
  const int len = int(std::strlen(s)) + 1;
  append(&len, sizeof len);
  append(s, std::size_t(len));
  return PvmOk;
}

// Checked whole before anything is read: a refused string leaves the
// cursor and s as they were. Its bytes must end at their first NUL, as
// put_string packs them: without one, the caller's string would have no end
// and a strlen() of it would read past its room (what the length said).
int MessageBuffer::take_string(char *s) {
  int len = 0;
  if (left() < sizeof len) return PvmNoData;
  copy_out(cursor_, reinterpret_cast<std::byte *>(&len), sizeof len);
  if (len < 1 || std::size_t(len) > left() - sizeof len) return PvmNoData;
  std::vector<std::byte> scratch;  // the string alone, when it spans pieces
  const std::byte *text = contiguous();
  if (text != nullptr) {
    text += cursor_ + sizeof len;
  } else {
    scratch.resize(std::size_t(len));
    copy_out(cursor_ + sizeof len, scratch.data(), scratch.size());
    text = scratch.data();
  }
  if (std::memchr(text, 0, std::size_t(len)) != text + len - 1) return PvmNoData;
  std::memcpy(s, text, std::size_t(len));
  cursor_ += sizeof len + std::size_t(len);
  return PvmOk;
}

}  // namespace rpvm
