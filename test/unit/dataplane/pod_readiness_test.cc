// The agent's side of the gateway pods' readiness gate: which local pods get the condition
// written, and the patch that writes it.
#include "pkg/agent/pod_readiness.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "pkg/dataplane/cluster_view.h"

namespace egress::agent {
namespace {

std::shared_ptr<const core::Pod> pod(const std::string& name, const std::string& node,
                                     const std::string& condition = "") {
  auto p = std::make_shared<core::Pod>();
  p->metadata.namespace_ = "team-a";
  p->metadata.name = name;
  p->metadata.resourceVersion = "7";
  p->spec.nodeName = node;
  p->status.conditions.push_back({"Ready", "True"});
  if (!condition.empty()) {
    p->status.conditions.push_back({std::string(dataplane::kIPProgrammedCondition), condition});
  }
  return p;
}

std::vector<std::string> names(const std::vector<ReadinessWrite>& writes, bool programmed) {
  std::vector<std::string> out;
  for (const auto& w : writes) {
    if (w.programmed == programmed) {
      out.push_back(w.name);
    }
  }
  return out;
}

TEST(PodReadiness, ProgrammedLocalPodsAreSetTrueOnceAndWithdrawnOnesFalse) {
  const std::vector<std::shared_ptr<const core::Pod>> pods{
      pod("new", "n1"),                // programmed, no condition yet: True
      pod("done", "n1", "True"),       // programmed and True already: nothing
      pod("waiting", "n1"),            // not programmed, no condition: nothing
      pod("withdrawn", "n1", "True"),  // True but no longer programmed: False
      pod("off", "n1", "False"),       // False and not programmed: nothing
      pod("back", "n1", "False"),      // False and programmed again: True
      pod("elsewhere", "n2"),          // another node's: never ours to write
  };
  const auto writes =
      readinessWrites(pods, "n1", {"team-a/back", "team-a/done", "team-a/elsewhere", "team-a/new"});
  EXPECT_EQ(names(writes, true), (std::vector<std::string>{"new", "back"}));
  EXPECT_EQ(names(writes, false), (std::vector<std::string>{"withdrawn"}));
  EXPECT_EQ(writes.front().resourceVersion, "7");
}

TEST(PodReadiness, PodsBeingDeletedAreLeftAlone) {
  auto p = std::make_shared<core::Pod>(*pod("going", "n1", "True"));
  p->metadata.deletionTimestamp = meta::Time{};
  EXPECT_TRUE(readinessWrites({p}, "n1", {}).empty());
}

TEST(PodReadiness, ThePatchSetsOnlyTheGateConditionSoAStrategicMergeKeepsTheOthers) {
  const auto body = readinessPatch({"team-a", "gw", true, "7"}, "n1", meta::Time{});
  rapidjson::Document d;
  d.Parse(body.c_str());
  ASSERT_FALSE(d.HasParseError()) << body;
  ASSERT_EQ(d.MemberCount(), 1u);
  const auto& conditions = d["status"]["conditions"];
  ASSERT_EQ(conditions.Size(), 1u);
  EXPECT_STREQ(conditions[0]["type"].GetString(), "egressgateway.dev/ip-programmed");
  EXPECT_STREQ(conditions[0]["status"].GetString(), "True");
  EXPECT_STREQ(conditions[0]["reason"].GetString(), "Programmed");
  EXPECT_TRUE(conditions[0].HasMember("lastTransitionTime"));
  const auto off = readinessPatch({"team-a", "gw", false, "7"}, "n1", meta::Time{});
  EXPECT_NE(off.find(R"("status":"False")"), std::string::npos) << off;
}

}  // namespace
}  // namespace egress::agent
