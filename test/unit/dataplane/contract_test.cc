// The agent and the operator agree: the names both sides spell out, and when one lets go of an
// address against when the other may give it to someone else.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "pkg/agent/lease_renewer.h"
#include "pkg/controller/agentlease/agents.h"
#include "pkg/controller/names.h"
#include "pkg/dataplane/cluster_view.h"
#include "pkg/dataplane/problem.h"
#include "pkg/leaderelection/kube_lease_lock.h"
#include "test/testutil/fake_time.h"
#include "test/unit/leaderelection/fake_lease_lock.h"

namespace egress::dataplane {
namespace {

using namespace std::chrono_literals;

TEST(Contract, NamesMatchTheOperators) {
  EXPECT_EQ(kAgentLeasePrefix, controller::kAgentLeasePrefix);
  EXPECT_EQ(kProgrammedAnnotation, controller::kProgrammedAnnotation);
  EXPECT_EQ(kObservedSlicesAnnotation, controller::kObservedSlicesAnnotation);
  EXPECT_EQ(kProblemsAnnotation, controller::kProblemsAnnotation);
  ASSERT_EQ(std::size(kProblemKinds), std::size(controller::kDataplaneProblemReasons));
  for (size_t i = 0; i < std::size(kProblemKinds); ++i) {
    EXPECT_EQ(problemReason(kProblemKinds[i]), controller::kDataplaneProblemReasons[i]);
  }
}

// What the agent writes of its problems, the operator reads back: one per policy, by uid, with
// the reason and message; a kind the operator does not know reads as DataplaneProblem.
TEST(Contract, TheOperatorReadsTheProblemsTheAgentReports) {
  std::vector<Problem> problems = {
      {ProblemKind::kContestedAddress, "uid-a", "ns/a", "egress IP 192.0.2.1 is in ns/a, ns/b"},
      {ProblemKind::kContestedAddress, "uid-b", "ns/b", "egress IP 192.0.2.1 is in ns/a, ns/b"},
      {ProblemKind::kRefusedAddress, "uid-c", "ns/c", "egress IP 10.0.0.1 of ns/c refused"},
      {ProblemKind::kUnparsable, "uid-c", "ns/c", "cannot parse \"x\""},
      {ProblemKind::kInvalidSlice, "", "", "EgressPolicySlice s: no policy uid, ignored"}};
  coordination::Lease lease;
  lease.metadata.name = std::string(controller::kAgentLeasePrefix) + "n1";
  lease.metadata.annotations[std::string(controller::kProblemsAnnotation)] =
      problemsAnnotation(problems);
  auto read = controller::reportedProblems(lease);
  ASSERT_EQ(read.size(), 3U);
  EXPECT_EQ(read["uid-a"].key, "ns/a");
  EXPECT_EQ(read["uid-a"].reason, "ContestedAddress");
  EXPECT_EQ(read["uid-b"].message, "egress IP 192.0.2.1 is in ns/a, ns/b");
  EXPECT_EQ(read["uid-c"].reason, "RefusedAddress");
  EXPECT_EQ(read["uid-c"].message, "egress IP 10.0.0.1 of ns/c refused");

  lease.metadata.annotations[std::string(controller::kProblemsAnnotation)] =
      R"([{"uid":"u","policy":"ns/p","reason":"SomethingNew","message":"m"}, 7, {"x":1}])";
  read = controller::reportedProblems(lease);
  ASSERT_EQ(read.size(), 1U);
  EXPECT_EQ(read["u"].reason, controller::kReasonDataplaneProblem);
  lease.metadata.annotations[std::string(controller::kProblemsAnnotation)] = "not json";
  EXPECT_TRUE(controller::reportedProblems(lease).empty());
}

// The agent lets go of what it holds (its own fence, and the kernel fence that times out with it)
// a margin before a Lease duration has passed since it *sent* its last successful renewal, on
// its monotonic clock; the operator gives the address to another node no earlier than a Lease
// duration after it *saw* that renewal, on its own. The renewal is seen after it is sent, so the
// first always comes first: with the agent's wall clock 5 s ahead, in step or 5 s behind (the
// renewTime it writes is never compared with anything), and however late the watch delivers.
TEST(Contract, TheAgentLetsGoBeforeTheOperatorCanMoveTheAddressWhateverTheClocks) {
  const auto realWall = std::chrono::system_clock::time_point{} + std::chrono::hours(24 * 20000);
  for (auto skew : {-5s, 0s, 5s}) {
    for (auto watchLatency : {0ms, 50ms, 2000ms}) {
      boost::asio::io_context ioc;
      FakeClock agentClock(ioc.get_executor(), realWall + skew);
      leaderelection::testing::FakeLeaseStore store(ioc.get_executor(), agentClock);
      leaderelection::testing::FakeLeaseLock lock(store, "n1");
      agent::LeaseRenewer renewer(lock, agentClock, {2s, 6s, {}});
      const auto sent = agentClock.now();
      const auto wallSent = agentClock.wallNow();
      boost::asio::co_spawn(ioc, renewer.run(), rethrowUnhandled);
      testutil::pollReady(ioc);
      ASSERT_TRUE(store.record()) << "no renewal written";
      ASSERT_TRUE(renewer.freshUntil());
      const auto agentLetsGo = *renewer.freshUntil() - sent;

      // The operator's monotonic clock has a zero of its own; it sees the renewal late.
      const Clock::TimePoint operatorSent{std::chrono::hours(77)};
      coordination::Lease lease;
      lease.metadata.name = std::string(controller::kAgentLeasePrefix) + "n1";
      lease.spec = leaderelection::leaseSpecFromRecord(*store.record());
      EXPECT_EQ(*lease.spec.renewTime, wallSent) << "the agent's own wall clock";
      controller::Agents agents;
      agents.observe(lease, operatorSent + watchLatency);
      ASSERT_TRUE(agents.expiry("n1"));
      const auto operatorMayMove = *agents.expiry("n1") - operatorSent;

      EXPECT_LT(agentLetsGo, operatorMayMove)
          << "skew " << skew.count() << " s, watch latency " << watchLatency.count() << " ms";
      EXPECT_EQ(agentLetsGo, 6s - agent::LeaseRenewer::kFreshnessMargin);
      renewer.stop();
      testutil::pollReady(ioc);
    }
  }
}

}  // namespace
}  // namespace egress::dataplane
