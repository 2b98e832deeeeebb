// validate() of networking.egressgateway.dev/v1alpha1: the schema markers (generated checks),
// every CEL rule of types.h (which our 1.20 test API server ignores), the semantic checks and
// the API server's pod checks on what becomes the gateway pods (tolerations, node selector,
// resources), each with the field path in the error; plus the IP/CIDR formats as the API server
// parses them, and the name syntaxes as apimachinery checks them.
#include "pkg/apis/networking/v1alpha1/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/apis/networking/v1alpha1/zz_generated.codec.h"
#include "pkg/apis/validation/formats.h"
#include "pkg/apis/validation/names.h"

namespace egress::networking::v1alpha1 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using validation::FieldError;

const char* const kNamePartMessage =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

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
  e.spec.gateway.resources = ResourceRequirements{{{"cpu", "lots"}}, {{"memory", "1.5.5"}}};
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
                FieldError{"spec.gateway.resources.limits[cpu]",
                           "Invalid value: \"lots\": quantities must match the regular expression "
                           "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
                FieldError{"spec.gateway.resources.requests[memory]",
                           "Invalid value: \"1.5.5\": quantities must match the regular expression "
                           "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
            }));
  bool pattern = false;
  for (const auto& err : errs) {
    pattern = pattern || err.path == "spec.gateway.priorityClassName";
  }
  EXPECT_TRUE(pattern) << validation::join(errs);

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
  EXPECT_THAT(validate(e), IsEmpty()) << "no pool: the OperatorConfig's defaultPool";
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
  EXPECT_THAT(validate(e), ElementsAre(FieldError{"spec.podSelector.matchExpressions[0].values",
                                                  "must be specified when `operator` is 'In' or "
                                                  "'NotIn'"}));
  // A pool's namespaceSelector, the same way.
  auto p = pool({"203.0.113.0/28"});
  p.spec.namespaceSelector = meta::LabelSelector{};
  EXPECT_THAT(validate(p), IsEmpty()) << "an empty selector selects every namespace";
  p.spec.namespaceSelector->matchExpressions = {exists};
  EXPECT_THAT(
      validate(p),
      ElementsAre(
          FieldError{"spec.namespaceSelector.matchExpressions[0].key", "Required value"},
          FieldError{"spec.namespaceSelector.matchExpressions[0].values",
                     "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"}));
}

// A selector the CRD schema accepts decodes (so the informer keeps the
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

// A CIDR means a network: host bits set are an error with the network meant, in pools,
// policies and the OperatorConfig's clusterCIDRs alike.
TEST(ValidateTest, CidrsWithHostBitsSetAreErrorsWithTheNetworkMeant) {
  EXPECT_THAT(validate(pool({"203.0.113.5/24"})),
              ElementsAre(FieldError{"spec.cidrs[0]",
                                     "\"203.0.113.5/24\" has host bits set; did "
                                     "you mean \"203.0.113.0/24\"?"}));
  auto e = policy();
  e.spec.destinationCIDRs = {"192.0.2.0/24", "198.51.100.7/25"};
  e.spec.excludedCIDRs = {"192.0.2.65/26"};
  EXPECT_THAT(validate(e),
              ElementsAre(FieldError{"spec.destinationCIDRs[1]",
                                     "\"198.51.100.7/25\" has host bits set; did you mean "
                                     "\"198.51.100.0/25\"?"},
                          FieldError{"spec.excludedCIDRs[0]",
                                     "\"192.0.2.65/26\" has host bits set; did you mean "
                                     "\"192.0.2.64/26\"?"}));
  OperatorConfig c;
  c.metadata.name = "default";
  c.spec.gatewayImage = "img";
  c.spec.clusterCIDRs = {"10.244.0.0/16", "10.96.0.0/12", "fd00:10:244::/56", "fd00:10:96::1/112"};
  EXPECT_THAT(validate(c), ElementsAre(FieldError{"spec.clusterCIDRs[3]",
                                                  "\"fd00:10:96::1/112\" has host bits set; did "
                                                  "you mean \"fd00:10:96::/112\"?"}));
  c.spec.clusterCIDRs = {"10.244.0.0"};
  EXPECT_THAT(validate(c),
              ElementsAre(FieldError{"spec.clusterCIDRs[0]", "\"10.244.0.0\" is not a CIDR"}));
  c.spec.clusterCIDRs = std::vector<std::string>(33, "10.0.0.0/8");
  EXPECT_THAT(validate(c),
              ElementsAre(FieldError{"spec.clusterCIDRs", "must have at most 32 items"}));
}

