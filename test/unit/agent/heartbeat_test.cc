#include "pkg/agent/heartbeat.h"

#include <gtest/gtest.h>

namespace egress::agent {
namespace {

Heartbeat full() {
  Heartbeat hb;
  hb.sender = "node-1.example";
  hb.incarnation = 0x0123456789abcdefULL;
  hb.seq = 42;
  hb.windowMs = 800;
  hb.echoIncarnation = 0xfedcba9876543210ULL;
  hb.echoSeq = 41;
  hb.grantMs = 800;
  hb.leaving = true;
  hb.restartMs = 30000;
  hb.dead = {"node-2", "node-3"};
  hb.claims = {*ipam::parseAddress("203.0.113.7"), *ipam::parseAddress("2001:db8::7")};
  return hb;
}

TEST(Heartbeat, ARoundTripKeepsEveryField) {
  auto bytes = encodeHeartbeat(full());
  ASSERT_TRUE(bytes) << bytes.error();
  auto back = decodeHeartbeat(*bytes);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, full());
  Heartbeat empty;
  empty.sender = "n";
  auto e = encodeHeartbeat(empty);
  ASSERT_TRUE(e);
  EXPECT_EQ(*decodeHeartbeat(*e), empty);
}

TEST(Heartbeat, EveryTruncationAndTrailingByteIsAnError) {
  const std::string bytes = *encodeHeartbeat(full());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(decodeHeartbeat(std::string_view(bytes).substr(0, n))) << n << " bytes";
  }
  auto trailing = decodeHeartbeat(bytes + "x");
  ASSERT_FALSE(trailing);
  EXPECT_EQ(trailing.error(), "heartbeat: trailing bytes");
}

TEST(Heartbeat, ForeignBytesAndOtherVersionsAreNamed) {
  EXPECT_EQ(decodeHeartbeat("GET / HTTP/1.1").error(), "not a heartbeat");
  std::string bytes = *encodeHeartbeat(full());
  bytes[4] = 2;
  EXPECT_EQ(decodeHeartbeat(bytes).error(), "heartbeat: version 2, this agent speaks 1");
  bytes = *encodeHeartbeat(full());
  // The first claim's family byte: after the header, the sender, 44 bytes of numbers, the dead
  // list.
  const size_t family = 6 + 1 + full().sender.size() + 44 + 2 + 7 + 7 + 2;
  ASSERT_EQ(bytes[family], 4);
  bytes[family] = 5;
  EXPECT_EQ(decodeHeartbeat(bytes).error(), "heartbeat: address family 5");
}

TEST(Heartbeat, NamesMustFitAndTheWholeMustFitADatagram) {
  Heartbeat hb = full();
  hb.sender = "";
  EXPECT_FALSE(encodeHeartbeat(hb));
  hb.sender = std::string(254, 'a');
  EXPECT_FALSE(encodeHeartbeat(hb));
  hb.sender = std::string(253, 'a');
  EXPECT_TRUE(encodeHeartbeat(hb));
  hb.dead.assign(300, std::string(250, 'b'));
  auto big = encodeHeartbeat(hb);
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().find("more than 65507"), std::string::npos) << big.error();
}

}  // namespace
}  // namespace egress::agent
