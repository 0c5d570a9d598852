// The in-process transport's own contract: it reaches only its own
// address and hands the very message pointer to the sink, no copy.
#include <gtest/gtest.h>

#include <vector>

#include "transport/inproc/inproc_transport.hpp"

namespace rocl::impl {
namespace {

struct RecordingSink : MessageSink {
  int deliver(rocl_gid_t destination, Message *msg, const Waiter *) noexcept override {
    if (destination == 404) return ROCL_EBADGID;
    delivered.push_back({destination, msg});
    return ROCL_OK;
  }
  std::vector<std::pair<rocl_gid_t, Message *>> delivered;
};

TEST(InprocTransport, HandsThePointerOverWithoutCopy) {
  RecordingSink sink;
  auto t = make_inproc_transport(TransportEnv{&sink, 42});
  alignas(64) unsigned char storage[sizeof(Message)];
  auto *msg = reinterpret_cast<Message *>(storage);
  ASSERT_EQ(t->send(1, t->address(), 7, msg), ROCL_OK);
  ASSERT_EQ(sink.delivered.size(), 1u);
  EXPECT_EQ(sink.delivered[0].first, 7u);
  EXPECT_EQ(sink.delivered[0].second, msg);
}

TEST(InprocTransport, ReachesOnlyItsOwnAddress) {
  RecordingSink sink;
  auto a = make_inproc_transport(TransportEnv{&sink, 1});
  auto b = make_inproc_transport(TransportEnv{&sink, 2});
  EXPECT_TRUE(a->reaches(a->address()));
  EXPECT_FALSE(a->reaches(b->address()));
  EXPECT_EQ(a->send(1, b->address(), 7, nullptr), ROCL_EPEER);
  EXPECT_TRUE(sink.delivered.empty());
}

TEST(InprocTransport, UnknownDestinationLeavesTheMessageWithTheCaller) {
  RecordingSink sink;
  auto t = make_inproc_transport(TransportEnv{&sink, 3});
  EXPECT_EQ(t->send(1, t->address(), 404, nullptr), ROCL_EBADGID);
  EXPECT_EQ(t->progress(nullptr), 0);
}

}  // namespace
}  // namespace rocl::impl
