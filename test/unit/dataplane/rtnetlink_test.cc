// Runs in its own network namespace (netns_main.cc): one Rtnetlink socket serves request after
// request, even after a dump it stopped reading halfway.
#include "pkg/dataplane/rtnetlink.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

namespace egress::dataplane {
namespace {

int countLinks(const nlmsghdr* /*nlh*/, void* data) {
  ++*static_cast<int*>(data);
  return MNL_CB_OK;
}

int stopAtTheFirst(const nlmsghdr* /*nlh*/, void* data) {
  ++*static_cast<int*>(data);
  return MNL_CB_ERROR;
}

// A dump of 121 links spans several reads. The first request stops at its first message; the
// next request on the same socket gets its own whole answer. (Before, the kernel refused it with
// EBUSY: a dump still ran on the socket, unread. So did the retry of an interrupted dump.)
TEST(Rtnetlink, ARequestAfterADumpLeftHalfReadGetsItsOwnAnswer) {
  for (int i = 0; i < 60; ++i) {
    const std::string n = std::to_string(i);
    ASSERT_EQ(std::system(("ip link add va" + n + " type veth peer name vb" + n).c_str()), 0);
  }
  Rtnetlink nl;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  int first = 0;
  EXPECT_FALSE(
      nl.request(linkMessage(buf.data(), RTM_GETLINK, NLM_F_DUMP, 0), stopAtTheFirst, &first).ok());
  EXPECT_EQ(first, 1);
  for (int round = 0; round < 2; ++round) {
    int links = 0;
    auto done = nl.request(linkMessage(buf.data(), RTM_GETLINK, NLM_F_DUMP, 0), countLinks, &links);
    ASSERT_TRUE(done.ok()) << done.error();
    EXPECT_EQ(links, 121) << "lo and 60 veth pairs";
  }
}

}  // namespace
}  // namespace egress::dataplane
