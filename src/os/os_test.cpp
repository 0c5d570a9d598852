// os_test.cpp - the host's identity and IPv4 names (host.hpp, net.hpp).
// That processes in two test hosts (network namespaces) take each other for
// other hosts is tested across the test hosts (tests/netns).
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>

#include "os/host.hpp"
#include "os/net.hpp"
#include "os/process.hpp"

namespace rocl::impl::os {
namespace {

TEST(Host, IdIsSixteenHexDigitsAndStable) {
  const std::string id = host_id();
  ASSERT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(&host_id(), &host_id());
  EXPECT_NE(net_namespace(), 0u);
  // boot id : pid namespace : network namespace
  EXPECT_NE(host_tag().find(":" + std::to_string(pid_namespace()) + ":" +
                            std::to_string(net_namespace())),
            std::string::npos)
      << host_tag();
  EXPECT_FALSE(host_name().empty());
}

TEST(Net, ResolvesNamesOfAddresses) {
  in_addr a{};
  ASSERT_TRUE(resolve_ipv4("", &a));
  EXPECT_EQ(ipv4_text(a), "127.0.0.1");
  ASSERT_TRUE(resolve_ipv4("loopback", &a));
  EXPECT_EQ(ipv4_text(a), "127.0.0.1");
  ASSERT_TRUE(resolve_ipv4("any", &a));
  EXPECT_EQ(ipv4_text(a), "0.0.0.0");
  ASSERT_TRUE(resolve_ipv4("10.1.2.3", &a));
  EXPECT_EQ(ipv4_text(a), "10.1.2.3");
  ASSERT_TRUE(resolve_ipv4("lo", &a));
  EXPECT_EQ(ipv4_text(a), "127.0.0.1");
  ASSERT_TRUE(resolve_ipv4("auto", &a));  // some address, loopback at worst
  EXPECT_NE(a.s_addr, htonl(INADDR_ANY));
  EXPECT_FALSE(resolve_ipv4("no-such-interface0", &a));
  EXPECT_FALSE(resolve_ipv4("1.2.3", &a));
}

TEST(Net, LoopbackHasNoBroadcastAddress) {
  in_addr lo{};
  lo.s_addr = htonl(INADDR_LOOPBACK);
  in_addr b{};
  EXPECT_FALSE(broadcast_of(lo, &b));
  in_addr nowhere{};
  ::inet_pton(AF_INET, "192.0.2.77", &nowhere);
  EXPECT_FALSE(broadcast_of(nowhere, &b));
}

}  // namespace
}  // namespace rocl::impl::os
