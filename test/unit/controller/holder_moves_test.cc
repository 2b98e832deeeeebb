// Which pod takes an entry nobody holds, and which entries move off a holder whose node's agent
// Lease is stale, and to which pod.
#include "pkg/controller/egressgateway/holder_moves.h"

#include <set>

#include <gtest/gtest.h>

namespace egress::controller {
namespace {

const meta::Time kNow = meta::Time(std::chrono::seconds(1'800'000'000));

struct PodSpec {
  std::string name;
  std::string node;
  bool ready = true;
  bool containersReady = true;
  bool terminating = false;
  int64_t created = 0;
};

EgressGatewayPolicyInfo info(const std::vector<PodSpec>& pods) {
  EgressGatewayPolicyInfo i;
  for (const auto& s : pods) {
    auto pod = std::make_shared<core::Pod>();
    pod->metadata.name = s.name;
    pod->metadata.creationTimestamp = meta::Time(std::chrono::seconds(s.created));
    pod->spec.nodeName = s.node;
    EgressPodInfo p;
    p.pod = pod;
    p.ready = s.ready;
    p.containersReady = s.containersReady;
    p.terminating = s.terminating;
    i.egressPods[s.name] = p;
  }
  return i;
}

auto freshNodes(std::set<std::string> nodes) {
  return [nodes = std::move(nodes)](const std::string& n) { return nodes.count(n) > 0; };
}

// Entries in ledger order, pods oldest first; a pod being deleted, not yet scheduled or holding an
// entry takes none, and a held entry keeps its holder, even one being deleted.
TEST(HolderMoves, AnEntryNobodyHoldsGoesToTheOldestIdlePod) {
  auto i = info({{"holder", "n1", true, true, true, 1},
                 {"young", "n2", false, false, false, 30},
                 {"old", "n3", false, false, false, 20},
                 {"leaving", "n4", true, true, true, 10},
                 {"unscheduled", "", false, false, false, 5}});
  const auto given = newHolders(i, {"holder", "", ""});
  ASSERT_EQ(given.size(), 2u);
  EXPECT_EQ(given[0].entry, 1u);
  EXPECT_EQ(given[0].from, "");
  EXPECT_EQ(given[0].to, "old");
  EXPECT_EQ(given[1].entry, 2u);
  EXPECT_EQ(given[1].to, "young");
  EXPECT_TRUE(newHolders(i, {"holder", "old", "young"}).empty());
  EXPECT_EQ(newHolders(i, {"", "old", "young"}).size(), 0u) << "no idle pod left";
}

TEST(HolderMoves, AStaleHoldersEntryMovesToTheOldestReadyPodOnAFreshNode) {
  auto i = info({{"a", "n1"},
                 {"b", "n2"},
                 {"spare-new", "n2", true, true, false, 20},
                 {"spare-old", "n3", true, true, false, 10}});
  const auto moves = staleHolderMoves(i, {"a", "b"}, freshNodes({"n2", "n3"}));
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].entry, 0u);
  EXPECT_EQ(moves[0].from, "a");
  EXPECT_EQ(moves[0].to, "spare-old");
}

TEST(HolderMoves, NothingMovesWhileTheHoldersLeaseIsFreshOrThereIsNoCandidate) {
  auto i = info({{"a", "n1"}, {"b", "n2"}});
  EXPECT_TRUE(staleHolderMoves(i, {"a", "b"}, freshNodes({"n1", "n2"})).empty());
  // Stale holder, but the only other pod holds an entry of its own: the entry stays.
  EXPECT_TRUE(staleHolderMoves(i, {"a", "b"}, freshNodes({"n2"})).empty());
}

TEST(HolderMoves, CandidatesAreLiveContainerReadyPodsOnFreshNodes) {
  auto i = info({{"a", "n1", true, true, true},  // a terminating stale holder moves too
                 {"deleting", "n2", true, true, true},
                 {"unready", "n2", false, false},
                 {"same-node", "n1"},
                 {"gated", "n2", false, true, false, 5}});  // not Ready only for want of an IP
  const auto moves = staleHolderMoves(i, {"a"}, freshNodes({"n2"}));
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].to, "gated");
}

