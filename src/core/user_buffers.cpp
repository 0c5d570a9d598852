// user_buffers.cpp - the application's side of the pool (user_buffers.hpp).
#include "core/user_buffers.hpp"

#include "message/message.hpp"
#include "status/status.hpp"

namespace rocl::impl {

void *UserBuffers::get(std::size_t len) noexcept {
  BlockHeader *b = pool_.allocate(len);
  return b != nullptr ? payload_of(b) : nullptr;
}

namespace {
int explain_bad_buffer(const BufferPool &pool, const char *who, void *ptr) {
  if (ptr == nullptr) return fail(ROCL_EBADBUF, "%s: buffer pointer is NULL", who);
  if (pool.find_any_state(ptr) != nullptr) {
    return fail(ROCL_EBADBUF, "%s: buffer %p was already returned to the pool", who, ptr);
  }
  if (pool.contains(ptr)) {
    return fail(ROCL_EBADBUF, "%s: %p points into the buffer pool but not at the start of a buffer",
                who, ptr);
  }
  return fail(ROCL_EBADBUF, "%s: %p is not a rocl buffer (get one with rocl_bfget)", who, ptr);
}
}  // namespace

int UserBuffers::give_back(void *ptr) noexcept {
  BlockHeader *b = pool_.find(ptr);
  if (b == nullptr) return explain_bad_buffer(pool_, "rocl_bfret", ptr);
  if (b->send_status.load(std::memory_order_acquire) == SendStatus::kPending) {
    return fail(ROCL_EBUSY, "rocl_bfret: buffer %p is still being sent", ptr);
  }
  if (!pool_.release(b, BlockState::kUser)) {
    if (b->state.load() == BlockState::kFree) return explain_bad_buffer(pool_, "rocl_bfret", ptr);
    return fail(ROCL_EBUSY, "rocl_bfret: buffer %p is owned by the library (a send consumed it)",
                ptr);
  }
  return ROCL_OK;
}

int UserBuffers::return_after_send(void *ptr) noexcept {
  BlockHeader *b = pool_.find(ptr);
  if (b == nullptr) return explain_bad_buffer(pool_, "rocl_bftoret", ptr);
  if (b->state.load(std::memory_order_acquire) != BlockState::kUser) {
    return fail(ROCL_EBUSY, "rocl_bftoret: buffer %p is owned by the library", ptr);
  }
  b->return_after_send = true;
  return ROCL_OK;
}

int UserBuffers::status(void *ptr) noexcept {
  BlockHeader *b = pool_.find(ptr);
  if (b == nullptr) return explain_bad_buffer(pool_, "rocl_bfstat", ptr);
  return static_cast<int>(b->send_status.load(std::memory_order_acquire));
}

std::size_t UserBuffers::size(void *ptr) noexcept {
  BlockHeader *b = pool_.find(ptr);
  return b != nullptr ? payload_capacity(b) : 0;
}

}  // namespace rocl::impl
