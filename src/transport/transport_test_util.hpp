// transport_test_util.hpp - helpers shared by the transport tests: a sink
// that records arrivals, checksums, a message builder.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "buffer/buffer_pool.hpp"
#include "message/message.hpp"
#include "status/status.hpp"
#include "transport/transport.hpp"

namespace rocl::impl::transport_test {

inline std::uint64_t checksum(const void *p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  const auto *b = static_cast<const std::uint8_t *>(p);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

struct Arrival {
  rocl_gid_t destination;
  rocl_gid_t source;
  std::int32_t tag;
  std::uint32_t domain;
  std::size_t length;
  std::uint64_t sum;
  std::uint64_t first8;
};

// Records arrivals (checksums) and gives the blocks back to the pool.
struct RecordingSink : MessageSink {
  BufferPool *pool = nullptr;
  std::chrono::microseconds delay{0};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Arrival> got;

  // Rendezvous stubs (Transport::pull): pulled at once (the default, as if a
  // receive were posted), or kept in `stubs` for the test to pull/discard.
  bool keep_stubs = false;
  std::vector<Message *> stubs;
  std::atomic<int> stubs_seen{0};

  int deliver(rocl_gid_t destination, Message *msg, const Waiter *) noexcept override {
    if (destination == 404) return ROCL_EBADGID;
    if (msg->rendezvous) {
      if (keep_stubs) {  // counted once it is in `stubs`, so a test may take it
        std::lock_guard<std::mutex> g(mu);
        stubs.push_back(msg);
        stubs_seen.fetch_add(1);
        cv.notify_all();
        return ROCL_OK;
      }
      stubs_seen.fetch_add(1);
      Message *real = nullptr;
      const int rc = rendezvous_transport(msg)->pull(msg, &real);
      EXPECT_EQ(rc, ROCL_OK) << last_error();
      if (rc != ROCL_OK) return ROCL_OK;
      msg = real;
    }
    BlockHeader *b = block_of(msg);
    Arrival a{destination,
              msg->header.source,
              msg->header.tag,
              msg->header.domain,
              msg->length,
              checksum(msg->data, msg->length),
              0};
    std::memcpy(&a.first8, msg->data, std::min<std::size_t>(8, msg->length));
    const bool ok = b->state.load() == BlockState::kLibrary;
    EXPECT_TRUE(ok) << "an arriving block must be owned by the library";
    std::destroy_at(msg);
    pool->release(b, BlockState::kLibrary);
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    std::lock_guard<std::mutex> g(mu);
    if (!ok) a.length = SIZE_MAX;
    got.push_back(a);
    cv.notify_all();
    return ROCL_OK;
  }

  bool wait_for(std::size_t n, std::chrono::milliseconds t = std::chrono::milliseconds(8000)) {
    std::unique_lock<std::mutex> lk(mu);
    return cv.wait_for(lk, t, [&] { return got.size() >= n; });
  }
  std::size_t count() {
    std::lock_guard<std::mutex> g(mu);
    return got.size();
  }
  std::vector<Arrival> snapshot() {
    std::lock_guard<std::mutex> g(mu);
    return got;
  }
};

// A message of n bytes (byte i = seed + i * 31, first 8 bytes = first8 if n >= 8)
// in a block of pool, ready to hand to send().
inline Message *make_message(BufferPool &pool, std::size_t n, std::uint64_t seed, rocl_gid_t source,
                             std::int32_t tag, std::uint64_t *sum = nullptr) {
  BlockHeader *b = pool.allocate(n);
  if (b == nullptr) return nullptr;
  auto *p = reinterpret_cast<std::uint8_t *>(payload_of(b));
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(seed + i * 31);
  if (n >= 8) std::memcpy(p, &seed, 8);
  if (sum != nullptr) *sum = checksum(p, n);
  Message *m = message_in(b);
  m->header = CoreHeader{source, tag, 7};
  m->data = p;
  m->length = n;
  b->return_after_send = true;
  b->state.store(BlockState::kLibrary);
  return m;
}

}  // namespace rocl::impl::transport_test
