// attr_list.hpp - attribute lists (rocl.h table 2): ordered (name, value)
// pairs kept in ONE contiguous byte block, which is also the directory's
// request/reply packet (RoCL paper, section 3.1): a query sends the list, the
// server fills the reserved answer space in place and sends it back.
//
// ---- Encoding (all integers little-endian; offsets from the block start) ----
//
//   header, 16 bytes:
//     u32 magic     kMagic = bytes "RAL1"
//     u32 count     number of attributes
//     u32 used      bytes of the whole encoding, header included (a multiple of 8)
//     u32 capacity  maxlen: the budget of the list (see "charge" below), 1..kMaxMaxlen
//   then `count` entries, each starting at an 8-aligned offset:
//     u8  name_len  1..255
//     u8  flags     kFlagValue (0x1): a value is present
//                   kFlagSlot  (0x2): an answer slot (added unspecified: the
//                                     value area is space reserved for answers)
//                   no other bits; a non-slot entry always has kFlagValue
//     u16 zero
//     u32 value_len bytes of the value (0 for an unfilled slot; <= space)
//     u32 space     bytes of the value area: value_len for a plain attribute,
//                   the reservation for a slot
//     u32 zero
//     name bytes (no NUL byte), zero padding to a multiple of 8
//     value area (`space` bytes, the value first), zero padding to a multiple of 8
//
// So every value starts 8-aligned (a gid value can be read in place). Names
// are unique within a list.
//
// Charge: rocl.h sizes a list by "names, values and 8 bytes per attribute":
// an attribute charges 8 + name_len + space bytes against capacity. The
// second half of each 16-byte entry header and the alignment padding are not
// charged, so a list may hold exactly what rocl.h promises.
//
// Answer slots: an attribute added without a value is a slot. A query fills
// the slots (fill_from): each slot whose name the answering resource has gets
// that value, every other slot becomes unspecified again, so the same list
// can be reused for the next answer. A filled slot reads like a specified
// attribute (get returns it) but is never part of a query pattern: the
// pattern is the attributes added with a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "rocl/rocl.h"

namespace rocl::impl {

class AttrList {
 public:
  static constexpr std::uint32_t kMagic = 0x314c4152;  // "RAL1" in memory order
  static constexpr std::size_t kHeaderBytes = 16;
  static constexpr std::size_t kEntryHeaderBytes = 16;
  static constexpr std::size_t kChargePerAttr = 8;  // rocl.h's "8 bytes per attribute"
  static constexpr std::size_t kMaxNameLen = 255;
  static constexpr int kDefaultMaxlen = 4096;
  // Largest capacity: keeps every encoding (padding included) below 4 GiB.
  static constexpr std::size_t kMaxMaxlen = std::size_t{1} << 30;
  static constexpr std::uint8_t kFlagValue = 0x1;
  static constexpr std::uint8_t kFlagSlot = 0x2;

  // One attribute, viewed inside the list (valid until the list changes).
  struct Attr {
    std::string_view name;
    const std::byte *value = nullptr;  // nullptr when unspecified
    std::size_t len = 0;               // value length (0 when unspecified)
    std::size_t space = 0;             // value area: len, or the reservation of a slot
    bool slot = false;                 // added without a value (an answer slot)
    bool specified() const { return value != nullptr; }
    std::span<const std::byte> bytes() const { return {value, len}; }
  };

  // Forward iterator over the attributes in the order added.
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Attr;
    using difference_type = std::ptrdiff_t;
    using pointer = const Attr *;
    using reference = const Attr &;

    Iterator() = default;
    reference operator*() const { return cur_; }
    pointer operator->() const { return &cur_; }
    Iterator &operator++();
    Iterator operator++(int) {
      Iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const Iterator &o) const { return off_ == o.off_; }

   private:
    friend class AttrList;
    Iterator(const AttrList *list, std::size_t off);
    const AttrList *list_ = nullptr;
    std::size_t off_ = 0;
    std::size_t next_ = 0;
    Attr cur_;
  };

