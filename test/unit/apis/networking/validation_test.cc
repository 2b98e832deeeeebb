// validate() of networking.egressgateway.dev/v1alpha1: the schema markers (generated checks),
// every CEL rule of types.h (which our 1.20 test API server ignores) and the semantic checks,
// each with the field path in the error; plus the IP/CIDR formats as the API server parses them.
#include "pkg/apis/networking/v1alpha1/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/apis/networking/v1alpha1/zz_generated.codec.h"
#include "pkg/apis/validation/formats.h"

namespace egress::networking::v1alpha1 {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using validation::FieldError;

IPAMPool pool(std::vector<std::string> cidrs, std::vector<std::string> exclude = {}) {
  IPAMPool p;
  p.metadata.name = "corp";
  p.spec.cidrs = std::move(cidrs);
  p.spec.exclude = std::move(exclude);
  return p;
}

EgressGatewayPolicy policy() {
  EgressGatewayPolicy e;
  e.metadata.name = "billing";
  e.metadata.namespace_ = "payments";
  e.spec.podSelector.matchLabels = {{"app", "billing"}};
  e.spec.egressIP.pool = "corp";
  return e;
}

TEST(FormatsTest, AddressesAndPrefixesAsGoParsesThem) {
  using namespace validation;
  EXPECT_TRUE(isIPv4("203.0.113.5"));
  EXPECT_FALSE(isIPv4("300.1.1.1"));
  EXPECT_FALSE(isIPv4("01.2.3.4")) << "leading zeros are ambiguous (octal?)";
  EXPECT_FALSE(isIPv4("1.2.3"));
  EXPECT_FALSE(isIPv4("2001:db8::1"));
  EXPECT_TRUE(isIPv6("2001:db8::1"));
  EXPECT_TRUE(isIPv6("::ffff:203.0.113.5"));
  EXPECT_FALSE(isIPv6("2001:db8::1%eth0"));
  EXPECT_FALSE(isIPv6("2001:db8:::1"));
  EXPECT_TRUE(isCIDR("10.0.0.0/8"));
  EXPECT_TRUE(isCIDR("10.0.0.1/8")) << "host bits may be set, as net.ParseCIDR allows";
  EXPECT_TRUE(isCIDR("::/0"));
  EXPECT_FALSE(isCIDR("10.0.0.0/33"));
  EXPECT_FALSE(isCIDR("2001:db8::/129"));
  EXPECT_FALSE(isCIDR("10.0.0.0/08"));
  EXPECT_FALSE(isCIDR("10.0.0.0/"));
  EXPECT_FALSE(isCIDR("10.0.0.0"));
  EXPECT_FALSE(isCIDR("10.0.0.0/8/8"));
  EXPECT_TRUE(isIPOrCIDR("10.0.0.1"));
  EXPECT_TRUE(isIPOrCIDR("10.0.0.0/30"));
  EXPECT_FALSE(isIPOrCIDR(""));
}

TEST(FormatsTest, PrefixContainmentAndOverlap) {
  auto a = validation::parseIPOrCIDR("10.0.0.0/24");
  auto b = validation::parseIPOrCIDR("10.0.0.77/26");
  auto c = validation::parseIPOrCIDR("10.0.1.0/24");
  auto ip = validation::parseIPOrCIDR("10.0.0.255");
  auto v6 = validation::parseIPOrCIDR("::a00:0/120");
  ASSERT_TRUE(a && b && c && ip && v6);
  EXPECT_TRUE(a->contains(*b));
  EXPECT_FALSE(b->contains(*a));
  EXPECT_TRUE(a->overlaps(*b) && b->overlaps(*a));
  EXPECT_FALSE(a->overlaps(*c));
  EXPECT_TRUE(a->contains(*ip));
  EXPECT_FALSE(a->overlaps(*v6)) << "families never overlap";
}

TEST(ValidateTest, AValidPoolAndPolicyHaveNoErrors) {
  EXPECT_THAT(validate(pool({"203.0.113.0/28", "2001:db8::/120"}, {"203.0.113.1"})), IsEmpty());
  EXPECT_THAT(validate(policy()), IsEmpty());
  OperatorConfig c;
  c.metadata.name = "default";
  c.spec.gatewayImage = "egress-gateway:1";
  EXPECT_THAT(validate(c), IsEmpty());
}

TEST(ValidateTest, PoolSchemaChecksReportEveryProblemWithItsPath) {
  auto p = pool({"203.0.113.0/28", "10.0.0.0/33", "x"}, {"not-an-ip"});
  EXPECT_THAT(validate(p), ElementsAre(FieldError{"spec.cidrs[1]", "\"10.0.0.0/33\" is not a CIDR"},
                                       FieldError{"spec.cidrs[2]", "\"x\" is not a CIDR"},
                                       FieldError{"spec.exclude[0]",
                                                  "\"not-an-ip\" is not an IP address or CIDR"}));
  EXPECT_THAT(validate(pool({})), ElementsAre(FieldError{"spec.cidrs", "Required value"}));
  std::vector<std::string> many(17, "10.0.0.0/8");
  EXPECT_THAT(validate(pool(many))[0], (FieldError{"spec.cidrs", "must have at most 16 items"}));
}

TEST(ValidateTest, PoolSemantics) {
  EXPECT_THAT(validate(pool({"10.0.0.0/24", "10.0.0.128/25"})),
              ElementsAre(FieldError{"spec.cidrs[1]",
                                     "\"10.0.0.128/25\" overlaps spec.cidrs[0] \"10.0.0.0/24\""}));
  EXPECT_THAT(
      validate(pool({"10.0.0.0/24"}, {"10.0.1.1", "10.0.0.0/30"})),
      ElementsAre(FieldError{"spec.exclude[0]", "\"10.0.1.1\" is not inside any of spec.cidrs"}));
}

TEST(ValidateTest, PolicySchemaChecks) {
  auto e = policy();
  e.spec.egressIP.addresses = {"203.0.113.1", "203.0.113.2", "300.1.1.1"};
  e.spec.egressIP.ipFamily = "IPv5";
  e.spec.gateway.replicas = -1;
  e.spec.gateway.priorityClassName = "Not_Valid";
  e.spec.gateway.tolerations = {Toleration{"k", "Maybe", "", "", std::nullopt}};
  e.spec.gateway.resources = ResourceRequirements{{{"cpu", "lots"}}, {}};
  e.spec.destinationCIDRs = {"0.0.0.0/0", "10.1.1.1"};
  const auto errs = validate(e);
  EXPECT_THAT(
      errs, ::testing::IsSupersetOf({
                FieldError{"spec.egressIP.addresses[2]", "\"300.1.1.1\" is not an IP address"},
                FieldError{"spec.egressIP.ipFamily",
                           "Unsupported value: \"IPv5\": supported values: \"IPv4\", \"IPv6\", "
                           "\"DualStack\""},
                FieldError{"spec.gateway.replicas", "-1 should be greater than or equal to 1"},
                FieldError{"spec.gateway.tolerations[0].operator",
                           "Unsupported value: \"Maybe\": supported values: \"Exists\", \"Equal\""},
                FieldError{"spec.destinationCIDRs[1]", "\"10.1.1.1\" is not a CIDR"},
            }));
  bool pattern = false;
  bool quantity = false;
  for (const auto& err : errs) {
    pattern = pattern || err.path == "spec.gateway.priorityClassName";
    quantity = quantity || err.path == "spec.gateway.resources.limits[cpu]";
  }
  EXPECT_TRUE(pattern) << validation::join(errs);
  EXPECT_TRUE(quantity) << validation::join(errs);

  e = policy();
  e.spec.gateway.replicas = 65;
  EXPECT_THAT(validate(e), ElementsAre(FieldError{"spec.gateway.replicas",
                                                  "65 should be less than or equal to 64"}));
  e = policy();
  e.spec.egressIP.pool = std::string(254, 'a');
  EXPECT_THAT(validate(e)[0], (FieldError{"spec.egressIP.pool", "may not be longer than 253"}));
}

// The CEL rules of EgressIPSpec, one by one (x-kubernetes-validations in the CRD).
TEST(ValidateTest, PolicyCelRules) {
  auto e = policy();
  e.spec.egressIP.pool.reset();
  EXPECT_THAT(validate(e), ElementsAre(FieldError{"spec.egressIP", "set pool, addresses or both"}));
  e.spec.egressIP.pool = "";
  EXPECT_THAT(validate(e), ::testing::Contains(
                               FieldError{"spec.egressIP.pool", "should be at least 1 chars long"}))
      << "an empty pool is present, and invalid";

  e = policy();
  e.spec.egressIP.addresses = {"2001:db8::1"};
  EXPECT_THAT(validate(e),
              ElementsAre(FieldError{"spec.egressIP",
                                     "ipFamily IPv4 (the default) takes IPv4 addresses only"}));
  e.spec.egressIP.ipFamily = "IPv6";
  EXPECT_THAT(validate(e), IsEmpty());
  e.spec.egressIP.addresses.push_back("203.0.113.1");
  EXPECT_THAT(validate(e),
              ElementsAre(FieldError{"spec.egressIP", "ipFamily IPv6 takes IPv6 addresses only"}));
  e.spec.egressIP.ipFamily = "DualStack";
  EXPECT_THAT(validate(e), IsEmpty());
  e.spec.egressIP.addresses.push_back("203.0.113.2");
  EXPECT_THAT(validate(e),
              ElementsAre(FieldError{"spec.egressIP",
                                     "ipFamily DualStack takes as many IPv4 as IPv6 addresses"}));

  e = policy();
  e.spec.egressIP.addresses = {"203.0.113.1", "203.0.113.1"};
  EXPECT_THAT(validate(e), ElementsAre(FieldError{"spec.egressIP.addresses[1]",
                                                  "Duplicate value: \"203.0.113.1\""}));
}

TEST(ValidateTest, PoolOfAPolicyIsImmutable) {
  auto old = policy();
  auto updated = policy();
  updated.spec.gateway.replicas = 4;
  EXPECT_THAT(validateUpdate(old, updated), IsEmpty());
  updated.spec.egressIP.pool = "other";
  EXPECT_THAT(validateUpdate(old, updated),
              ElementsAre(FieldError{"spec.egressIP.pool", "pool is immutable"}));
  updated.spec.egressIP.pool.reset();
  updated.spec.egressIP.addresses = {"203.0.113.9"};
  EXPECT_THAT(validateUpdate(old, updated),
              ElementsAre(FieldError{"spec.egressIP.pool", "pool is immutable"}))
      << "removing the pool is a change too";
  // A policy that started with explicit addresses only may gain a pool.
  old.spec.egressIP.pool.reset();
  old.spec.egressIP.addresses = {"203.0.113.9"};
  updated.spec.egressIP.pool = "corp";
  EXPECT_THAT(validateUpdate(old, updated), IsEmpty());
}

TEST(ValidateTest, SelectorRequirementsNeedValuesExactlyForInAndNotIn) {
  auto e = policy();
  meta::LabelSelectorRequirement in;
  in.key = "tier";
  in.op = meta::SelectorOperator::In;
  meta::LabelSelectorRequirement exists;
  exists.key = "";
  exists.op = meta::SelectorOperator::Exists;
  exists.values = {"x"};
  e.spec.podSelector.matchExpressions = {in};
  e.spec.namespaceSelector = meta::LabelSelector{};
  e.spec.namespaceSelector->matchExpressions = {exists};
  EXPECT_THAT(
      validate(e),
      ElementsAre(
          FieldError{"spec.podSelector.matchExpressions[0].values",
                     "must be specified when `operator` is 'In' or 'NotIn'"},
          FieldError{"spec.namespaceSelector.matchExpressions[0].key", "Required value"},
          FieldError{"spec.namespaceSelector.matchExpressions[0].values",
                     "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"}));
}

// Item 3a of issue 8: a selector the CRD schema accepts decodes (so the informer keeps the
// policy), and validate() reports what is semantically wrong with it.
TEST(ValidateTest, DecodedPolicyWithMalformedSelectorIsReportedByValidate) {
  rapidjson::Document doc;
  doc.Parse(R"({"metadata":{"name":"billing","namespace":"payments"},
      "spec":{"podSelector":{"matchExpressions":[{"key":"tier","operator":"In"},
                                                 {"key":"zone","operator":"Exists","values":["a"]}]},
              "egressIP":{"pool":"corp"}}})");
  auto decoded = decodeEgressGatewayPolicy(doc);
  ASSERT_TRUE(decoded) << decoded.error().toString();
  EXPECT_THAT(validate(*decoded),
              ElementsAre(FieldError{"spec.podSelector.matchExpressions[0].values",
                                     "must be specified when `operator` is 'In' or 'NotIn'"},
                          FieldError{"spec.podSelector.matchExpressions[1].values",
                                     "may not be specified when `operator` is 'Exists' or "
                                     "'DoesNotExist'"}));
}

TEST(ValidateTest, OperatorConfigIsASingletonWithAnImage) {
  OperatorConfig c;
  c.metadata.name = "mine";
  EXPECT_THAT(validate(c),
              ElementsAre(FieldError{"metadata.name", "the OperatorConfig must be named default"},
                          FieldError{"spec.gatewayImage", "Required value"}));
  c.metadata.name = "default";
  c.spec.gatewayImage = "img";
  c.spec.gatewayDefaults = GatewaySpec{};
  c.spec.gatewayDefaults->replicas = 0;
  EXPECT_THAT(validate(c), ElementsAre(FieldError{"spec.gatewayDefaults.replicas",
                                                  "0 should be greater than or equal to 1"}));
}

}  // namespace
}  // namespace egress::networking::v1alpha1
