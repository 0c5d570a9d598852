// mailbox.hpp - the messages that arrived for the threads of this process
// and that no receive has taken yet, and how a receive picks one.
#pragma once

#include <deque>
#include <unordered_map>

#include "wire.hpp"

namespace ncs {

inline constexpr int kAny = -1;

// A message NCS holds: a rocl buffer that starts with its header.
struct Message {
  Header header;
  void *block = nullptr;  // rocl buffer: the header, then the payload
  bool corrupt = false;   // its checksum did not match

  void *payload() const { return static_cast<char *>(block) + sizeof(Header); }
  static void *block_of(void *payload) { return static_cast<char *>(payload) - sizeof(Header); }
};

// What a receive waits for: a channel and a source, kAny for either id.
struct Pattern {
  Channel channel = Channel::kPointToPoint;
  int from_thread = kAny;
  int from_process = kAny;

  bool matches(const Header &h) const {
    return h.channel == channel && (from_thread == kAny || from_thread == h.from_thread) &&
           (from_process == kAny || from_process == h.from_process);
  }
};

// The unreceived messages of each thread of this process, oldest first.
// Threads not yet created have their mailboxes too.
class Mailboxes {
 public:
  Mailboxes() = default;
  Mailboxes(const Mailboxes &) = delete;
  Mailboxes &operator=(const Mailboxes &) = delete;
  ~Mailboxes();

  void put(Message m);
  // The oldest message for thread `to` matching p, or nullptr; valid until
  // the next put or take.
  Message *oldest(int to, const Pattern &p);
  // Removes *m (from oldest(to, ...)) and returns it.
  Message take(int to, Message *m);
  int count(int to, const Pattern &p) const;
  // Returns every held buffer to rocl.
  void clear();

 private:
  std::unordered_map<int, std::deque<Message>> boxes_;
};

}  // namespace ncs