TEST(ValidateTest, DestinationFamiliesMatchTheIpFamily) {
  auto e = policy();
  e.spec.destinationCIDRs = {"192.0.2.0/24", "2001:db8:f000::/36"};
  e.spec.excludedCIDRs = {"2001:db8:f000:ff::/64"};
  EXPECT_THAT(validate(e),
              ElementsAre(FieldError{"spec.destinationCIDRs[1]",
                                     "\"2001:db8:f000::/36\": ipFamily IPv4 (the default) takes "
                                     "IPv4 CIDRs only"},
                          FieldError{"spec.excludedCIDRs[0]",
                                     "\"2001:db8:f000:ff::/64\": ipFamily IPv4 (the default) takes "
                                     "IPv4 CIDRs only"}));
  e.spec.egressIP.ipFamily = "IPv6";
  EXPECT_THAT(validate(e), ElementsAre(FieldError{"spec.destinationCIDRs[0]",
                                                  "\"192.0.2.0/24\": ipFamily IPv6 takes IPv6 "
                                                  "CIDRs only"}));
  e.spec.egressIP.ipFamily = "DualStack";
  EXPECT_THAT(validate(e), IsEmpty()) << "DualStack routes either family";
  e.spec.egressIP.ipFamily = "IPv4";
  e.spec.destinationCIDRs = {"0.0.0.0/0"};
  e.spec.excludedCIDRs = {"10.0.0.0/8"};
  EXPECT_THAT(validate(e), IsEmpty());
}

