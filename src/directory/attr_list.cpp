// attr_list.cpp - the attribute list encoding (see attr_list.hpp).
#include "directory/attr_list.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <unordered_set>
#include <utility>

#include "status/status.hpp"

namespace rocl::impl {
namespace {

constexpr std::size_t pad8(std::size_t n) {
  return (n + 7) & ~std::size_t{7};
}

std::uint32_t load32(const std::byte *p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) {
    v = __builtin_bswap32(v);
  }
  return v;
}

std::uint16_t load16(const std::byte *p) {
  std::uint16_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) {
    v = __builtin_bswap16(v);
  }
  return v;
}

void store32(std::byte *p, std::uint32_t v) {
  if constexpr (std::endian::native == std::endian::big) {
    v = __builtin_bswap32(v);
  }
  std::memcpy(p, &v, sizeof v);
}

// Entry field offsets.
constexpr std::size_t kNameLenAt = 0;
constexpr std::size_t kFlagsAt = 1;
constexpr std::size_t kZero16At = 2;
constexpr std::size_t kValueLenAt = 4;
constexpr std::size_t kSpaceAt = 8;
constexpr std::size_t kZero32At = 12;

std::size_t entry_bytes(std::size_t name_len, std::size_t space) {
  return AttrList::kEntryHeaderBytes + pad8(name_len) + pad8(space);
}

// Reads the (already validated) entry at off; sets *next to the next entry.
AttrList::Attr parse_entry(const std::byte *base, std::size_t off, std::size_t *next) {
  const std::byte *e = base + off;
  AttrList::Attr a;
  const auto name_len = static_cast<std::size_t>(e[kNameLenAt]);
  const auto flags = static_cast<std::uint8_t>(e[kFlagsAt]);
  a.space = load32(e + kSpaceAt);
  a.slot = (flags & AttrList::kFlagSlot) != 0;
  a.name =
      std::string_view(reinterpret_cast<const char *>(e + AttrList::kEntryHeaderBytes), name_len);
  if ((flags & AttrList::kFlagValue) != 0) {
    a.value = e + AttrList::kEntryHeaderBytes + pad8(name_len);
    a.len = load32(e + kValueLenAt);
  }
  *next = off + entry_bytes(name_len, a.space);
  return a;
}

// Quotes at most 64 characters of a name for messages.
std::string quoted(std::string_view name) {
  std::string s(name.substr(0, 64));
  for (char &c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      c = '?';
    }
  }
  if (name.size() > 64) {
    s += "...";
  }
  return s;
}

}  // namespace

// ---- iteration ---------------------------------------------------------------

AttrList::Iterator::Iterator(const AttrList *list, std::size_t off) : list_(list), off_(off) {
  if (off_ < list_->used_) {
    cur_ = parse_entry(list_->data(), off_, &next_);
  }
}

AttrList::Iterator &AttrList::Iterator::operator++() {
  off_ = next_;
  cur_ = Attr{};
  if (off_ < list_->used_) {
    cur_ = parse_entry(list_->data(), off_, &next_);
  }
  return *this;
}

// ---- construction --------------------------------------------------------------

AttrList::AttrList(int maxlen) {
  if (maxlen <= 0) {
    capacity_ = kDefaultMaxlen;
  } else {
    capacity_ = std::min(static_cast<std::size_t>(maxlen), kMaxMaxlen);
  }
  // Room for the header and a few small attributes; grows on demand.
  block_.resize(std::min<std::size_t>(128, kHeaderBytes + pad8(capacity_) * 2) / 8);
  write_header();
}

AttrList::AttrList(const AttrList &other)
    : used_(other.used_),
      count_(other.count_),
      charged_(other.charged_),
      capacity_(other.capacity_) {
  if (other.block_.empty()) {  // other was moved from
    block_.assign(kHeaderBytes / 8, 0);
    write_header();
  } else {
    block_.assign(other.block_.begin(),
                  other.block_.begin() + static_cast<std::ptrdiff_t>(used_ / 8));
  }
}

AttrList &AttrList::operator=(const AttrList &other) {
  if (this != &other) {
    AttrList copy(other);
    *this = std::move(copy);
  }
  return *this;
}

AttrList::AttrList(AttrList &&other) noexcept
    : block_(std::move(other.block_)),
      used_(other.used_),
      count_(other.count_),
      charged_(other.charged_),
      capacity_(other.capacity_) {
  // other is left empty without a block (no allocation here); add() gives it
  // one again, bytes() is empty until then.
  other.block_.clear();
  other.used_ = kHeaderBytes;
  other.count_ = 0;
  other.charged_ = 0;
}

