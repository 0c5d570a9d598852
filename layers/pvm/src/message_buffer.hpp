// message_buffer.hpp - one PVM message's bytes, packed here or received,
// and the items and strings pvm_pk* writes into them and pvm_upk* reads out
// of them (docs/pvm.md, "Data encodings"). Needs no task: what a received
// message holds is read here, bounded by its length, whatever its bytes.
#pragma once

#include <pvm3.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace rpvm {

// A PVM message: packed by the sender (bytes owned here, or, for
// PvmDataInPlace, pieces still in the caller's memory), or received (a rocl
// buffer owned here, read from a cursor).
class MessageBuffer {
 public:
  explicit MessageBuffer(int encoding) : encoding_(encoding) {}
  // Takes ownership of a received rocl buffer.
  MessageBuffer(void *rocl_buffer, std::size_t len, int encoding);
  // What pvm_probe found: a length to describe, no bytes to unpack.
  static std::unique_ptr<MessageBuffer> described(std::size_t len, int encoding);
  ~MessageBuffer();
  MessageBuffer(const MessageBuffer &) = delete;
  MessageBuffer &operator=(const MessageBuffer &) = delete;

  int encoding() const noexcept { return encoding_; }
  std::size_t size() const noexcept { return size_; }

  // Appends len bytes (copied, or referenced when in_place and the
  // encoding is PvmDataInPlace).
  void append(const void *bytes, std::size_t len, bool in_place = false);
  // Copies the next len bytes out; PvmNoData if fewer are left.
  int take(void *into, std::size_t len);
  std::size_t left() const noexcept { return size_ - cursor_; }
  // Writes the whole message to dst (size() bytes).
  void flatten(std::byte *dst) const;
  // The message's bytes in one piece if it is one already, else nullptr.
  const std::byte *contiguous() const noexcept;
  // Whether the bytes sit in a rocl buffer (received), which a send must
  // not borrow.
  bool in_rocl_buffer() const noexcept { return received_ != nullptr; }

  // count items of size bytes each, stride items apart in `items` (count
  // >= 0, stride >= 1: the caller checks), appended in the machine's own
  // representation; stride 1 is one piece (borrowed under PvmDataInPlace).
  void put_items(const void *items, int count, int stride, std::size_t size);
  // Copies count items out into `items`, stride items apart: PvmOk, or
  // PvmNoData, nothing read, if fewer than count * size bytes are left.
  int take_items(void *items, int count, int stride, std::size_t size);
  // Appends a string as PVM packs it: its length with the NUL (an int),
  // then its bytes and the NUL. PvmNotImpl under PvmDataInPlace (as PVM
  // 3.4).
  int put_string(const char *s);
  // Copies the next string out into s (the caller's room for it is the
  // length packed): PvmOk; or PvmNoData, nothing read and s untouched,
  // unless a length of 1 or more is left, then as many bytes ending at
  // their first NUL.
  int take_string(char *s);

  // Where a received (or probed) message came from.
  struct Origin {
    int tid = 0;
    int tag = 0;
    int context = 0;
  } origin;

 private:
  // Copies len bytes from offset `from` of the message (from + len <=
  // size()) into `into`.
  void copy_out(std::size_t from, std::byte *into, std::size_t len);

  struct Piece {
    const std::byte *borrowed;  // null: owned_[offset, offset + len)
    std::size_t offset;
    std::size_t len;
  };
  int encoding_;
  std::vector<std::byte> owned_;
  std::vector<Piece> pieces_;
  void *received_ = nullptr;  // rocl buffer
  std::size_t size_ = 0, cursor_ = 0;
  // Where copy_out last was: pieces_[piece] starts at byte `start`. Pieces
  // only grow at the end, so a position once found stays true.
  struct Seek {
    std::size_t piece = 0;
    std::size_t start = 0;
  } seek_;
};

}  // namespace rpvm