// core/v1 ValidateTolerations, rule by rule, each error at the field it is about.
TEST(ValidateTest, TolerationsAreCheckedAsThePodApiChecksThem) {
  auto withTolerations = [](std::vector<Toleration> ts) {
    auto e = policy();
    e.spec.gateway.tolerations = std::move(ts);
    return validate(e);
  };
  // The accepted forms.
  EXPECT_THAT(withTolerations({
                  Toleration{"example.com/dedicated", "Equal", "gateway", "NoSchedule", {}},
                  Toleration{"node.kubernetes.io/unreachable", "Exists", "", "NoExecute", 30},
                  Toleration{"", "Exists", "", "", {}},
                  Toleration{"dedicated", "", "", "", {}},
                  Toleration{"k", "", "My_Value.1", "PreferNoSchedule", {}},
              }),
              IsEmpty());

  EXPECT_THAT(withTolerations({Toleration{"bad key!", "Exists", "", "", {}}}),
              ElementsAre(FieldError{
                  "spec.gateway.tolerations[0].key",
                  std::string("Invalid value: \"bad key!\": name part ") + kNamePartMessage}));
  EXPECT_THAT(withTolerations({Toleration{"Example.com/x", "Exists", "", "", {}}}),
              ElementsAre(FieldError{"spec.gateway.tolerations[0].key",
                                     "Invalid value: \"Example.com/x\": prefix part a lowercase "
                                     "RFC 1123 subdomain must consist of lower case alphanumeric "
                                     "characters, '-' or '.', and must start and end with an "
                                     "alphanumeric character (e.g. 'example.com', regex used for "
                                     "validation is "
                                     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9]"
                                     ")?)*')"}));
  EXPECT_THAT(withTolerations({Toleration{"", "Equal", "", "", {}}, Toleration{}}),
              ElementsAre(FieldError{"spec.gateway.tolerations[0].operator",
                                     "Invalid value: \"Equal\": operator must be Exists when `key` "
                                     "is empty, which means \"match all values and all keys\""},
                          FieldError{"spec.gateway.tolerations[1].operator",
                                     "Invalid value: \"\": operator must be Exists when `key` is "
                                     "empty, which means \"match all values and all keys\""}));
  EXPECT_THAT(withTolerations({Toleration{"k", "Exists", "", "NoSchedule", 30},
                               Toleration{"k", "Exists", "", "", 0}}),
              ElementsAre(FieldError{"spec.gateway.tolerations[0].effect",
                                     "Invalid value: \"NoSchedule\": effect must be 'NoExecute' "
                                     "when `tolerationSeconds` is set"},
                          FieldError{"spec.gateway.tolerations[1].effect",
                                     "Invalid value: \"\": effect must be 'NoExecute' when "
                                     "`tolerationSeconds` is set"}));
  EXPECT_THAT(withTolerations({Toleration{"k", "Exists", "v", "", {}}}),
              ElementsAre(FieldError{"spec.gateway.tolerations[0].value",
                                     "Invalid value: \"v\": value must be empty when `operator` is "
                                     "'Exists'"}));
  EXPECT_THAT(
      withTolerations(
          {Toleration{"k", "Equal", "-bad-", "", {}}, Toleration{"k", "", "a b", "", {}}}),
      ElementsAre(FieldError{"spec.gateway.tolerations[0].value",
                             "Invalid value: \"-bad-\": a valid label must be an empty "
                             "string or consist of alphanumeric characters, '-', '_' or "
                             "'.', and must start and end with an alphanumeric character "
                             "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
                             "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"},
                  FieldError{"spec.gateway.tolerations[1].value",
                             "Invalid value: \"a b\": a valid label must be an empty "
                             "string or consist of alphanumeric characters, '-', '_' or "
                             "'.', and must start and end with an alphanumeric character "
                             "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
                             "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"}));
  // Too long for the schema: reported once, by the schema check.
  EXPECT_THAT(
      withTolerations({Toleration{"k", "Equal", std::string(64, 'v'), "", {}}}),
      ElementsAre(FieldError{"spec.gateway.tolerations[0].value", "may not be longer than 63"}));
  // The OperatorConfig's gateway defaults are checked the same way.
  OperatorConfig c;
  c.metadata.name = "default";
  c.spec.gatewayImage = "img";
  c.spec.gatewayDefaults = GatewaySpec{};
  c.spec.gatewayDefaults->tolerations = {Toleration{"k", "Exists", "v", "", {}}};
  EXPECT_THAT(validate(c), ElementsAre(FieldError{"spec.gatewayDefaults.tolerations[0].value",
                                                  "Invalid value: \"v\": value must be empty when "
                                                  "`operator` is 'Exists'"}));
}

TEST(ValidateTest, NodeSelectorLabelsAreLabels) {
  auto e = policy();
  e.spec.gateway.nodeSelector = {{"kubernetes.io/os", "linux"}, {"egress", ""}};
  EXPECT_THAT(validate(e), IsEmpty());
  e.spec.gateway.nodeSelector = {{"bad key", "ok"}, {"ok", "bad value"}};
  const auto errs = validate(e);
  ASSERT_EQ(errs.size(), 2u) << validation::join(errs);
  EXPECT_EQ(errs[0].path, "spec.gateway.nodeSelector[bad key]");
  EXPECT_THAT(errs[0].message, HasSubstr("Invalid value: \"bad key\": name part must consist"));
  EXPECT_EQ(errs[1].path, "spec.gateway.nodeSelector[ok]");
  EXPECT_THAT(errs[1].message, HasSubstr("Invalid value: \"bad value\": a valid label must be"));
}

