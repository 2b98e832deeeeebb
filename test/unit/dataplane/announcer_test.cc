// Runs in its own network namespace (netns_main.cc): announces egress IPs on one end of a veth
// pair and captures what arrives at the other (AF_PACKET): a gratuitous ARP request and reply
// for IPv4, an unsolicited override NA to all-nodes with hop limit 255 for IPv6, each carrying
// the sending device's MAC, and the count of what was sent.
#include "pkg/dataplane/announcer.h"

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/unit/dataplane/kernel_test_util.h"
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

namespace egress::dataplane {
namespace {

using testing::sh;

using Frame = std::vector<uint8_t>;

// Every frame arriving on `dev` while it is open.
class Capture {
 public:
  explicit Capture(const std::string& dev) : fd_(socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL))) {
    sockaddr_ll at{};
    at.sll_family = AF_PACKET;
    at.sll_protocol = htons(ETH_P_ALL);
    at.sll_ifindex = static_cast<int>(if_nametoindex(dev.c_str()));
    (void)bind(fd_, reinterpret_cast<const sockaddr*>(&at), sizeof at);
    // A guard against a hang, not a threshold: the frames are already queued when read.
    timeval tv{2, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Capture() { close(fd_); }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  // The next frame of `ethertype`, or an empty one when none arrives.
  Frame next(uint16_t ethertype) {
    for (;;) {
      Frame f(2048);
      ssize_t n = recv(fd_, f.data(), f.size(), 0);
      if (n <= 0) {
        return {};
      }
      f.resize(static_cast<size_t>(n));
      if (f.size() >= 14 && ((f[12] << 8) | f[13]) == ethertype) {
        return f;
      }
    }
  }

 private:
  int fd_;
};

std::array<uint8_t, 6> macOf(const std::string& dev) {
  auto text = testing::linkField(dev, "link/ether");
  std::array<uint8_t, 6> m{};
  std::sscanf(text.c_str(), "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2], &m[3], &m[4],
              &m[5]);
  return m;
}

bool bytesEqual(const Frame& f, size_t at, const uint8_t* want, size_t n) {
  return f.size() >= at + n && std::memcmp(&f[at], want, n) == 0;
}

class AnnouncerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sh("ip link set lo up");
    sh("sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0");
    sh("ip link add ul0 type veth peer name ul0-peer && ip link set ul0 up && "
       "ip link set ul0-peer up");
    sh("ip addr add 192.168.50.11/24 dev ul0");
  }
};

TEST_F(AnnouncerTest, AGratuitousArpRequestAndReplyCarryTheEgressIPAndTheUplinksMac) {
  Capture cap("ul0-peer");
  Announcer a;
  auto sent = a.announce("ul0", testing::ip("192.168.50.200"));
  ASSERT_TRUE(sent.ok()) << sent.error();
  EXPECT_EQ(*sent, 2);
  EXPECT_EQ(a.sent(), 2U);
  const auto mac = macOf("ul0");
  const uint8_t eip[4] = {192, 168, 50, 200};
  const uint8_t broadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  for (uint8_t op : {1, 2}) {
    Frame f = cap.next(ETH_P_ARP);
    ASSERT_GE(f.size(), 42U) << "no ARP frame " << int(op);
    EXPECT_TRUE(bytesEqual(f, 0, broadcast, 6));
    EXPECT_TRUE(bytesEqual(f, 6, mac.data(), 6));
    EXPECT_EQ(f[14 + 7], op);
    EXPECT_TRUE(bytesEqual(f, 14 + 8, mac.data(), 6));  // sender MAC
    EXPECT_TRUE(bytesEqual(f, 14 + 14, eip, 4));        // sender IP
    EXPECT_TRUE(bytesEqual(f, 14 + 24, eip, 4));        // target IP: gratuitous
  }
}

TEST_F(AnnouncerTest, AnUnsolicitedNeighbourAdvertisementOverridesForTheEgressIP) {
  Capture cap("ul0-peer");
  Announcer a;
  auto sent = a.announce("ul0", testing::ip("fd00:50::200"));
  ASSERT_TRUE(sent.ok()) << sent.error();
  EXPECT_EQ(*sent, 1);
  const auto mac = macOf("ul0");
  uint8_t target[16];
  inet_pton(AF_INET6, "fd00:50::200", target);
  uint8_t allNodes[16];
  inet_pton(AF_INET6, "ff02::1", allNodes);
  Frame f;
  // Skip what else IPv6 sends on a new link (MLD reports, router solicitations).
  for (int i = 0; i < 20; ++i) {
    f = cap.next(ETH_P_IPV6);
    if (f.size() >= 14 + 40 + 32 && f[14 + 6] == 58 && f[14 + 40] == 136) {
      break;
    }
  }
  ASSERT_GE(f.size(), 14U + 40 + 32) << "no neighbour advertisement";
  EXPECT_EQ(f[14 + 7], 255) << "hop limit";
  EXPECT_TRUE(bytesEqual(f, 14 + 24, allNodes, 16));
  EXPECT_EQ(f[14 + 40 + 4], 0x20) << "override only";
  EXPECT_TRUE(bytesEqual(f, 14 + 40 + 8, target, 16));
  EXPECT_EQ(f[14 + 40 + 24], 2) << "target link-layer address option";
  EXPECT_TRUE(bytesEqual(f, 14 + 40 + 26, mac.data(), 6));
}

TEST_F(AnnouncerTest, AMissingDeviceIsAnErrorAndCountsNothing) {
  Announcer a;
  auto sent = a.announce("nosuch0", testing::ip("192.168.50.200"));
  ASSERT_FALSE(sent.ok());
  EXPECT_THAT(sent.error(), ::testing::HasSubstr("nosuch0"));
  EXPECT_EQ(a.sent(), 0U);
}

}  // namespace
}  // namespace egress::dataplane
