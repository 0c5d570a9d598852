// tcp_conn.cpp - the few operations of a connection's own pieces: its
// parking slots and its receive stage (tcp_conn.hpp).
#include "transport/tcp/tcp_conn.hpp"

#include <cstring>
#include <new>

namespace rocl::impl::tcp::detail {

ParkedSend *Parking::next_slot() {
  if (!slots) {
    slots.reset(new (std::nothrow) ParkedSend[kMaxParkedMessages]);
    if (!slots) return nullptr;
  }
  static_assert(kMaxParkedMessages <= 64, "free_slots is a 64-bit mask");
  return &slots[__builtin_ctzll(free_slots)];  // has_room: count < 64, so a bit is set
}

void Parking::occupy(ParkedSend &p) {
  free_slots &= ~(std::uint64_t{1} << (&p - slots.get()));
  ++count;
  bytes += p.length;
}

void Parking::release(ParkedSend &p) {
  const auto i = static_cast<unsigned>(&p - slots.get());
  free_slots |= std::uint64_t{1} << i;
  --count;
  bytes -= p.length;
  p.block = nullptr;
}

void Parking::clear() {
  free_slots = ~std::uint64_t{0};
  count = 0;
  bytes = 0;
}

void Stage::compact() {
  if (pos == 0) return;
  const std::size_t have = size();
  std::memmove(bytes.get(), bytes.get() + pos, have);
  pos = 0;
  end = have;
}

bool Stage::make() {
  bytes.reset(new (std::nothrow) std::byte[kStageBytes]);
  if (bytes == nullptr) return false;
  cap = kStageBytes;
  return true;
}

}  // namespace rocl::impl::tcp::detail
