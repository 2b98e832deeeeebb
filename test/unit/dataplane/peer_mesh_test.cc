// PeerMesh over real UDP sockets, in a private network namespace: three agents on 127.0.0.1-3
// reach a majority, a stopped one is certified dead by the other two (who keep theirs), and
// datagrams from a stranger, undecodable ones and forgeries from a member's address count for
// nothing.
#include "pkg/agent/peer_mesh.h"

#include <cstdlib>
#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

namespace egress::agent {
namespace {

using namespace std::chrono_literals;
namespace net = boost::asio;

const QuorumOptions kOptions{20ms, 200ms, 400ms};
constexpr uint16_t kPort = 4798;

double counterValue(prometheus::Registry& r, const std::string& name, const std::string& result) {
  for (const auto& family : r.Collect()) {
    if (family.name != name) {
      continue;
    }
    for (const auto& m : family.metric) {
      for (const auto& l : m.label) {
        if (l.name == "result" && l.value == result) {
          return m.counter.value;
        }
      }
    }
  }
  return -1;
}

class PeerMeshTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(std::system("ip link set lo up"), 0);
    for (int i = 1; i <= 3; ++i) {
      const std::string name = "n" + std::to_string(i);
      PeerMesh::Member m;
      m.ipv4 = ipam::parseAddress("127.0.0." + std::to_string(i));
      members_[name] = m;
    }
    for (int i = 1; i <= 3; ++i) {
      PeerMesh::Options o;
      o.port = kPort;
      o.quorum = kOptions;
      o.onChange = [this, i] { ++changes_[i - 1]; };
      registries_.push_back(std::make_unique<prometheus::Registry>());
      meshes_.push_back(std::make_unique<PeerMesh>("n" + std::to_string(i), clock_,
                                                   ioc_.get_executor(), o, *registries_.back()));
      auto bound = meshes_.back()->setMembers(members_);
      ASSERT_TRUE(bound) << bound.error();
      meshes_.back()->start();
    }
  }
  void TearDown() override {
    for (auto& m : meshes_) {
      m->stop();
    }
    ioc_.run_for(50ms);
  }

  // Runs the loop until `done` or 10 s.
  bool runUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      ioc_.run_for(10ms);
    }
    return true;
  }
  bool hasLease(int i) { return meshes_[i]->quorum().leaseUntil(clock_.now()).has_value(); }

  net::io_context ioc_;
  RealClock clock_{ioc_.get_executor()};
  std::map<std::string, PeerMesh::Member> members_;
  std::vector<std::unique_ptr<prometheus::Registry>> registries_;
  std::vector<std::unique_ptr<PeerMesh>> meshes_;
  int changes_[3] = {0, 0, 0};
};

TEST_F(PeerMeshTest, ThreeAgentsReachAMajorityAndTwoCertifyAStoppedOne) {
  ASSERT_TRUE(runUntil([&] { return hasLease(0) && hasLease(1) && hasLease(2); }));
  // The lease's start is news for a sync (noticed at the next round).
  EXPECT_TRUE(runUntil([&] { return changes_[0] > 0 && changes_[1] > 0 && changes_[2] > 0; }));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(meshes_[i]->ready(clock_.now()));
  }
  EXPECT_GT(counterValue(*registries_[0], "egw_agent_heartbeats_received_total", "counted"), 0);
  meshes_[2]->stop();
  ASSERT_TRUE(runUntil([&] {
    return meshes_[0]->dead("n3", clock_.now()) && meshes_[1]->dead("n3", clock_.now());
  }));
  EXPECT_TRUE(hasLease(0));
  EXPECT_TRUE(hasLease(1));
  EXPECT_FALSE(meshes_[0]->dead("n2", clock_.now()));
}

// An agent restarts (a new process, a new incarnation, on the same address) long after its
// predecessor died: the others count it again and it gets its lease back.
TEST_F(PeerMeshTest, AnAgentThatComesBackIsCountedAgain) {
  ASSERT_TRUE(runUntil([&] { return hasLease(0) && hasLease(1) && hasLease(2); }));
  meshes_[0]->stop();
  ASSERT_TRUE(runUntil([&] { return meshes_[1]->dead("n1", clock_.now()); }));
  ioc_.run_for(300ms);
  meshes_[0].reset();
  PeerMesh::Options o;
  o.port = kPort;
  o.quorum = kOptions;
  meshes_[0] = std::make_unique<PeerMesh>("n1", clock_, ioc_.get_executor(), o, *registries_[0]);
  ASSERT_TRUE(meshes_[0]->setMembers(members_));
  meshes_[0]->start();
  EXPECT_TRUE(runUntil([&] {
    return hasLease(0) && meshes_[1]->quorum().heard("n1", clock_.now()) &&
           meshes_[2]->quorum().heard("n1", clock_.now()) && !meshes_[1]->dead("n1", clock_.now());
  }));
}

