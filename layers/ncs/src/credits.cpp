// credits.cpp - credit window bookkeeping. A sender has at most `window`
// messages on a route that its receiver has not taken: the receiver returns
// credits once it has taken half a window, so a receiver never holds more
// than a window, and a sender out of credits always has messages waiting at
// its receiver (no stall from batching).
#include "credits.hpp"

#include <algorithm>

namespace ncs {

bool SendCredits::take(const Route &r) {
  if (window_ == 0) return true;
  auto [it, fresh] = left_.try_emplace(r, window_);
  if (it->second == 0) return false;
  --it->second;
  return true;
}

void SendCredits::give_back(const Route &r, std::uint32_t n) {
  auto [it, fresh] = left_.try_emplace(r, window_);
  // n comes from another process: any u32. Up to the window, never past
  // it, computed where nothing overflows (a sum as int could wrap negative,
  // and a route with credits below 0 would never run out).
  const auto missing = static_cast<std::uint32_t>(window_ - it->second);
  it->second = n >= missing ? window_ : it->second + static_cast<int>(n);
}

int SendCredits::left(const Route &r) const {
  const auto it = left_.find(r);
  return it == left_.end() ? window_ : it->second;
}

std::uint32_t CreditDebts::took(const Route &r, int window) {
  const auto batch = static_cast<std::uint32_t>(std::max(1, window / 2));
  std::uint32_t &owed = owed_[r];
  if (++owed < batch) return 0;
  const std::uint32_t n = owed;
  owed = 0;
  return n;
}

}  // namespace ncs
