// mailbox.cpp - per-thread queues of unreceived messages.
#include "mailbox.hpp"

#include <algorithm>

#include "rocl/rocl.h"

namespace ncs {

Mailboxes::~Mailboxes() {
  clear();
}

void Mailboxes::put(Message m) {
  boxes_[m.header.to_thread].push_back(m);
}

Message *Mailboxes::oldest(int to, const Pattern &p) {
  const auto box = boxes_.find(to);
  if (box == boxes_.end()) return nullptr;
  for (Message &m : box->second) {
    if (p.matches(m.header)) return &m;
  }
  return nullptr;
}

Message Mailboxes::take(int to, Message *m) {
  auto &box = boxes_[to];
  // A deque's elements are not contiguous: find m by its address.
  const auto it = std::find_if(box.begin(), box.end(), [m](const Message &x) { return &x == m; });
  Message taken = *it;
  box.erase(it);
  return taken;
}

int Mailboxes::count(int to, const Pattern &p) const {
  const auto box = boxes_.find(to);
  if (box == boxes_.end()) return 0;
  return static_cast<int>(std::count_if(box->second.begin(), box->second.end(),
                                        [&](const Message &m) { return p.matches(m.header); }));
}

void Mailboxes::clear() {
  for (auto &[thread, box] : boxes_) {
    for (Message &m : box) rocl_bfret(m.block);
  }
  boxes_.clear();
}

}  // namespace ncs