// A member whose node is unreachable (its address behind a link without carrier: the
// neighbour never resolves, and sends to it fail) does not stop the others hearing each other.
TEST_F(PeerMeshTest, AnUnreachableMemberDoesNotStopTheOthers) {
  ASSERT_EQ(std::system("ip link add egwv0 type veth peer name egwv1 && "
                        "ip addr add 10.99.0.1/24 dev egwv0 && ip link set egwv0 up"),
            0);
  members_["n4"].ipv4 = ipam::parseAddress("10.99.0.2");
  for (auto& m : meshes_) {
    ASSERT_TRUE(m->setMembers(members_));
  }
  // Four members: three are a majority.
  ASSERT_TRUE(runUntil([&] { return hasLease(0) && hasLease(1) && hasLease(2); }));
  const double counted =
      counterValue(*registries_[0], "egw_agent_heartbeats_received_total", "counted");
  ioc_.run_for(6s);  // past the neighbour's failure (3 s of unanswered ARP)
  EXPECT_GT(counterValue(*registries_[0], "egw_agent_heartbeats_received_total", "counted"),
            counted + 100);
  EXPECT_TRUE(hasLease(0));
  EXPECT_TRUE(meshes_[0]->quorum().heard("n2", clock_.now()));
  EXPECT_TRUE(meshes_[0]->dead("n4", clock_.now()));
  std::system("ip link del egwv0");
}

TEST_F(PeerMeshTest, StrangersGarbageAndForgeriesCountForNothing) {
  ASSERT_TRUE(runUntil([&] { return hasLease(0) && hasLease(1) && hasLease(2); }));
  auto send = [&](const char* from, const std::string& bytes) {
    net::ip::udp::socket s(ioc_);
    s.open(net::ip::udp::v4());
    s.bind({net::ip::make_address(from), 0});
    s.send_to(net::buffer(bytes), {net::ip::make_address("127.0.0.1"), kPort});
  };
  // A heartbeat as n2 would write it, n3 voted dead: but it cannot know n1's incarnation.
  Heartbeat forged;
  forged.sender = "n2";
  forged.incarnation = 1;
  forged.seq = 1'000'000;
  forged.windowMs = 60'000;
  forged.echoIncarnation = 42;
  forged.echoSeq = 1;
  forged.dead = {"n3"};
  const std::string bytes = *encodeHeartbeat(forged);
  auto& r = *registries_[0];
  const double ignored = counterValue(r, "egw_agent_heartbeats_received_total", "ignored");
  send("127.0.0.9", bytes);
  send("127.0.0.2", "GET / HTTP/1.0\r\n\r\n");
  for (int i = 0; i < 20; ++i) {
    send("127.0.0.2", bytes);  // from n2's own address, as a spoofing pod would
  }
  ASSERT_TRUE(runUntil([&] {
    return counterValue(r, "egw_agent_heartbeats_received_total", "unknown-sender") == 1 &&
           counterValue(r, "egw_agent_heartbeats_received_total", "undecodable") == 1 &&
           counterValue(r, "egw_agent_heartbeats_received_total", "ignored") >= ignored + 20;
  }));
  // n3 is alive and none of it counted: n1 neither sees it dead nor lost n2.
  ioc_.run_for(100ms);
  EXPECT_FALSE(meshes_[0]->dead("n3", clock_.now()));
  EXPECT_TRUE(meshes_[0]->quorum().heard("n2", clock_.now()));
  EXPECT_TRUE(hasLease(0));
}

TEST_F(PeerMeshTest, APortInUseIsAClearError) {
  net::ip::udp::socket squatter(ioc_);
  squatter.open(net::ip::udp::v4());
  squatter.bind({net::ip::make_address("127.0.0.4"), kPort});
  PeerMesh::Options o;
  o.port = kPort;
  o.quorum = kOptions;
  prometheus::Registry r;
  PeerMesh m("n4", clock_, ioc_.get_executor(), o, r);
  auto members = members_;
  members["n4"].ipv4 = ipam::parseAddress("127.0.0.4");
  auto bound = m.setMembers(members);
  ASSERT_FALSE(bound);
  EXPECT_EQ(bound.error(), "heartbeat socket on 127.0.0.4 port 4798: Address already in use");
  // The same members at the next sync, the port free by then: bound.
  squatter.close();
  auto again = m.setMembers(members);
  EXPECT_TRUE(again) << again.error();
}

}  // namespace
}  // namespace egress::agent