  // Empty list with capacity maxlen (<= 0 picks kDefaultMaxlen; larger than
  // kMaxMaxlen is clamped to it).
  explicit AttrList(int maxlen = kDefaultMaxlen);
  AttrList(const AttrList &other);
  AttrList &operator=(const AttrList &other);
  AttrList(AttrList &&other) noexcept;
  AttrList &operator=(AttrList &&other) noexcept;
  ~AttrList() = default;

  // Appends an attribute. value != nullptr: len bytes copied. value ==
  // nullptr: an answer slot reserving len bytes. ROCL_OK, ROCL_EINVAL (empty,
  // too long or NUL-containing name, duplicate) or ROCL_ENOSPC (charge would
  // exceed capacity); the list is unchanged on failure. May throw bad_alloc.
  int add(std::string_view name, const void *value, std::size_t len);
  int add(std::string_view name, std::span<const std::byte> value) {
    return add(name, value.empty() ? static_cast<const void *>("") : value.data(), value.size());
  }
  int add(std::string_view name, std::string_view value) {
    return add(name, value.data() ? value.data() : "", value.size());
  }
  int add_unspecified(std::string_view name, std::size_t reserve) {
    return add(name, nullptr, reserve);
  }

  // The attribute named name, if present (specified or not).
  std::optional<Attr> find(std::string_view name) const;
  // Value of a specified attribute (its length in *len if len != nullptr);
  // nullptr if absent or unspecified. Never fails loudly.
  const std::byte *get(std::string_view name, std::size_t *len = nullptr) const;
  std::byte *get(std::string_view name, std::size_t *len = nullptr);

  // Puts value into the slot named name. ROCL_OK; ROCL_EINVAL if there is no
  // such attribute or it was added with a value (not a slot); ROCL_ENOSPC if
  // value is longer than the slot's reservation (the list is unchanged).
  int fill(std::string_view name, std::span<const std::byte> value);
  // Answers every slot from source (a resource's list): a slot whose name
  // source has (with a value) gets that value, the other slots become
  // unspecified. ROCL_ENOSPC if any answer is longer than its reservation:
  // then nothing is written (all are checked before the first write).
  int fill_from(const AttrList &source);
  // Makes every slot unspecified again.
  void clear_answers();

  std::size_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  std::size_t capacity() const { return capacity_; }  // maxlen
  std::size_t charged() const { return charged_; }    // sum of 8 + name + space
  Iterator begin() const { return Iterator(this, kHeaderBytes); }
  Iterator end() const { return Iterator(this, used_); }

  // The encoding (header + entries), used() bytes; valid until the list changes.
  // (Empty only for a moved-from list.)
  std::span<const std::byte> bytes() const {
    return block_.empty() ? std::span<const std::byte>() : std::span{data(), used_};
  }

  // Parses an encoding received from anywhere (the network): every field is
  // checked and nothing outside `bytes` is read. On success out becomes the
  // list and ROCL_OK is returned; otherwise ROCL_EINVAL with a sentence naming
  // the bad field in last_error(), and out is unchanged. May throw bad_alloc.
  static int decode(std::span<const std::byte> bytes, AttrList &out);

 private:
  struct Uninit {};
  explicit AttrList(Uninit) {}

  const std::byte *data() const { return reinterpret_cast<const std::byte *>(block_.data()); }
  std::byte *data() { return reinterpret_cast<std::byte *>(block_.data()); }
  void reserve_bytes(std::size_t total);
  void write_header();
  // Offset of the entry named name, or 0 if none.
  std::size_t find_offset(std::string_view name) const;

  std::vector<std::uint64_t> block_;  // the encoding (8-aligned), >= used_ bytes
  std::size_t used_ = kHeaderBytes;
  std::size_t count_ = 0;
  std::size_t charged_ = 0;
  std::size_t capacity_ = kDefaultMaxlen;
};

}  // namespace rocl::impl

// The C type of rocl.h is the C++ list.
struct rocl_attrl : rocl::impl::AttrList {
  using rocl::impl::AttrList::AttrList;
};