// Quantities as Kubernetes takes them, and core/v1 ValidateResourceRequirements' rules.
TEST(ValidateTest, ResourcesAreQuantitiesWithRequestsWithinLimits) {
  auto withResources = [](meta::QuantityMap limits, meta::QuantityMap requests) {
    auto e = policy();
    e.spec.gateway.resources = ResourceRequirements{std::move(limits), std::move(requests)};
    return validate(e);
  };
  EXPECT_THAT(withResources({{"cpu", "1"},
                             {"memory", "128Mi"},
                             {"ephemeral-storage", "2Gi"},
                             {"hugepages-2Mi", "4Mi"},
                             {"example.com/foo", "2"}},
                            {{"cpu", "0.5"},
                             {"memory", "1e3"},
                             {"ephemeral-storage", ".5"},
                             {"hugepages-2Mi", "4194304"},
                             {"example.com/foo", "+2"}}),
              IsEmpty());
  EXPECT_THAT(withResources({{"cpu", "1"}}, {{"cpu", "1000m"}}), IsEmpty()) << "equal is fine";
  EXPECT_THAT(withResources({{"cpu", "500.1m"}}, {{"cpu", "0.5"}}), IsEmpty());

  EXPECT_THAT(
      withResources({{"cpu", "500m"}, {"memory", "1Gi"}}, {{"cpu", "0.6"}, {"memory", "1025Mi"}}),
      ElementsAre(FieldError{"spec.gateway.resources.requests[cpu]",
                             "Invalid value: \"0.6\": must be less than or equal to cpu limit of "
                             "500m"},
                  FieldError{"spec.gateway.resources.requests[memory]",
                             "Invalid value: \"1025Mi\": must be less than or equal to memory "
                             "limit of 1Gi"}));
  EXPECT_THAT(withResources({}, {{"cpu", "-1"}}),
              ElementsAre(FieldError{"spec.gateway.resources.requests[cpu]",
                                     "Invalid value: \"-1\": must be greater than or equal to 0"}));
  EXPECT_THAT(withResources({{"cpu", "1K"}}, {}),
              ElementsAre(FieldError{"spec.gateway.resources.limits[cpu]",
                                     "Invalid value: \"1K\": unable to parse quantity's suffix"}));
  EXPECT_THAT(withResources({{"memory", "16Ei"}}, {}),
              ElementsAre(FieldError{"spec.gateway.resources.limits[memory]",
                                     "Invalid value: \"16Ei\": quantity too large: its magnitude "
                                     "may be at most 2^63-1 (9223372036854775807)"}));
  // Resource names.
  EXPECT_THAT(withResources({{"gpu", "1"}}, {}),
              ElementsAre(FieldError{"spec.gateway.resources.limits[gpu]",
                                     "Invalid value: \"gpu\": must be a standard resource for "
                                     "containers"}));
  EXPECT_THAT(withResources({{"example.com/bad name", "1"}}, {}),
              ElementsAre(FieldError{"spec.gateway.resources.limits[example.com/bad name]",
                                     std::string("Invalid value: \"example.com/bad name\": name "
                                                 "part ") +
                                         kNamePartMessage}));
  // Extended resources and huge pages: whole units, a limit, and requests equal to it.
  EXPECT_THAT(withResources({{"example.com/foo", "1.5"}}, {}),
              ElementsAre(FieldError{"spec.gateway.resources.limits[example.com/foo]",
                                     "Invalid value: \"1.5\": must be an integer"}));
  EXPECT_THAT(withResources({}, {{"example.com/foo", "1"}}),
              ElementsAre(FieldError{"spec.gateway.resources.limits[example.com/foo]",
                                     "Required value: Limit must be set for non overcommitable "
                                     "resources"}));
  EXPECT_THAT(withResources({{"hugepages-2Mi", "4Mi"}}, {{"hugepages-2Mi", "2Mi"}}),
              ElementsAre(FieldError{"spec.gateway.resources.requests[hugepages-2Mi]",
                                     "Invalid value: \"2Mi\": must be equal to hugepages-2Mi limit "
                                     "of 4Mi"}));
}

