// transport.cpp - what the Transport base does for every transport: its
// log, the hand-over of arrivals and the drop of refused ones, the finish
// of sent blocks, and the defaults of the optional hooks.
#include "transport/transport.hpp"

#include <cinttypes>
#include <cstdio>

#include "status/status.hpp"

namespace rocl::impl {

Transport::Transport(const TransportEnv &env, std::string_view name, TransportLog log)
    : env_(env),
      name_(env.rail == 0 ? std::string(name)
                          : std::string(name) + "." + std::to_string(env.rail + 1)),
      log_(std::move(log)) {
  if (!log_) log_ = [](const std::string &s) { std::fprintf(stderr, "rocl: %s\n", s.c_str()); };
}

void Transport::log(const std::string &line) const noexcept {
  try {
    log_(line);
  } catch (...) {  // a log that fails must not take the transport down
  }
}

Message *Transport::arrived(BlockHeader *b, const CoreHeader &header,
                            std::uint64_t length) noexcept {
  Message *m = message_in(b);
  m->header = header;
  m->data = payload_of(b);
  m->length = length;
  b->state.store(BlockState::kLibrary, std::memory_order_release);
  return m;
}

Message *Transport::arrived_stub(BlockHeader *b, const CoreHeader &header,
                                 std::uint64_t length) noexcept {
  Message *m = message_in(b);
  m->header = header;
  m->length = length;
  m->rendezvous = true;
  b->state.store(BlockState::kLibrary, std::memory_order_release);
  return m;
}

void Transport::drop_refused(int rc, rocl_gid_t destination, Message *msg,
                             std::string_view from) noexcept {
  refused_count_.store(refused_count_.load(std::memory_order_relaxed) + 1,
                       std::memory_order_relaxed);
  char line[256];
  std::snprintf(line, sizeof line, "%.*s: %s%.*s for %s 0x%016" PRIx64,
                static_cast<int>(name_.size()), name_.data(), msg->rendezvous ? "rendezvous " : "",
                static_cast<int>(from.size()), from.data(), refusal(rc), destination);
  log(line);
  if (msg->rendezvous) {
    discard_impl(msg);  // lets its sender go
    return;
  }
  BlockHeader *b = block_of(msg);
  std::destroy_at(msg);
  env_.pool->release(b, BlockState::kLibrary);
}

void Transport::finish_sent(BlockHeader *block, bool ok) const noexcept {
  if (block->return_after_send && env_.pool != nullptr) {
    end_message(block);
    env_.pool->release(block, BlockState::kLibrary);
  } else {
    block->send_status.store(ok ? SendStatus::kSent : SendStatus::kFailed,
                             std::memory_order_release);
  }
}

int Transport::send_bytes_impl(rocl_gid_t, std::string_view, rocl_gid_t, const CoreHeader &,
                               const void *, std::size_t, bool) noexcept {
  return kNotTaken;
}

Message *Transport::take_arrived_impl(rocl_gid_t, const CoreHeader &, ReadyFn, const void *,
                                      bool *) noexcept {
  return nullptr;
}

int Transport::pull_impl(Message *, Message **) noexcept {
  return fail(ROCL_EINTERNAL, "%.*s: pull of a rendezvous stub, but this transport makes none",
              static_cast<int>(name_.size()), name_.data());
}

void Transport::discard_impl(Message *) noexcept {}

int Transport::pull_into_impl(Message *, void *, std::size_t) noexcept {
  return fail(ROCL_EINTERNAL, "%.*s: pull into memory, but this transport cannot",
              static_cast<int>(name_.size()), name_.data());
}

}  // namespace rocl::impl
