// Generated codecs of networking.egressgateway.dev/v1alpha1: decode(encode(x)) == x for every
// kind with every field set, absent optional fields stay absent, int64 stays exact, unknown
// fields are ignored, and every invalid JSON in test/testdata/apis/networking/invalid fails with
// an error naming the field's path.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/apis/networking/v1alpha1/zz_generated.codec.h"

namespace egress::networking::v1alpha1 {
namespace {

template <class T, class Encode, class Decode>
T roundTrip(const T& in, Encode encode, Decode decode) {
  const std::string json = meta::encodeToString(in, encode);
  auto out = meta::parseAndDecode(json, decode);
  EXPECT_TRUE(out) << json << "\n" << (out ? "" : out.error().toString());
  return out ? *out : T{};
}

meta::Condition condition(const std::string& type) {
  meta::Condition c;
  c.type = type;
  c.status = meta::kConditionTrue;
  c.observedGeneration = 7;
  c.lastTransitionTime = meta::Time(std::chrono::seconds(1'790'000'000));
  c.reason = "Reason" + type;
  c.message = "message of " + type;
  return c;
}

meta::ObjectMeta objectMeta(const std::string& name, const std::string& ns) {
  meta::ObjectMeta m;
  m.name = name;
  m.namespace_ = ns;
  m.uid = "0b9f2c6e-1d7c-4d7e-9c61-5f3c2a1b0e9d";
  m.resourceVersion = "12345";
  m.labels = {{"team", "payments"}};
  m.annotations = {{"note", "x"}};
  m.finalizers = {"egressgateway.dev/ledger"};
  return m;
}

GatewaySpec fullGateway() {
  GatewaySpec g;
  g.replicas = 3;
  g.nodeSelector = {{"egress", "true"}};
  Toleration t;
  t.key = "dedicated";
  t.operator_ = "Equal";
  t.value = "egress";
  t.effect = "NoExecute";
  t.tolerationSeconds = 9'007'199'254'740'993;  // 2^53 + 1: not exact as a double
  g.tolerations = {t, Toleration{"", "Exists", "", "", std::nullopt}};
  g.resources = ResourceRequirements{{{"cpu", "500m"}}, {{"cpu", "100m"}, {"memory", "64Mi"}}};
  g.priorityClassName = "system-cluster-critical";
  return g;
}

TEST(CodecTest, IPAMPoolRoundTripsWithEveryFieldSet) {
  IPAMPool p;
  p.metadata = objectMeta("corp", "");
  p.spec.cidrs = {"203.0.113.0/28", "2001:db8:100::/120"};
  p.spec.exclude = {"203.0.113.1"};
  p.spec.disabled = true;
  p.spec.namespaceSelector = meta::LabelSelector{{{"team", "payments"}}, {}};
  p.status.ipv4 = IPFamilyCounts{13, 2, 11};
  p.status.ipv6 = IPFamilyCounts{256, 0, 256};
  p.status.allocated = 2;
  p.status.observedGeneration = 4;
  p.status.conditions = {condition("Ready"), condition("Exhausted")};
  EXPECT_EQ(roundTrip(p, encodeIPAMPool, decodeIPAMPool), p);
}

TEST(CodecTest, EgressGatewayPolicyRoundTripsWithEveryFieldSet) {
  EgressGatewayPolicy e;
  e.metadata = objectMeta("billing", "payments");
  e.spec.podSelector.matchLabels = {{"app", "billing"}};
  meta::LabelSelectorRequirement r;
  r.key = "tier";
  r.op = meta::SelectorOperator::NotIn;
  r.values = {"dev", "test"};
  e.spec.podSelector.matchExpressions = {r};
  e.spec.destinationCIDRs = {"0.0.0.0/0", "::/0"};
  e.spec.excludedCIDRs = {"10.0.0.0/8"};
  e.spec.egressIP.pool = "corp";
  e.spec.egressIP.addresses = {"203.0.113.5", "2001:db8:100::5"};
  e.spec.egressIP.ipFamily = "DualStack";
  e.spec.gateway = fullGateway();
  e.status.pool = "corp";
  e.status.egressIPs = {"203.0.113.5", "2001:db8:100::5", "203.0.113.6", "2001:db8:100::6"};
  e.status.gateways = {
      GatewayStatus{{"203.0.113.5", "2001:db8:100::5"}, "egw-billing-1", "3f2c9a", "n1", true},
      GatewayStatus{{"203.0.113.6", "2001:db8:100::6"}, "", "", "", false}};
  e.status.selectedPods = 12;
  e.status.observedGeneration = 3;
  e.status.conditions = {condition("Ready")};
  const auto back = roundTrip(e, encodeEgressGatewayPolicy, decodeEgressGatewayPolicy);
  EXPECT_EQ(back, e);
  EXPECT_EQ(back.spec.gateway.tolerations[0].tolerationSeconds, 9'007'199'254'740'993);
  // A ledger entry no pod holds yet: only its addresses are written.
  EXPECT_THAT(meta::encodeToString(e.status.gateways[1], encodeGatewayStatus),
              ::testing::StrEq(R"({"egressIPs":["203.0.113.6","2001:db8:100::6"]})"));
}

TEST(CodecTest, AnEmptyPoolNamespaceSelectorIsPresent) {
  IPAMPool p;
  p.spec.cidrs = {"203.0.113.0/28"};
  p.spec.namespaceSelector = meta::LabelSelector{};
  const auto back = roundTrip(p, encodeIPAMPool, decodeIPAMPool);
  ASSERT_TRUE(back.spec.namespaceSelector.has_value()) << "an empty selector is still present";
  EXPECT_TRUE(back.spec.namespaceSelector->empty());
}

// Quantities keep the text given; a JSON integer becomes its decimal text, written back as a
// string (as apimachinery writes quantities).
TEST(CodecTest, QuantitiesDecodeFromIntegersAndStrings) {
  auto c = meta::parseAndDecode(
      R"({"metadata":{"name":"default"},"spec":{"gatewayImage":"i","gatewayDefaults":{)"
      R"("resources":{"limits":{"cpu":2,"memory":"128Mi"},"requests":{"cpu":"0.5"}}}}})",
      decodeOperatorConfig);
  ASSERT_TRUE(c) << c.error().toString();
  const auto& r = *c->spec.gatewayDefaults->resources;
  EXPECT_EQ(r.limits, (meta::QuantityMap{{"cpu", "2"}, {"memory", "128Mi"}}));
  EXPECT_EQ(r.requests, (meta::QuantityMap{{"cpu", "0.5"}}));
  EXPECT_THAT(meta::encodeToString(*c, encodeOperatorConfig),
              ::testing::HasSubstr(R"("resources":{"limits":{"cpu":"2","memory":"128Mi"},)"
                                   R"("requests":{"cpu":"0.5"}})"));
  EXPECT_EQ(roundTrip(*c, encodeOperatorConfig, decodeOperatorConfig), *c);
}

TEST(CodecTest, OperatorConfigRoundTripsWithEveryFieldSet) {
  OperatorConfig c;
  c.metadata = objectMeta("default", "");
  c.spec.gatewayImage = "registry.example/egress-gateway:1.2.3";
  c.spec.defaultPool = "corp";
  c.spec.gatewayDefaults = fullGateway();
  c.spec.clusterCIDRs = {"10.244.0.0/16", "10.96.0.0/12", "fd00:10:244::/56", "fd00:10:96::/112"};
  c.spec.dataplane = DataplaneSpec{true};
  c.status = OperatorConfigStatus{10, 9, 2, 5, {condition("Ready")}};
  EXPECT_EQ(roundTrip(c, encodeOperatorConfig, decodeOperatorConfig), c);
}

// spec.dataplane.agent switches the agent's side of the operator on; absent is false.
TEST(CodecTest, OperatorConfigDataplaneAgentDecodes) {
  auto on = meta::parseAndDecode(
      R"({"metadata":{"name":"default"},"spec":{"gatewayImage":"i","dataplane":{"agent":true}}})",
      decodeOperatorConfig);
  ASSERT_TRUE(on) << on.error().toString();
  ASSERT_TRUE(on->spec.dataplane);
  EXPECT_TRUE(on->spec.dataplane->agent);
  auto absent = meta::parseAndDecode(
      R"({"metadata":{"name":"default"},"spec":{"gatewayImage":"i"}})", decodeOperatorConfig);
  ASSERT_TRUE(absent) << absent.error().toString();
  EXPECT_FALSE(absent->spec.dataplane);
}

TEST(CodecTest, EmptyObjectsRoundTrip) {
  EXPECT_EQ(roundTrip(IPAMPool{}, encodeIPAMPool, decodeIPAMPool), IPAMPool{});
  EXPECT_EQ(roundTrip(EgressGatewayPolicy{}, encodeEgressGatewayPolicy, decodeEgressGatewayPolicy),
            EgressGatewayPolicy{});
  EXPECT_EQ(roundTrip(OperatorConfig{}, encodeOperatorConfig, decodeOperatorConfig),
            OperatorConfig{});
}

TEST(CodecTest, AbsentOptionalFieldsStayAbsentAndAreNotWritten) {
  auto e = meta::parseAndDecode(
      R"({"metadata":{"name":"e"},"spec":{"podSelector":{},"egressIP":{},"gateway":{}}})",
      decodeEgressGatewayPolicy);
  ASSERT_TRUE(e) << e.error().toString();
  EXPECT_FALSE(e->spec.gateway.replicas.has_value());
  EXPECT_FALSE(e->spec.gateway.resources.has_value());
  const std::string json = meta::encodeToString(*e, encodeEgressGatewayPolicy);
  EXPECT_THAT(json, ::testing::Not(::testing::HasSubstr("replicas")));
  EXPECT_THAT(json, ::testing::Not(::testing::HasSubstr("pool")));
  EXPECT_THAT(json, ::testing::Not(::testing::HasSubstr("addresses")));
  EXPECT_THAT(
      json,
      ::testing::HasSubstr(
          R"("apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"EgressGatewayPolicy")"));

  auto zero = meta::parseAndDecode(
      R"({"spec":{"podSelector":{},"egressIP":{"pool":"p"},"gateway":{"replicas":0}}})",
      decodeEgressGatewayPolicy);
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->spec.gateway.replicas, 0) << "zero is not absent";

  auto pool = meta::parseAndDecode(R"({"spec":{"cidrs":["10.0.0.0/24"]}})", decodeIPAMPool);
  ASSERT_TRUE(pool);
  EXPECT_FALSE(pool->spec.namespaceSelector.has_value()) << "absent: every namespace";
  EXPECT_THAT(meta::encodeToString(*pool, encodeIPAMPool),
              ::testing::Not(::testing::HasSubstr("namespaceSelector")));
}

TEST(CodecTest, UnknownFieldsAreIgnored) {
  auto p = meta::parseAndDecode(
      R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"IPAMPool","future":{"x":1},)"
      R"("metadata":{"name":"p","managedFields":[{}]},"spec":{"cidrs":["10.0.0.0/24"],"v2":true}})",
      decodeIPAMPool);
  ASSERT_TRUE(p) << p.error().toString();
  EXPECT_EQ(p->spec.cidrs, std::vector<std::string>{"10.0.0.0/24"});
  // v1alpha1 dropped a policy's namespaceSelector: an old object still decodes.
  auto e = meta::parseAndDecode(
      R"({"spec":{"podSelector":{},"namespaceSelector":{"matchLabels":{"a":"b"}},"egressIP":{}}})",
      decodeEgressGatewayPolicy);
  ASSERT_TRUE(e) << e.error().toString();
  EXPECT_THAT(meta::encodeToString(*e, encodeEgressGatewayPolicy),
              ::testing::Not(::testing::HasSubstr("namespaceSelector")));
}

TEST(CodecTest, Int64FieldsStayExact) {
  auto p = meta::parseAndDecode(
      R"({"spec":{"cidrs":["2001:db8::/64"]},"status":{"ipv6":{"total":9223372036854775807,)"
      R"("allocated":9007199254740993,"free":9223372036845768814}}})",
      decodeIPAMPool);
  ASSERT_TRUE(p) << p.error().toString();
  EXPECT_EQ(p->status.ipv6->total, INT64_MAX);
  EXPECT_EQ(p->status.ipv6->allocated, 9'007'199'254'740'993);
  const std::string json = meta::encodeToString(*p, encodeIPAMPool);
  EXPECT_THAT(json, ::testing::HasSubstr("9223372036854775807"));
  EXPECT_THAT(json, ::testing::HasSubstr("9007199254740993"));
}

// Every file in testdata/apis/networking/invalid has an expectation, and fails with it.
TEST(CodecTest, EveryInvalidJsonInTestdataFailsNamingTheField) {
  const std::filesystem::path dir =
      std::filesystem::path(EGRESS_TESTDATA_DIR) / "apis/networking/invalid";
  std::map<std::string, std::string> expected;
  std::ifstream list(dir / "expected.txt");
  ASSERT_TRUE(list) << "missing " << (dir / "expected.txt");
  for (std::string line; std::getline(list, line);) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    const auto sp = line.find(' ');
    expected[line.substr(0, sp)] = line.substr(sp + 1);
  }
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".json") {
      continue;
    }
    ASSERT_TRUE(expected.count(name)) << name << " has no line in expected.txt";
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    // Every kind's decoder must reject it the same way: the files differ only in fields.
    const std::string kind = text.str().find("\"OperatorConfig\"") != std::string::npos ? "oc"
                             : text.str().find("\"IPAMPool\"") != std::string::npos     ? "ipp"
                                                                                        : "egp";
    std::string error;
    if (kind == "oc") {
      auto r = meta::parseAndDecode(text.str(), decodeOperatorConfig);
      error = r ? "" : r.error().toString();
    } else if (kind == "ipp") {
      auto r = meta::parseAndDecode(text.str(), decodeIPAMPool);
      error = r ? "" : r.error().toString();
    } else {
      auto r = meta::parseAndDecode(text.str(), decodeEgressGatewayPolicy);
      error = r ? "" : r.error().toString();
    }
    EXPECT_THAT(error, ::testing::StartsWith(expected[name])) << name;
    std::printf("%-34s -> %s\n", name.c_str(), error.c_str());
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(expected.size())) << "expected.txt names missing files";
  EXPECT_GE(checked, 10);
}

}  // namespace
}  // namespace egress::networking::v1alpha1
