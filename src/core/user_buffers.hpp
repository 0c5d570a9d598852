// user_buffers.hpp - the application's side of the buffer pool (rocl_bfget,
// rocl_bfret, rocl_bftoret, rocl_bfstat, rocl_bfsize): buffers it owns,
// checked and explained when it hands back something that is not one.
#pragma once

#include <cstddef>

#include "buffer/buffer_pool.hpp"

namespace rocl::impl {

class UserBuffers {
 public:
  explicit UserBuffers(BufferPool &pool) noexcept : pool_(pool) {}

  // A buffer of at least len bytes, the caller's (nullptr with fail(): the
  // pool's cap).
  void *get(std::size_t len) noexcept;
  // Gives ptr back to the pool: ROCL_OK, or ROCL_EBADBUF / ROCL_EBUSY
  // with a sentence saying what ptr is instead (not a buffer, returned
  // already, being sent, owned by the library).
  int give_back(void *ptr) noexcept;
  // Marks ptr to go back to the pool once a send of it is done.
  int return_after_send(void *ptr) noexcept;
  // The SendStatus of ptr's last send, or a failure as give_back's.
  int status(void *ptr) noexcept;
  // ptr's capacity in bytes (0: not a buffer).
  std::size_t size(void *ptr) noexcept;

 private:
  BufferPool &pool_;
};

}  // namespace rocl::impl
