#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pkg/apis/core/config_map.h"
#include "pkg/apis/core/event.h"
#include "pkg/apis/core/namespace.h"
#include "pkg/apis/core/node.h"
#include "pkg/apis/core/pod.h"
#include "pkg/apis/meta/object_list.h"
#include "test/unit/apis/testing.h"

namespace egress::core {
namespace {

using egress::testing::errorOf;
using egress::testing::readTestdata;
using egress::testing::utc;
using meta::parseAndDecode;

TEST(Pod, DecodesARealPod) {
  auto pod = parseAndDecode(readTestdata("pod.json"), decodePod);
  ASSERT_TRUE(pod) << pod.error().toString();
  EXPECT_EQ(pod->metadata.name, "egress-gw-prod-7d9f8b6c5-x2k4q");
  EXPECT_EQ(pod->metadata.labels.at("egress.example.com/gateway"), "prod");
  EXPECT_EQ(pod->spec.nodeName, "worker-3");
  EXPECT_TRUE(pod->spec.hostNetwork);
  EXPECT_EQ(pod->status.phase, "Running");
  EXPECT_EQ(pod->status.podIPs, (std::vector<std::string>{"10.0.1.17", "fd00:10:0:1::17"}));
  ASSERT_EQ(pod->status.conditions.size(), 5u);
  EXPECT_EQ(pod->status.conditions[2], (PodCondition{"Ready", "True"}));
  EXPECT_TRUE(isPodReady(*pod));
}

TEST(Pod, Readiness) {
  Pod pod;
  EXPECT_FALSE(isPodReady(pod));
  pod.status.conditions = {{"PodScheduled", "True"}, {"Ready", "False"}};
  EXPECT_FALSE(isPodReady(pod));
  pod.status.conditions[1].status = "Unknown";
  EXPECT_FALSE(isPodReady(pod));
  pod.status.conditions[1].status = "True";
  EXPECT_TRUE(isPodReady(pod));
}

TEST(Pod, PendingPodHasNoIPs) {
  auto pod = parseAndDecode(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]},
                               "status":{"phase":"Pending","qosClass":"BestEffort"}})",
                            decodePod);
  ASSERT_TRUE(pod) << pod.error().toString();
  EXPECT_TRUE(pod->status.podIPs.empty());
  EXPECT_FALSE(pod->spec.hostNetwork);
  EXPECT_FALSE(isPodReady(*pod));
}

// A server before 1.16 sends status.podIP alone; it becomes the one entry of podIPs. When both are
// there, podIPs is the whole truth.
TEST(Pod, PodIPAloneBecomesTheOnlyPodIP) {
  auto old =
      parseAndDecode(R"({"metadata":{"name":"a"},"status":{"podIP":"10.0.0.9"}})", decodePod);
  ASSERT_TRUE(old) << old.error().toString();
  EXPECT_EQ(old->status.podIPs, (std::vector<std::string>{"10.0.0.9"}));
  auto both = parseAndDecode(R"({"metadata":{"name":"a"},"status":{"podIP":"10.0.0.9",)"
                             R"("podIPs":[{"ip":"10.0.0.9"},{"ip":"fd00::9"}]}})",
                             decodePod);
  ASSERT_TRUE(both) << both.error().toString();
  EXPECT_EQ(both->status.podIPs, (std::vector<std::string>{"10.0.0.9", "fd00::9"}));
}

TEST(Pod, WrongTypesCarryThePath) {
  EXPECT_EQ(
      errorOf(parseAndDecode(
          R"({"status":{"conditions":[{"type":"Ready","status":"True"},{"type":3}]}})", decodePod)),
      "status.conditions[1].type: expected string");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"status":{"podIPs":[{"ip":10}]}})", decodePod)),
            "status.podIPs[0].ip: expected string");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"spec":{"hostNetwork":"true"}})", decodePod)),
            "spec.hostNetwork: expected boolean");
}

TEST(Pod, DecodesAPodList) {
  const std::string pod = readTestdata("pod.json");
  const std::string json =
      R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"48213400"},"items":[)" +
      pod + "," + pod + R"(,{"metadata":{"name":"broken","labels":{"x":1}}}]})";
  auto decode = [](const rapidjson::Value& v) { return meta::decodeList(v, decodePod); };
  EXPECT_EQ(errorOf(parseAndDecode(json, decode)),
            "items[2].metadata.labels[\"x\"]: expected string");
  const std::string good =
      R"({"kind":"PodList","metadata":{"resourceVersion":"48213400"},"items":[)" + pod + "," + pod +
      "]}";
  auto list = parseAndDecode(good, decode);
  ASSERT_TRUE(list) << list.error().toString();
  EXPECT_EQ(list->metadata.resourceVersion, "48213400");
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->items[0], list->items[1]);
  EXPECT_EQ(list->items[1].status.podIPs.front(), "10.0.1.17");
}