AttrList &AttrList::operator=(AttrList &&other) noexcept {
  if (this != &other) {
    block_.swap(other.block_);
    std::swap(used_, other.used_);
    std::swap(count_, other.count_);
    std::swap(charged_, other.charged_);
    std::swap(capacity_, other.capacity_);
  }
  return *this;
}

void AttrList::reserve_bytes(std::size_t total) {
  const std::size_t have = block_.size() * 8;
  if (total <= have) {
    return;
  }
  const std::size_t want = std::max(pad8(total), have * 2);
  block_.resize(want / 8, 0);  // new bytes are zero: padding needs no writes
}

void AttrList::write_header() {
  std::byte *h = data();
  store32(h + 0, kMagic);
  store32(h + 4, static_cast<std::uint32_t>(count_));
  store32(h + 8, static_cast<std::uint32_t>(used_));
  store32(h + 12, static_cast<std::uint32_t>(capacity_));
}

// ---- editing -------------------------------------------------------------------

int AttrList::add(std::string_view name, const void *value, std::size_t len) {
  if (name.empty()) {
    return fail(ROCL_EINVAL, "rocl_add_attr: the attribute name is empty");
  }
  if (name.size() > kMaxNameLen) {
    return fail(ROCL_EINVAL,
                "rocl_add_attr: attribute name '%s' is %zu bytes long, the limit is %zu",
                quoted(name).c_str(), name.size(), kMaxNameLen);
  }
  if (name.find('\0') != std::string_view::npos) {
    return fail(ROCL_EINVAL, "rocl_add_attr: attribute name '%s' contains a NUL byte",
                quoted(name).c_str());
  }
  if (find_offset(name) != 0) {
    return fail(ROCL_EINVAL, "rocl_add_attr: attribute name '%s' is already in the list",
                quoted(name).c_str());
  }
  const std::size_t fixed = kChargePerAttr + name.size();
  const std::size_t left = capacity_ - charged_;
  if (len > capacity_ || fixed + len > left) {
    return fail(ROCL_ENOSPC,
                "rocl_add_attr: attribute '%s' needs 8 + %zu (name) + %zu (%s) bytes but the "
                "list has only %zu of its %zu bytes left",
                quoted(name).c_str(), name.size(), len, value ? "value" : "reservation", left,
                capacity_);
  }

  const std::size_t off = used_;
  const std::size_t size = entry_bytes(name.size(), len);
  reserve_bytes(off + size);
  std::byte *e = data() + off;
  std::memset(e, 0, size);
  e[kNameLenAt] = static_cast<std::byte>(name.size());
  e[kFlagsAt] = static_cast<std::byte>(value ? kFlagValue : kFlagSlot);
  store32(e + kValueLenAt, static_cast<std::uint32_t>(value ? len : 0));
  store32(e + kSpaceAt, static_cast<std::uint32_t>(len));
  std::memcpy(e + kEntryHeaderBytes, name.data(), name.size());
  if (value && len > 0) {
    std::memcpy(e + kEntryHeaderBytes + pad8(name.size()), value, len);
  }
  used_ += size;
  count_ += 1;
  charged_ += fixed + len;
  write_header();
  return ROCL_OK;
}

std::size_t AttrList::find_offset(std::string_view name) const {
  const std::byte *base = data();
  std::size_t off = kHeaderBytes;
  while (off < used_) {
    std::size_t next = 0;
    Attr a = parse_entry(base, off, &next);
    if (a.name == name) {
      return off;
    }
    off = next;
  }
  return 0;
}

std::optional<AttrList::Attr> AttrList::find(std::string_view name) const {
  const std::size_t off = find_offset(name);
  if (off == 0) {
    return std::nullopt;
  }
  std::size_t next = 0;
  return parse_entry(data(), off, &next);
}

const std::byte *AttrList::get(std::string_view name, std::size_t *len) const {
  std::optional<Attr> a = find(name);
  if (!a || !a->specified()) {
    return nullptr;
  }
  if (len) {
    *len = a->len;
  }
  return a->value;
}

std::byte *AttrList::get(std::string_view name, std::size_t *len) {
  // The value lives in this (non-const) list's block.
  return const_cast<std::byte *>(std::as_const(*this).get(name, len));
}

