#include "pkg/controller/agentlease/agents.h"

#include <gtest/gtest.h>

#include "pkg/controller/names.h"
#include "pkg/ipam/address.h"

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

// A changed problem report is something to act on (their policies' conditions follow it); only
// live agents' problems count, and a forgotten node's are gone.
TEST(Agents, ProblemsOfLiveAgentsCountByPolicyUID) {
  Agents agents;
  auto lease = agentLease("n1", kWall);
  EXPECT_FALSE(agents.observe(lease, kT0)) << "nothing reported, nothing changed";
  lease.metadata.annotations[std::string(kProblemsAnnotation)] =
      R"([{"uid":"u1","policy":"ns/a","reason":"NoMark","message":"no mark left","count":1}])";
  EXPECT_TRUE(agents.observe(lease, kT0 + 1s));
  EXPECT_FALSE(agents.observe(lease, kT0 + 2s)) << "a renewal with the same report";
  auto two = agentLease("n2", kWall);
  two.metadata.annotations = lease.metadata.annotations;
  EXPECT_TRUE(agents.observe(two, kT0 + 3s));
  auto p = agents.problemsOf("u1", kT0 + 4s);
  ASSERT_EQ(p.size(), 2U);
  EXPECT_EQ(p[0].node, "n1");
  EXPECT_EQ(p[0].reason, "NoMark");
  EXPECT_EQ(p[0].message, "no mark left");
  EXPECT_TRUE(agents.problemsOf("u2", kT0 + 4s).empty());
  // n1 was last seen at kT0 + 2s: stale 6 s later, while n2 is still live.
  p = agents.problemsOf("u1", kT0 + 8s);
  ASSERT_EQ(p.size(), 1U);
  EXPECT_EQ(p[0].node, "n2");
  EXPECT_EQ(agents.problems("n1").size(), 1U) << "kept while stale: the agent may come back";
  agents.forget("n2");
  EXPECT_TRUE(agents.problemsOf("u1", kT0 + 4s).size() == 1U);
  lease.metadata.annotations.erase(std::string(kProblemsAnnotation));
  EXPECT_TRUE(agents.observe(lease, kT0 + 5s));
  EXPECT_TRUE(agents.problemsOf("u1", kT0 + 5s).empty());
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

// settle() answers every recorded withdrawal from the least version a live agent reports: an
// agent that reports none holds them all back, one whose report is no integer is compared as
// text, a stale one does not count, and each catching up is returned once.
TEST(Agents, SettleReturnsAWaitingPolicyOnceEveryLiveAgentReachedItsVersion) {
  auto observedAt = [](const std::string& node, meta::Time renewed, const std::string& observed) {
    auto l = agentLease(node, renewed);
    if (!observed.empty()) {
      l.metadata.annotations[std::string(kObservedSlicesAnnotation)] = observed;
    }
    return l;
  };
  const auto one = *ipam::parseAddress("203.0.113.1");
  const auto two = *ipam::parseAddress("203.0.113.2");
  Agents agents;
  agents.observe(observedAt("a", kWall, "12"), kT0);
  agents.observe(observedAt("b", kWall, "9"), kT0);
  ASSERT_TRUE(agents.withdrawn(one, "10", "ns/one", kT0));
  ASSERT_TRUE(agents.withdrawn(two, "12", "ns/two", kT0));
  EXPECT_TRUE(agents.settle(kT0).empty());

  agents.observe(observedAt("b", kWall + 1s, "11"), kT0 + 1s);
  EXPECT_EQ(agents.settle(kT0 + 1s), std::set<std::string>{"ns/one"});
  EXPECT_TRUE(agents.settle(kT0 + 1s).empty()) << "once per catching up";

  // c turns live and reports nothing: it may answer for anything, so nothing is caught up.
  agents.observe(observedAt("b", kWall + 2s, "12"), kT0 + 2s);
  agents.observe(observedAt("c", kWall + 2s, ""), kT0 + 2s);
  EXPECT_TRUE(agents.settle(kT0 + 2s).empty());
  // A report that is no integer reaches only the same text.
  agents.observe(observedAt("c", kWall + 3s, "v12"), kT0 + 3s);
  EXPECT_TRUE(agents.settle(kT0 + 3s).empty());

  // c goes stale (no renewal seen for its 6 s); a and b renew: the two wait no longer.
  agents.observe(observedAt("a", kWall + 9s, "12"), kT0 + 9s);
  agents.observe(observedAt("b", kWall + 9s, "12"), kT0 + 9s);
  ASSERT_FALSE(agents.live("c", kT0 + 9s));
  EXPECT_EQ(agents.settle(kT0 + 9s), (std::set<std::string>{"ns/one", "ns/two"}));
}

}  // namespace
}  // namespace egress::controller