TEST(Node, DecodesARealNode) {
  auto node = parseAndDecode(readTestdata("node.json"), decodeNode);
  ASSERT_TRUE(node) << node.error().toString();
  EXPECT_EQ(node->metadata.name, "worker-3");
  EXPECT_EQ(node->metadata.namespace_, "");
  EXPECT_TRUE(node->unschedulable);
  ASSERT_EQ(node->taints.size(), 2u);
  EXPECT_EQ(node->taints[0], (Taint{"node.kubernetes.io/unschedulable", "", "NoSchedule"}));
  EXPECT_EQ(node->taints[1], (Taint{"egress.example.com/dedicated", "gateway", "NoExecute"}));
  ASSERT_EQ(node->addresses.size(), 3u);
  EXPECT_EQ(nodeAddress(*node, "InternalIP"), "192.168.10.13");
  EXPECT_EQ(nodeAddress(*node, "ExternalIP"), "203.0.113.23");
  EXPECT_EQ(nodeAddress(*node, "ExternalDNS"), "");
  EXPECT_EQ(node->podCIDRs, std::vector<std::string>{"10.0.1.0/24"});
  ASSERT_EQ(node->conditions.size(), 2u);
  EXPECT_TRUE(isNodeReady(*node));
  node->conditions[1].status = "Unknown";
  EXPECT_FALSE(isNodeReady(*node));
  EXPECT_EQ(errorOf(parseAndDecode(R"({"spec":{"taints":[{"key":"k","effect":1}]}})", decodeNode)),
            "spec.taints[0].effect: expected string");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"spec":{"unschedulable":1}})", decodeNode)),
            "spec.unschedulable: expected boolean");
}

// Dual-stack servers list both families in spec.podCIDRs; before 1.16 there is spec.podCIDR only.
TEST(Node, PodCIDRsFromEitherField) {
  auto dual = parseAndDecode(
      R"({"spec":{"podCIDR":"10.244.1.0/24","podCIDRs":["10.244.1.0/24","fd00:10:244:1::/64"]}})",
      decodeNode);
  ASSERT_TRUE(dual) << dual.error().toString();
  EXPECT_EQ(dual->podCIDRs, (std::vector<std::string>{"10.244.1.0/24", "fd00:10:244:1::/64"}));
  auto old = parseAndDecode(R"({"spec":{"podCIDR":"10.244.1.0/24"}})", decodeNode);
  ASSERT_TRUE(old) << old.error().toString();
  EXPECT_EQ(old->podCIDRs, std::vector<std::string>{"10.244.1.0/24"});
  auto none = parseAndDecode(R"({"spec":{}})", decodeNode);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->podCIDRs.empty());
}

TEST(Namespace, DecodesPhase) {
  auto ns = parseAndDecode(
      R"({"kind":"Namespace","apiVersion":"v1","metadata":{"name":"egress-system",
          "deletionTimestamp":"2026-11-30T03:27:13Z","labels":{"kubernetes.io/metadata.name":"egress-system"}},
          "spec":{"finalizers":["kubernetes"]},"status":{"phase":"Terminating",
          "conditions":[{"type":"NamespaceDeletionDiscoveryFailure","status":"False"}]}})",
      decodeNamespace);
  ASSERT_TRUE(ns) << ns.error().toString();
  EXPECT_EQ(ns->metadata.name, "egress-system");
  EXPECT_EQ(ns->phase, "Terminating");
  EXPECT_TRUE(ns->metadata.deletionTimestamp.has_value());
  EXPECT_EQ(errorOf(parseAndDecode(R"({"status":{"phase":0}})", decodeNamespace)),
            "status.phase: expected string");
}

TEST(ConfigMap, DecodesData) {
  auto cm = parseAndDecode(
      R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"egress-config","namespace":"egress-system"},
          "data":{"routes.yaml":"- cidr: 0.0.0.0/0\n  via: gw\n","mode":"strict"},
          "binaryData":{"blob":"AAEC"}})",
      decodeConfigMap);
  ASSERT_TRUE(cm) << cm.error().toString();
  EXPECT_EQ(cm->data.size(), 2u);
  EXPECT_EQ(cm->data.at("routes.yaml"), "- cidr: 0.0.0.0/0\n  via: gw\n");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"data":{"n":1}})", decodeConfigMap)),
            "data[\"n\"]: expected string");
}

