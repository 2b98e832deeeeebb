#include "test/testenv_kubelet/fake_node.h"

#include <string>

#include <gtest/gtest.h>

#include "test/unit/testenv_kubelet/json.h"

namespace egress::testenv {
namespace {

TEST(FakeNode, NamesAndAddressesFollowTheIndex) {
  EXPECT_EQ(nodeName(7), "egress-node-7");
  EXPECT_EQ(nodePodCidr(7), "10.244.7.0/24");
  EXPECT_EQ(nodeInternalIp(7), "127.0.1.7");
}

TEST(FakeNode, NodeIndexKnowsOnlyTheRegisteredNames) {
  EXPECT_EQ(nodeIndex("egress-node-1", 3), 1);
  EXPECT_EQ(nodeIndex("egress-node-3", 3), 3);
  EXPECT_EQ(nodeIndex("egress-node-4", 3), 0);
  EXPECT_EQ(nodeIndex("egress-node-0", 3), 0);
  EXPECT_EQ(nodeIndex("egress-node-01", 3), 0);
  EXPECT_EQ(nodeIndex("egress-node-1x", 3), 0);
  EXPECT_EQ(nodeIndex("egress-node-", 3), 0);
  EXPECT_EQ(nodeIndex("egress-node--1", 3), 0);
  EXPECT_EQ(nodeIndex("worker-1", 3), 0);
  EXPECT_EQ(nodeIndex("", 3), 0);
}

TEST(FakeNode, ApplyBodyCarriesTheLabelsAndPodCidrOfKubeletSh) {
  auto d = parse(nodeApplyBody(2));
  EXPECT_EQ(str(d["apiVersion"]), "v1");
  EXPECT_EQ(str(d["kind"]), "Node");
  EXPECT_EQ(str(d["metadata"]["name"]), "egress-node-2");
  const auto& labels = d["metadata"]["labels"];
  EXPECT_EQ(labels.MemberCount(), 4u);
  EXPECT_EQ(str(labels["kubernetes.io/hostname"]), "egress-node-2");
  EXPECT_EQ(str(labels["kubernetes.io/os"]), "linux");
  EXPECT_EQ(str(labels["kubernetes.io/arch"]), "amd64");
  EXPECT_EQ(str(labels["egress.testenv/fake"]), "true");
  EXPECT_EQ(str(d["spec"]["podCIDR"]), "10.244.2.0/24");
  ASSERT_EQ(d["spec"]["podCIDRs"].Size(), 1u);
  EXPECT_EQ(str(d["spec"]["podCIDRs"][0]), "10.244.2.0/24");
}

TEST(FakeNode, StatusPatchIsReadyWithCapacityAddressesAndNodeInfo) {
  const auto now = *meta::parseRfc3339("2026-01-02T03:04:05Z");
  auto d = parse(nodeStatusPatch(3, now));
  const auto& s = d["status"];
  for (const char* key : {"capacity", "allocatable"}) {
    EXPECT_EQ(str(s[key]["cpu"]), "16") << key;
    EXPECT_EQ(str(s[key]["memory"]), "64Gi") << key;
    EXPECT_EQ(str(s[key]["pods"]), "250") << key;
    EXPECT_EQ(str(s[key]["ephemeral-storage"]), "100Gi") << key;
  }
  ASSERT_EQ(s["addresses"].Size(), 2u);
  EXPECT_EQ(str(s["addresses"][0]["type"]), "InternalIP");
  EXPECT_EQ(str(s["addresses"][0]["address"]), "127.0.1.3");
  EXPECT_EQ(str(s["addresses"][1]["type"]), "Hostname");
  EXPECT_EQ(str(s["addresses"][1]["address"]), "egress-node-3");
  const auto& conditions = s["conditions"];
  ASSERT_EQ(conditions.Size(), 4u);
  const char* types[] = {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"};
  const char* statuses[] = {"True", "False", "False", "False"};
  const char* reasons[] = {"KubeletReady", "KubeletHasSufficientMemory", "KubeletHasNoDiskPressure",
                           "KubeletHasSufficientPID"};
  for (rapidjson::SizeType i = 0; i < 4; ++i) {
    EXPECT_EQ(str(conditions[i]["type"]), types[i]);
    EXPECT_EQ(str(conditions[i]["status"]), statuses[i]);
    EXPECT_EQ(str(conditions[i]["reason"]), reasons[i]);
    EXPECT_EQ(str(conditions[i]["lastHeartbeatTime"]), "2026-01-02T03:04:05Z");
    EXPECT_EQ(str(conditions[i]["lastTransitionTime"]), "2026-01-02T03:04:05Z");
  }
  EXPECT_EQ(str(conditions[0]["message"]), "egress test kubelet");
  EXPECT_EQ(str(s["nodeInfo"]["kubeletVersion"]), "v1.20.0-egress-testenv");
  EXPECT_EQ(str(s["nodeInfo"]["containerRuntimeVersion"]), "fake://0");
  EXPECT_EQ(str(s["nodeInfo"]["osImage"]), "egress testenv");
  EXPECT_EQ(str(s["nodeInfo"]["operatingSystem"]), "linux");
  EXPECT_EQ(str(s["nodeInfo"]["architecture"]), "amd64");
}

TEST(FakeNode, TaintPatchRemovesOnlyTheNotReadyNoScheduleTaintWhereItWasRead) {
  core::Node node;
  node.taints = {{"example.com/dedicated", "gateways", "NoSchedule"},
                 {"node.kubernetes.io/not-ready", "", "NoExecute"},
                 {"node.kubernetes.io/not-ready", "", "NoSchedule"}};
  auto d = parse(removeNotReadyTaintPatch(node));
  ASSERT_TRUE(d.IsArray());
  ASSERT_EQ(d.Size(), 3u);
  EXPECT_EQ(str(d[0]["op"]), "test");
  EXPECT_EQ(str(d[0]["path"]), "/spec/taints/2/key");
  EXPECT_EQ(str(d[0]["value"]), "node.kubernetes.io/not-ready");
  EXPECT_EQ(str(d[1]["op"]), "test");
  EXPECT_EQ(str(d[1]["path"]), "/spec/taints/2/effect");
  EXPECT_EQ(str(d[1]["value"]), "NoSchedule");
  EXPECT_EQ(str(d[2]["op"]), "remove");
  EXPECT_EQ(str(d[2]["path"]), "/spec/taints/2");
}

TEST(FakeNode, NoTaintPatchWithoutTheNotReadyNoScheduleTaint) {
  core::Node node;
  EXPECT_EQ(removeNotReadyTaintPatch(node), "");
  node.taints = {{"node.kubernetes.io/not-ready", "", "NoExecute"},
                 {"node.kubernetes.io/unschedulable", "", "NoSchedule"}};
  EXPECT_EQ(removeNotReadyTaintPatch(node), "");
}

}  // namespace
}  // namespace egress::testenv