int AttrList::fill(std::string_view name, std::span<const std::byte> value) {
  const std::size_t off = find_offset(name);
  if (off == 0) {
    return fail(ROCL_EINVAL, "fill: attribute '%s' is not in the list", quoted(name).c_str());
  }
  std::size_t next = 0;
  const Attr a = parse_entry(data(), off, &next);
  if (!a.slot) {
    return fail(ROCL_EINVAL,
                "fill: attribute '%s' was added with a value; only unspecified attributes take "
                "answers",
                quoted(name).c_str());
  }
  if (value.size() > a.space) {
    return fail(ROCL_ENOSPC,
                "the answer for attribute '%s' is %zu bytes but only %zu are reserved for it",
                quoted(name).c_str(), value.size(), a.space);
  }
  std::byte *e = data() + off;
  std::byte *v = e + kEntryHeaderBytes + pad8(a.name.size());
  if (!value.empty()) {
    std::memcpy(v, value.data(), value.size());
  }
  std::memset(v + value.size(), 0, a.space - value.size());  // no stale answer bytes
  store32(e + kValueLenAt, static_cast<std::uint32_t>(value.size()));
  e[kFlagsAt] = static_cast<std::byte>(kFlagSlot | kFlagValue);
  return ROCL_OK;
}

int AttrList::fill_from(const AttrList &source) {
  // Check every answer first so that a failure changes nothing.
  for (const Attr &slot : *this) {
    if (!slot.slot) {
      continue;
    }
    std::optional<Attr> answer = source.find(slot.name);
    if (answer && answer->specified() && answer->len > slot.space) {
      return fail(ROCL_ENOSPC,
                  "the answer for attribute '%s' is %zu bytes but only %zu are reserved for it",
                  quoted(slot.name).c_str(), answer->len, slot.space);
    }
  }
  std::byte *base = data();
  std::size_t off = kHeaderBytes;
  while (off < used_) {
    std::size_t next = 0;
    const Attr slot = parse_entry(base, off, &next);
    if (slot.slot) {
      std::optional<Attr> answer = source.find(slot.name);
      std::byte *e = base + off;
      std::byte *v = e + kEntryHeaderBytes + pad8(slot.name.size());
      if (answer && answer->specified()) {
        if (answer->len > 0) {
          std::memmove(v, answer->value, answer->len);
        }
        std::memset(v + answer->len, 0, slot.space - answer->len);
        store32(e + kValueLenAt, static_cast<std::uint32_t>(answer->len));
        e[kFlagsAt] = static_cast<std::byte>(kFlagSlot | kFlagValue);
      } else {
        std::memset(v, 0, slot.space);
        store32(e + kValueLenAt, 0);
        e[kFlagsAt] = static_cast<std::byte>(kFlagSlot);
      }
    }
    off = next;
  }
  return ROCL_OK;
}

void AttrList::clear_answers() {
  std::byte *base = data();
  std::size_t off = kHeaderBytes;
  while (off < used_) {
    std::size_t next = 0;
    const Attr a = parse_entry(base, off, &next);
    if (a.slot) {
      std::byte *e = base + off;
      std::memset(e + kEntryHeaderBytes + pad8(a.name.size()), 0, a.space);
      store32(e + kValueLenAt, 0);
      e[kFlagsAt] = static_cast<std::byte>(kFlagSlot);
    }
    off = next;
  }
}

// ---- decoding ------------------------------------------------------------------