// Decoded from JSON as the API server stores it: integers and strings alike.
TEST(ValidateTest, IntegerAndStringQuantitiesDecodeAndValidate) {
  auto e = meta::parseAndDecode(
      R"({"metadata":{"name":"b","namespace":"p"},"spec":{"podSelector":{},"egressIP":{},
          "gateway":{"resources":{"limits":{"cpu":1,"memory":"128Mi"},
                                  "requests":{"cpu":"500m","memory":134217728}}}}})",
      decodeEgressGatewayPolicy);
  ASSERT_TRUE(e) << e.error().toString();
  EXPECT_EQ(e->spec.gateway.resources->limits.at("cpu").text(), "1");
  EXPECT_EQ(e->spec.gateway.resources->requests.at("memory").text(), "134217728");
  EXPECT_THAT(validate(*e), IsEmpty());
  auto fractional = meta::parseAndDecode(
      R"({"spec":{"podSelector":{},"egressIP":{},"gateway":{"resources":{"limits":{"cpu":0.5}}}}})",
      decodeEgressGatewayPolicy);
  ASSERT_FALSE(fractional);
  EXPECT_EQ(fractional.error().toString(),
            "spec.gateway.resources.limits[\"cpu\"]: expected integer or string");
}

TEST(NamesTest, QualifiedNamesAsApimachineryChecksThem) {
  using validation::qualifiedNameErrors;
  for (const char* ok : {"cpu", "example.com/foo", "hugepages-2Mi", "a", "A_b.c-9",
                         "node.kubernetes.io/unreachable", "x/y"}) {
    EXPECT_THAT(qualifiedNameErrors(ok), IsEmpty()) << ok;
  }
  EXPECT_THAT(qualifiedNameErrors(""), ElementsAre("name part must be non-empty",
                                                   std::string("name part ") + kNamePartMessage));
  EXPECT_THAT(qualifiedNameErrors("/x"), ElementsAre("prefix part must be non-empty"));
  EXPECT_THAT(qualifiedNameErrors(std::string(64, 'a')),
              ElementsAre("name part must be no more than 63 characters"));
  EXPECT_THAT(qualifiedNameErrors("-a"), ElementsAre(std::string("name part ") + kNamePartMessage));
  EXPECT_THAT(qualifiedNameErrors("a/b/c"),
              ElementsAre(std::string("a qualified name ") + kNamePartMessage +
                          " with an optional DNS subdomain prefix and '/' (e.g. "
                          "'example.com/MyName')"));
  EXPECT_EQ(qualifiedNameErrors("a..b/c").size(), 1u) << "an empty subdomain label";
  EXPECT_EQ(qualifiedNameErrors(std::string(254, 'a') + "/c").size(), 1u) << "prefix too long";
}

TEST(NamesTest, LabelValuesAndSubdomains) {
  using validation::dns1123SubdomainErrors;
  using validation::labelValueErrors;
  EXPECT_THAT(labelValueErrors(""), IsEmpty());
  EXPECT_THAT(labelValueErrors("My_Value.1"), IsEmpty());
  EXPECT_EQ(labelValueErrors("a b").size(), 1u);
  EXPECT_EQ(labelValueErrors("_a").size(), 1u);
  EXPECT_THAT(labelValueErrors(std::string(64, 'a')),
              ElementsAre("must be no more than 63 characters"));
  EXPECT_THAT(dns1123SubdomainErrors("example.com"), IsEmpty());
  EXPECT_THAT(dns1123SubdomainErrors("a-b.c0"), IsEmpty());
  for (const char* bad : {"", "Example.com", "a.", ".a", "a..b", "-a", "a-", "a_b"}) {
    EXPECT_EQ(dns1123SubdomainErrors(bad).size(), 1u) << bad;
  }
}

TEST(NamesTest, Dns1123Labels) {
  using validation::dns1123LabelErrors;
  EXPECT_THAT(dns1123LabelErrors("egress-system"), IsEmpty());
  EXPECT_THAT(dns1123LabelErrors(std::string(63, 'a')), IsEmpty());
  for (const char* bad : {"", "a.b", "Egress", "-a", "a-", "a_b"}) {
    EXPECT_EQ(dns1123LabelErrors(bad).size(), 1u) << bad;
  }
  EXPECT_THAT(dns1123LabelErrors(std::string(64, 'a')),
              ElementsAre("must be no more than 63 characters"));
}

}  // namespace
}  // namespace egress::networking::v1alpha1
