// send.cpp - the way out: a message is built in a rocl buffer (header, then
// payload), checksummed if asked, and handed to rocl, or straight to the
// mailbox of a thread of this process; and the credits of flow control.
#include <cstring>
#include <optional>

#include "ncs.h"
#include "rocl/rocl.h"
#include "runtime.hpp"
#include "testing_hooks.h"

namespace ncs {
namespace {

std::optional<std::size_t> g_corrupt_offset;  // testing: flip this payload byte once

void corrupt_if_asked(void *payload, std::size_t size) {
  if (!g_corrupt_offset || size == 0) return;
  static_cast<unsigned char *>(payload)[*g_corrupt_offset % size] ^= 0x5a;
  g_corrupt_offset.reset();
}

}  // namespace

int Runtime::send(Channel channel, int to_thread, int to_process, const void *data,
                  std::size_t size) {
  Header h;
  h.channel = channel;
  h.from_thread = scheduler_.current()->id;
  h.from_process = job_.process();
  h.to_thread = to_thread;
  h.payload_size = size;
  const Route route{h.from_thread, h.from_process, to_thread, to_process};
  const bool credited = channel == Channel::kPointToPoint && credits_.window() > 0;
  if (credited) {
    if (const int rc = wait_for_credit(route); rc != NCS_OK) return rc;
    h.flags |= kCredited;
    h.window = static_cast<std::uint16_t>(credits_.window());
  }
  const int rc = post(h, to_process, data);
  if (rc != NCS_OK && credited) credits_.give_back(route, 1);
  return rc;
}

int Runtime::post(Header h, int to_process, const void *data) {
  void *block = rocl_bfget(sizeof h + h.payload_size);
  if (block == nullptr) return NCS_ENOMEM;
  void *payload = static_cast<char *>(block) + sizeof h;
  if (h.payload_size > 0) std::memcpy(payload, data, h.payload_size);
  if (settings_.checksum) {
    h.flags |= kChecksummed;
    h.checksum = message_checksum(h, payload);
  }
  std::memcpy(block, &h, sizeof h);
  corrupt_if_asked(payload, h.payload_size);
  if (to_process == job_.process()) {
    deliver(Message{h, block});
    return NCS_OK;
  }
  rocl_bftoret(block);
  const int rc = rocl_send(job_.self(), job_.gid_of(to_process), static_cast<int>(h.channel), block,
                           sizeof h + h.payload_size);
  if (rc == ROCL_OK) return NCS_OK;
  rocl_bfret(block);
  return rc == ROCL_ENOMEM ? NCS_ENOMEM : NCS_ECOMM;
}

int Runtime::wait_for_credit(const Route &r) {
  UserThread *me = scheduler_.current();
  while (!credits_.take(r)) {
    if (me->deadlocked) {
      me->deadlocked = false;
      return NCS_EDEADLOCK;
    }
    scheduler_.block(BlockReason::kCredit);
  }
  return NCS_OK;
}

// The receiver took a credited message: once it owes half a window, the
// credits go back to the sending thread, as a message of their own.
void Runtime::return_credits(const Header &taken) {
  const Route route{taken.from_thread, taken.from_process, taken.to_thread, job_.process()};
  const std::uint32_t n = debts_.took(route, taken.window);
  if (n == 0) return;
  Header h;
  h.channel = Channel::kCredit;
  h.from_thread = taken.to_thread;
  h.from_process = job_.process();
  h.to_thread = taken.from_thread;
  h.credits = n;
  // A sender that has ended no longer needs them: a failure is no error.
  post(h, taken.from_process, nullptr);
}

void Runtime::on_credits(const Header &h) {
  const Route route{h.to_thread, job_.process(), h.from_thread, h.from_process};
  credits_.give_back(route, h.credits);
  UserThread *sender = scheduler_.find(h.to_thread);
  if (sender != nullptr && sender->state == ThreadState::kBlocked &&
      sender->reason == BlockReason::kCredit) {
    scheduler_.make_runnable(sender);
  }
}

}  // namespace ncs

extern "C" void ncs_testing_corrupt_next_send(size_t offset) {
  ncs::g_corrupt_offset = offset;
}