TEST(HolderMoves, EachCandidateTakesOneEntryAndEmptyEntriesAreSkipped) {
  auto i = info({{"a", "n1"}, {"b", "n1"}, {"c", "n2", true, true, false, 1}});
  const auto moves = staleHolderMoves(i, {"", "a", "b"}, freshNodes({"n2"}));
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].entry, 1u);
  EXPECT_EQ(moves[0].from, "a");
  EXPECT_EQ(moves[0].to, "c");
}

TEST(HolderMoves, TheSwitchIsOperatorConfigSpecDataplaneAgent) {
  EXPECT_FALSE(agentEnabled(nullptr));
  v1alpha1::OperatorConfig c;
  EXPECT_FALSE(agentEnabled(&c));
  c.spec.dataplane = v1alpha1::DataplaneSpec{false};
  EXPECT_FALSE(agentEnabled(&c));
  c.spec.dataplane->agent = true;
  EXPECT_TRUE(agentEnabled(&c));
}

}  // namespace
}  // namespace egress::controller

namespace egress::controller {
namespace {

const ipam::Address kA = *ipam::parseAddress("203.0.113.1");
const ipam::Address kB = *ipam::parseAddress("203.0.113.2");
const ipam::Address kA6 = *ipam::parseAddress("2001:db8::1");

// The agents moved 203.0.113.1 off n1 (dead) to n2: the ledger follows, to n2's pod that holds
// an entry already; nothing moves where the report agrees with the ledger, is ambiguous (two
// nodes) or incomplete (a dual-stack entry half reported), or names a node without a pod.
TEST(HolderMoves, TheLedgerFollowsWhatTheAgentsReportHeld) {
  auto i = info({{"a", "n1"},
                 {"b", "n2", true, true, false, 20},
                 {"b-spare", "n2", true, true, false, 10},
                 {"c", "n3", true, true, false, 30}});
  std::map<ipam::Address, std::set<std::string>> reported{{kA, {"n2"}}, {kB, {"n2"}}};
  auto moves = reportedHolderMoves(i, {{kA}, {kB}}, {"a", "b"}, reported);
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].entry, 0u);
  EXPECT_EQ(moves[0].from, "a");
  EXPECT_EQ(moves[0].to, "b") << "the pod on n2 that holds an entry, not the older idle one";
  EXPECT_TRUE(moves[0].reported);
  // Nobody holds the entry in the ledger yet: it goes to n2 all the same.
  moves = reportedHolderMoves(i, {{kA}, {kB}}, {"", ""}, reported);
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(moves[0].to, "b-spare") << "none holds: the oldest";
  EXPECT_TRUE(reportedHolderMoves(i, {{kA}, {kB}}, {"b", "b"}, reported).empty());
  reported[kA] = {"n2", "n3"};
  EXPECT_TRUE(reportedHolderMoves(i, {{kA}}, {"a"}, reported).empty()) << "two nodes say so";
  reported[kA] = {"n2"};
  EXPECT_TRUE(reportedHolderMoves(i, {{kA, kA6}}, {"a"}, reported).empty()) << "half of it";
  reported[kA6] = {"n3"};
  EXPECT_TRUE(reportedHolderMoves(i, {{kA, kA6}}, {"a"}, reported).empty()) << "split";
  reported = {{kA, {"n9"}}};
  EXPECT_TRUE(reportedHolderMoves(i, {{kA}}, {"a"}, reported).empty()) << "no pod on n9";
  EXPECT_TRUE(reportedHolderMoves(i, {{kA}}, {"a"}, {}).empty());
}

}  // namespace
}  // namespace egress::controller
