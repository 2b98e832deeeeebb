#include "pkg/controller/agentlease/agents.h"

#include <gtest/gtest.h>

#include "pkg/controller/names.h"

namespace egress::controller {
namespace {

using namespace std::chrono_literals;

const Clock::TimePoint kT0{std::chrono::hours(2)};
const meta::Time kWall{std::chrono::hours(24 * 365 * 55)};

coordination::Lease agentLease(const std::string& node, meta::Time renewed,
                               const std::string& programmed = "") {
  coordination::Lease l;
  l.metadata.name = std::string(kAgentLeasePrefix) + node;
  l.spec.holderIdentity = node;
  l.spec.renewTime = renewed;
  l.spec.leaseDurationSeconds = 6;
  if (!programmed.empty()) {
    l.metadata.annotations[std::string(kProgrammedAnnotation)] = programmed;
  }
  return l;
}

// The agent and the operator run on different machines. Whatever the agent's clock says, the
// operator calls it stale a full duration after it saw the last renewal -- never earlier, which
// is what keeps two nodes from answering for one address: the agent fences itself before a
// full duration has passed since it sent that renewal.
TEST(Agents, LivenessCountsFromWhenTheOperatorSawTheRenewal) {
  for (auto skew : {-5s, 0s, 5s}) {
    Agents agents;
    agents.observe(agentLease("n1", kWall + skew), kT0);
    EXPECT_TRUE(agents.live("n1", kT0 + 5999ms)) << skew.count();
    EXPECT_FALSE(agents.live("n1", kT0 + 6s)) << skew.count();
    EXPECT_EQ(agents.expiry("n1"), kT0 + 6s);
  }
}

TEST(Agents, ARenewalOnlyMovesTheObservedTime) {
  Agents agents;
  EXPECT_TRUE(agents.observe(agentLease("n1", kWall, "203.0.113.5"), kT0));
  EXPECT_FALSE(agents.observe(agentLease("n1", kWall + 2s, "203.0.113.5"), kT0 + 2s))
      << "same report: nothing for the policies";
  EXPECT_TRUE(agents.live("n1", kT0 + 7s));
  EXPECT_TRUE(agents.observe(agentLease("n1", kWall + 4s, ""), kT0 + 4s)) << "report changed";
  EXPECT_TRUE(agents.programmed("n1").empty());
}

TEST(Agents, TheReportIsParsedAndItsGarbageSkipped) {
  Agents agents;
  agents.observe(agentLease("n1", kWall, "2001:db8::5,203.0.113.5,garbage,"), kT0);
  const auto& p = agents.programmed("n1");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_TRUE(p.contains(*ipam::parseAddress("203.0.113.5")));
  EXPECT_TRUE(p.contains(*ipam::parseAddress("2001:db8::5")));
  EXPECT_TRUE(agents.programmed("n2").empty());
}

// Who answers for an address now: live agents only (a stale one has fenced itself).
TEST(Agents, OnlyLiveAgentsClaimWhatTheyReport) {
  Agents agents;
  agents.observe(agentLease("n1", kWall, "203.0.113.5"), kT0);
  agents.observe(agentLease("n2", kWall, "203.0.113.5,203.0.113.6"), kT0 + 3s);
  auto claims = agents.claims(kT0 + 1s);
  EXPECT_EQ(claims.at(*ipam::parseAddress("203.0.113.5")), (std::set<std::string>{"n1", "n2"}));
  EXPECT_EQ(claims.at(*ipam::parseAddress("203.0.113.6")), std::set<std::string>{"n2"});
  claims = agents.claims(kT0 + 6s);  // n1 stale, n2 live until kT0 + 9 s
  EXPECT_EQ(claims.at(*ipam::parseAddress("203.0.113.5")), std::set<std::string>{"n2"});
  EXPECT_TRUE(agents.claims(kT0 + 9s).empty());
}

TEST(Agents, OtherLeasesAndForgottenNodesAreNotAgents) {
  Agents agents;
  coordination::Lease other = agentLease("n1", kWall);
  other.metadata.name = "egress-gateway-operator";
  EXPECT_FALSE(agents.observe(other, kT0));
  EXPECT_TRUE(agents.nodes().empty());
  agents.observe(agentLease("n1", kWall, "203.0.113.5"), kT0);
  EXPECT_EQ(agents.nodes(), std::set<std::string>{"n1"});
  agents.forget("n1");
  EXPECT_FALSE(agents.live("n1", kT0));
  EXPECT_TRUE(agents.programmed("n1").empty());
  EXPECT_EQ(agentLeaseNode(agentLease("n7", kWall)), "n7");
}

}  // namespace
}  // namespace egress::controller