TEST(Event, DecodesARealEvent) {
  auto e = parseAndDecode(readTestdata("event.json"), decodeEvent);
  ASSERT_TRUE(e) << e.error().toString();
  EXPECT_EQ(e->metadata.name, "prod.187c2b3a4d5e6f70");
  EXPECT_EQ(e->involvedObject, (ObjectReference{"EgressGateway", "egress-system", "prod",
                                                "0badf00d-0000-4000-8000-000000000001",
                                                "egress.example.com/v1alpha1", "48213377"}));
  EXPECT_EQ(e->reason, "RolloutComplete");
  EXPECT_EQ(e->type, "Normal");
  EXPECT_EQ(e->count, 2);
  EXPECT_EQ(e->firstTimestamp, utc(2026, 11, 30, 3, 27, 20));
  EXPECT_EQ(e->lastTimestamp, utc(2026, 11, 30, 3, 29, 41));
  EXPECT_EQ(e->sourceComponent, "egress-gateway-operator");
  EXPECT_EQ(e->reportingComponent, "egress-gateway-operator");
  EXPECT_EQ(e->reportingInstance, "egress-operator-5b8c9d-7xq2z");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"count":"2"})", decodeEvent)), "count: expected integer");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"involvedObject":{"uid":5}})", decodeEvent)),
            "involvedObject.uid: expected string");
  EXPECT_EQ(errorOf(parseAndDecode(R"({"source":{"component":[]}})", decodeEvent)),
            "source.component: expected string");
}

TEST(Event, EncodeDecodeRoundTrip) {
  Event e;
  e.metadata.name = "prod.187c2b3a4d5e6f70";
  e.metadata.namespace_ = "egress-system";
  e.involvedObject = {"EgressGateway",
                      "egress-system",
                      "prod",
                      "0badf00d-0000-4000-8000-000000000001",
                      "egress.example.com/v1alpha1",
                      ""};
  e.reason = "RolloutStuck";
  e.message = "Deployment \"egress-gw-prod\" exceeded its progress deadline";
  e.type = std::string(kEventTypeWarning);
  e.count = 1;
  e.firstTimestamp = utc(2026, 11, 30, 3, 27, 20);
  e.lastTimestamp = utc(2026, 11, 30, 3, 27, 20);
  e.sourceComponent = "egress-gateway-operator";
  e.reportingComponent = "egress-gateway-operator";
  e.reportingInstance = "egress-operator-5b8c9d-7xq2z";
  const std::string json = meta::encodeToString(e, encodeEvent);
  EXPECT_EQ(
      json,
      R"({"apiVersion":"v1","kind":"Event","metadata":{"name":"prod.187c2b3a4d5e6f70",)"
      R"("namespace":"egress-system"},"involvedObject":{"kind":"EgressGateway",)"
      R"("namespace":"egress-system","name":"prod","uid":"0badf00d-0000-4000-8000-000000000001",)"
      R"("apiVersion":"egress.example.com/v1alpha1"},"reason":"RolloutStuck",)"
      R"("message":"Deployment \"egress-gw-prod\" exceeded its progress deadline",)"
      R"("type":"Warning","count":1,"firstTimestamp":"2026-11-30T03:27:20Z",)"
      R"("lastTimestamp":"2026-11-30T03:27:20Z","source":{"component":"egress-gateway-operator"},)"
      R"("reportingComponent":"egress-gateway-operator",)"
      R"("reportingInstance":"egress-operator-5b8c9d-7xq2z"})");
  auto back = parseAndDecode(json, decodeEvent);
  ASSERT_TRUE(back) << back.error().toString();
  EXPECT_EQ(*back, e);

  auto real = parseAndDecode(readTestdata("event.json"), decodeEvent);
  ASSERT_TRUE(real);
  auto again = parseAndDecode(meta::encodeToString(*real, encodeEvent), decodeEvent);
  ASSERT_TRUE(again) << again.error().toString();
  // The encoder writes the client-settable metadata only; the rest survives.
  real->metadata.creationTimestamp = {};
  EXPECT_EQ(*again, *real);
}

}  // namespace
}  // namespace egress::core
