// credits.hpp - the credit window of flow control: how many more messages
// a local thread may send to a receiving thread (SendCredits), and how many
// a local receiver owes back to each sender (CreditDebts).
#pragma once

#include <cstdint>
#include <map>
#include <tuple>

namespace ncs {

// One direction between two threads of the job.
struct Route {
  int from_thread;
  int from_process;
  int to_thread;
  int to_process;
  auto operator<=>(const Route &) const = default;
};

class SendCredits {
 public:
  // window 0: no flow control, every take succeeds.
  explicit SendCredits(int window) : window_(window) {}
  int window() const { return window_; }
  // Takes one credit for r; false when r has none left.
  bool take(const Route &r);
  // n credits come back to r (any n: r ends with its window at most).
  void give_back(const Route &r, std::uint32_t n);
  // Credits r has now (the window for a route never used).
  int left(const Route &r) const;

 private:
  int window_;
  std::map<Route, int> left_;
};

class CreditDebts {
 public:
  // Records that the receiver of r took one credited message from a sender
  // whose window is `window`; returns how many credits to send back now
  // (0 until half the window is owed, so that credits travel in batches).
  std::uint32_t took(const Route &r, int window);

 private:
  std::map<Route, std::uint32_t> owed_;
};

}  // namespace ncs