int AttrList::decode(std::span<const std::byte> bytes, AttrList &out) {
  const std::size_t size = bytes.size();
  if (size < kHeaderBytes) {
    return fail(ROCL_EINVAL, "attribute list: truncated header (%zu bytes, need %zu)", size,
                kHeaderBytes);
  }
  const std::byte *p = bytes.data();
  const std::uint32_t magic = load32(p + 0);
  const std::size_t count = load32(p + 4);
  const std::size_t used = load32(p + 8);
  const std::size_t capacity = load32(p + 12);
  if (magic != kMagic) {
    return fail(ROCL_EINVAL, "attribute list: bad magic 0x%08x (expected 0x%08x)", magic, kMagic);
  }
  if (used != size) {
    return fail(ROCL_EINVAL, "attribute list: 'used' field says %zu bytes but %zu were given (%s)",
                used, size, used > size ? "truncated" : "overlong");
  }
  if (used % 8 != 0) {
    return fail(ROCL_EINVAL, "attribute list: 'used' field %zu is not a multiple of 8", used);
  }
  if (capacity == 0 || capacity > kMaxMaxlen) {
    return fail(ROCL_EINVAL, "attribute list: 'capacity' field %zu is outside 1..%zu", capacity,
                kMaxMaxlen);
  }

  std::unordered_set<std::string_view> names;
  std::size_t off = kHeaderBytes;
  std::size_t n = 0;
  std::size_t charged = 0;
  while (off < size) {
    if (n == count) {
      return fail(ROCL_EINVAL,
                  "attribute list: bytes left at offset %zu after the %zu attributes of 'count'",
                  off, count);
    }
    if (size - off < kEntryHeaderBytes) {
      return fail(ROCL_EINVAL,
                  "attribute list: attribute %zu: truncated entry header at offset %zu", n, off);
    }
    const std::byte *e = p + off;
    const auto name_len = static_cast<std::size_t>(e[kNameLenAt]);
    const auto flags = static_cast<unsigned>(e[kFlagsAt]);
    const std::size_t value_len = load32(e + kValueLenAt);
    const std::size_t space = load32(e + kSpaceAt);
    if (name_len == 0) {
      return fail(ROCL_EINVAL, "attribute list: attribute %zu: name length is 0", n);
    }
    if ((flags & ~unsigned{kFlagValue | kFlagSlot}) != 0) {
      return fail(ROCL_EINVAL, "attribute list: attribute %zu: unknown flag bits 0x%02x", n, flags);
    }
    if (load16(e + kZero16At) != 0 || load32(e + kZero32At) != 0) {
      return fail(ROCL_EINVAL, "attribute list: attribute %zu: reserved header fields are not 0",
                  n);
    }
    const bool slot = (flags & kFlagSlot) != 0;
    const bool has_value = (flags & kFlagValue) != 0;
    if (!slot && !has_value) {
      return fail(ROCL_EINVAL, "attribute list: attribute %zu: neither a value nor a slot", n);
    }
    if (!slot && value_len != space) {
      return fail(ROCL_EINVAL, "attribute list: attribute %zu: value length %zu != space %zu", n,
                  value_len, space);
    }
    if (slot && !has_value && value_len != 0) {
      return fail(ROCL_EINVAL, "attribute list: attribute %zu: unfilled slot with value length %zu",
                  n, value_len);
    }
    if (value_len > space) {
      return fail(ROCL_EINVAL,
                  "attribute list: attribute %zu: value length %zu exceeds its space %zu", n,
                  value_len, space);
    }
    const std::size_t body = pad8(name_len) + pad8(space);  // no overflow: both < 2^33
    if (size - off - kEntryHeaderBytes < body) {
      return fail(ROCL_EINVAL,
                  "attribute list: attribute %zu: entry of %zu bytes at offset %zu runs past the "
                  "end (%zu bytes)",
                  n, kEntryHeaderBytes + body, off, size);
    }
    const std::byte *name_at = e + kEntryHeaderBytes;
    const std::string_view name(reinterpret_cast<const char *>(name_at), name_len);
    if (name.find('\0') != std::string_view::npos) {
      return fail(ROCL_EINVAL, "attribute list: attribute %zu: name contains a NUL byte", n);
    }
    for (std::size_t i = name_len; i < pad8(name_len); ++i) {
      if (name_at[i] != std::byte{0}) {
        return fail(ROCL_EINVAL, "attribute list: attribute '%s': name padding is not zero",
                    quoted(name).c_str());
      }
    }
    const std::byte *value_at = name_at + pad8(name_len);
    for (std::size_t i = space; i < pad8(space); ++i) {
      if (value_at[i] != std::byte{0}) {
        return fail(ROCL_EINVAL, "attribute list: attribute '%s': value padding is not zero",
                    quoted(name).c_str());
      }
    }
    if (!names.insert(name).second) {
      return fail(ROCL_EINVAL, "attribute list: attribute name '%s' appears twice",
                  quoted(name).c_str());
    }
    charged += kChargePerAttr + name_len + space;
    if (charged > capacity) {
      return fail(ROCL_EINVAL,
                  "attribute list: attribute '%s' brings the charge to %zu bytes, over the "
                  "'capacity' field %zu",
                  quoted(name).c_str(), charged, capacity);
    }
    off += kEntryHeaderBytes + body;
    n += 1;
  }
  if (n != count) {
    return fail(ROCL_EINVAL,
                "attribute list: 'count' field says %zu attributes but %zu are present", count, n);
  }

  AttrList list{Uninit{}};
  list.block_.resize(size / 8);
  std::memcpy(list.data(), p, size);
  list.used_ = size;
  list.count_ = n;
  list.charged_ = charged;
  list.capacity_ = capacity;
  out = std::move(list);
  return ROCL_OK;
}

}  // namespace rocl::impl
