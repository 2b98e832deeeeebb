// The generated typed clientset, listers and informers of networking.egressgateway.dev/v1alpha1
// against the real API server with the generated CRDs installed: every verb of the typed client
// (create, get, list, update, updateStatus, patch, apply, watch, remove), objects decoded back
// equal to what was sent, and a typed informer and lister that follow the changes.
#include <random>
#include <string>

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/apis/networking/v1alpha1/validation.h"
#include "pkg/base/clock.h"
#include "pkg/client/networking/v1alpha1/zz_generated.clientset.h"
#include "pkg/client/networking/v1alpha1/zz_generated.informers.h"
#include "pkg/kube/kubeconfig.h"
#include "test/e2e/testenv/environment.h"
#include "test/testutil/run_sync.h"

namespace egress::client {
namespace {

namespace api = networking::v1alpha1;
using testenv::controlPlane;
using ::testing::HasSubstr;
using testutil::runSync;

class ClientsetE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto apply = controlPlane().kubectl({"apply", "-f", testenv::sourceDir() + "/manifests/"});
    ASSERT_TRUE(apply.ok()) << apply.output;
    auto wait = controlPlane().kubectl({"wait", "--for", "condition=established", "--timeout=60s",
                                        "crd/ipampools.networking.egressgateway.dev",
                                        "crd/egressgatewaypolicies.networking.egressgateway.dev"});
    ASSERT_TRUE(wait.ok()) << wait.output;
  }

  void SetUp() override {
    kube::KubeconfigOptions options;
    options.paths = {controlPlane().kubeconfig()};
    auto config = kube::loadKubeconfig(options);
    ASSERT_TRUE(config) << config.error().message();
    auto client = kube::RestClient::create(ioc_.get_executor(), *config, nullptr);
    ASSERT_TRUE(client) << client.error().message();
    rest_ = std::move(*client);
    std::random_device rd;
    suffix_ = std::to_string(rd() % 1000000);
    ns_ = "clientset-e2e-" + suffix_;
    ASSERT_EQ(controlPlane().createNamespace(ns_), "");
  }

  template <class T>
  T run(net::awaitable<T> task) {
    return runSync(ioc_, std::move(task));
  }

  boost::asio::io_context ioc_;
  std::unique_ptr<kube::RestClient> rest_;
  std::string suffix_;
  std::string ns_;
};

TEST_F(ClientsetE2E, EveryVerbOfTheTypedClientOnAClusterScopedKind) {
  Clientset clientset(*rest_);
  const auto pools = clientset.networkingV1alpha1().ipamPools();

  api::IPAMPool pool;
  pool.metadata.name = "pool-" + suffix_;
  pool.metadata.labels = {{"tier", "gold"}};
  pool.spec.cidrs = {"203.0.113.0/28", "2001:db8:100::/120"};
  pool.spec.exclude = {"203.0.113.1"};
  pool.spec.namespaceSelector = meta::LabelSelector{{{"team", "gold"}}, {}};
  ASSERT_TRUE(validate(pool).empty());
  auto created = run(pools.create(pool, kube::WriteOptions()));
  ASSERT_TRUE(created) << created.error().message();
  EXPECT_EQ(created->spec, pool.spec) << "decoded back as sent";
  EXPECT_FALSE(created->metadata.uid.empty());
  EXPECT_EQ(created->metadata.generation, 1);

  auto dup = run(pools.create(pool, kube::WriteOptions()));
  ASSERT_FALSE(dup);
  EXPECT_TRUE(dup.error().isAlreadyExists());

  auto got = run(pools.get(pool.metadata.name));
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(*got, *created);

  // updateStatus: only status changes, through the subresource.
  api::IPAMPool withStatus = *got;
  withStatus.status.allocated = 2;
  withStatus.status.ipv4 = api::IPFamilyCounts{13, 2, 11};
  withStatus.status.observedGeneration = 1;
  withStatus.spec.disabled = true;  // ignored by the status subresource
  auto statusUpdated = run(pools.updateStatus(withStatus, kube::WriteOptions()));
  ASSERT_TRUE(statusUpdated) << statusUpdated.error().message();
  EXPECT_EQ(statusUpdated->status.ipv4, withStatus.status.ipv4);
  EXPECT_FALSE(statusUpdated->spec.disabled);

  // update with a stale resourceVersion is a conflict; with the current one it lands.
  api::IPAMPool stale = *got;
  stale.spec.disabled = true;
  auto conflict = run(pools.update(stale, kube::WriteOptions()));
  ASSERT_FALSE(conflict);
  EXPECT_TRUE(conflict.error().isConflict());
  api::IPAMPool fresh = *statusUpdated;
  fresh.spec.disabled = true;
  auto updated = run(pools.update(fresh, kube::WriteOptions()));
  ASSERT_TRUE(updated) << updated.error().message();
  EXPECT_TRUE(updated->spec.disabled);
  EXPECT_EQ(updated->metadata.generation, 2);
  EXPECT_EQ(updated->status.allocated, 2) << "a main-resource PUT keeps the status";

  auto patched = run(pools.patch(pool.metadata.name, kube::PatchType::Merge,
                                 R"({"metadata":{"labels":{"patched":"yes"}}})",
                                 kube::WriteOptions(), std::string()));
  ASSERT_TRUE(patched) << patched.error().message();
  EXPECT_EQ(patched->metadata.labels.at("patched"), "yes");

  kube::WriteOptions ssa;
  ssa.fieldManager = "clientset-e2e";
  ssa.force = true;
  auto applied = run(pools.apply(
      pool.metadata.name,
      R"({"apiVersion":"networking.egressgateway.dev/v1alpha1","kind":"IPAMPool",)"
      R"("metadata":{"name":")" +
          pool.metadata.name + R"("},"spec":{"cidrs":["203.0.113.0/28","198.51.100.0/29"]}})",
      ssa, std::string()));
  ASSERT_TRUE(applied) << applied.error().message();
  EXPECT_EQ(applied->spec.cidrs, (std::vector<std::string>{"203.0.113.0/28", "198.51.100.0/29"}));

  kube::ListOptions byLabel;
  byLabel.labelSelector = "patched=yes";
  auto list = run(pools.list(byLabel));
  ASSERT_TRUE(list) << list.error().message();
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(list->items[0].metadata.name, pool.metadata.name);
  EXPECT_FALSE(list->metadata.resourceVersion.empty());

  ASSERT_TRUE(run(pools.remove(pool.metadata.name, kube::DeleteOptions())));
  auto gone = run(pools.get(pool.metadata.name));
  ASSERT_FALSE(gone);
  EXPECT_TRUE(gone.error().isNotFound());
}

TEST_F(ClientsetE2E, NamespacedKindWithWatchInformerAndLister) {
  Clientset clientset(*rest_);
  const auto policies = clientset.networkingV1alpha1().egressGatewayPolicies(ns_);
  const auto everywhere = clientset.networkingV1alpha1().egressGatewayPolicies("");

  kube::ListOptions fromNow;
  auto initial = run(everywhere.list(fromNow));
  ASSERT_TRUE(initial) << initial.error().message();
  fromNow.resourceVersion = initial->metadata.resourceVersion;
  auto watch = run(policies.watch(fromNow));
  ASSERT_TRUE(watch) << watch.error().message();

  RealClock clock(ioc_.get_executor());
  cache::SharedInformerFactory factory(*rest_, clock, ioc_.get_executor());
  NetworkingV1alpha1Informers informers(factory);
  auto& informer = informers.egressGatewayPolicies(ns_);
  factory.start();

  api::EgressGatewayPolicy policy;
  policy.metadata.name = "billing";
  policy.spec.podSelector.matchLabels = {{"app", "billing"}};
  policy.spec.destinationCIDRs = {"0.0.0.0/0"};
  policy.spec.egressIP.pool = "corp";
  policy.spec.egressIP.addresses = {"203.0.113.5", "2001:db8::5"};
  policy.spec.egressIP.ipFamily = "DualStack";
  policy.spec.gateway.replicas = 1;
  api::Toleration t;
  t.key = "dedicated";
  t.operator_ = "Equal";
  t.value = "egress";
  t.effect = "NoSchedule";
  policy.spec.gateway.tolerations = {t};
  policy.spec.gateway.resources = api::ResourceRequirements{{{"cpu", "500m"}}, {}};
  ASSERT_TRUE(validate(policy).empty());
  auto created = run(policies.create(policy, kube::WriteOptions()));
  ASSERT_TRUE(created) << created.error().message();
  EXPECT_EQ(created->spec, policy.spec);
  EXPECT_EQ(created->metadata.namespace_, ns_);

  auto event = run((*watch)->next());
  ASSERT_TRUE(event) << event.error().message();
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ((*event)->type, kube::WatchEventType::Added);
  auto decoded = ApiType<api::EgressGatewayPolicy>::decode((*event)->object());
  ASSERT_TRUE(decoded) << decoded.error().toString();
  EXPECT_EQ(*decoded, *created);
  (*watch)->cancel();

  ASSERT_TRUE(run(
      cache::waitForCacheSync(clock, factory.informers(), clock.now() + std::chrono::seconds(30))));
  const auto lister = informers.egressGatewayPolicyLister(ns_);
  for (int i = 0; i < 500 && lister.egressGatewayPolicies(ns_).get("billing") == nullptr; ++i) {
    ioc_.run_for(std::chrono::milliseconds(10));
  }
  auto cached = lister.egressGatewayPolicies(ns_).get("billing");
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ(*cached, *created);
  EXPECT_EQ(lister.list().size(), 1u);
  EXPECT_EQ(&informer, &informers.egressGatewayPolicies(ns_)) << "shared";

  ASSERT_TRUE(run(policies.remove("billing", kube::DeleteOptions())));
  for (int i = 0; i < 500 && lister.egressGatewayPolicies(ns_).get("billing") != nullptr; ++i) {
    ioc_.run_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(lister.egressGatewayPolicies(ns_).get("billing"), nullptr);
  factory.stop();
  for (int i = 0; i < 1000 && !factory.stopped(); ++i) {
    ioc_.run_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(factory.stopped());
}

// The allocation ledger through the status subresource: written and read back as sent, and held
// to its shape by the schema (every entry has addresses).
TEST_F(ClientsetE2E, TheLedgerRoundTripsThroughTheStatusSubresource) {
  Clientset clientset(*rest_);
  const auto policies = clientset.networkingV1alpha1().egressGatewayPolicies(ns_);
  api::EgressGatewayPolicy policy;
  policy.metadata.name = "ledger";
  policy.spec.podSelector.matchLabels = {{"app", "ledger"}};
  policy.spec.egressIP.ipFamily = "DualStack";  // no pool: the OperatorConfig's default
  policy.spec.gateway.resources =
      api::ResourceRequirements{{{"cpu", "1"}, {"memory", "128Mi"}}, {{"cpu", "500m"}}};
  ASSERT_TRUE(validate(policy).empty()) << validation::join(validate(policy));
  auto created = run(policies.create(policy, kube::WriteOptions()));
  ASSERT_TRUE(created) << created.error().message();
  EXPECT_EQ(created->spec, policy.spec);
  EXPECT_FALSE(created->spec.egressIP.pool.has_value());

  api::EgressGatewayPolicy withStatus = *created;
  withStatus.status.pool = "corp";
  withStatus.status.egressIPs = {"203.0.113.5", "2001:db8::5", "203.0.113.6", "2001:db8::6"};
  withStatus.status.gateways = {
      api::GatewayStatus{{"203.0.113.5", "2001:db8::5"}, "egw-ledger-0", "9b1e4c", "n1", true},
      api::GatewayStatus{{"203.0.113.6", "2001:db8::6"}, "", "", "", false}};
  withStatus.status.observedGeneration = 1;
  auto updated = run(policies.updateStatus(withStatus, kube::WriteOptions()));
  ASSERT_TRUE(updated) << updated.error().message();
  EXPECT_EQ(updated->status, withStatus.status);
  auto got = run(policies.get("ledger"));
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->status, withStatus.status);

  api::EgressGatewayPolicy noAddresses = *got;
  noAddresses.status.gateways.push_back(api::GatewayStatus{});
  auto refused = run(policies.updateStatus(noAddresses, kube::WriteOptions()));
  ASSERT_FALSE(refused);
  EXPECT_TRUE(refused.error().isInvalid()) << refused.error().message();
  EXPECT_THAT(refused.error().message(), HasSubstr("status.gateways"));
}

// +kubebuilder:default: the server fills in ipFamily, and the typed client decodes it.
TEST_F(ClientsetE2E, TheServerAppliesSchemaDefaults) {
  Clientset clientset(*rest_);
  const auto policies = clientset.networkingV1alpha1().egressGatewayPolicies(ns_);
  api::EgressGatewayPolicy policy;
  policy.metadata.name = "defaults";
  policy.spec.egressIP.pool = "corp";
  ASSERT_TRUE(policy.spec.egressIP.ipFamily.empty());
  auto created = run(policies.create(policy, kube::WriteOptions()));
  ASSERT_TRUE(created) << created.error().message();
  EXPECT_EQ(created->spec.egressIP.ipFamily, "IPv4");
}

// The API server enforces the schema on the typed client's writes too: the error names the
// field and comes back as an Invalid kube::Error.
TEST_F(ClientsetE2E, SchemaViolationsComeBackAsInvalidWithTheField) {
  Clientset clientset(*rest_);
  const auto policies = clientset.networkingV1alpha1().egressGatewayPolicies(ns_);
  api::EgressGatewayPolicy bad;
  bad.metadata.name = "bad";
  bad.spec.egressIP.pool = "corp";
  bad.spec.gateway.replicas = 0;
  auto created = run(policies.create(bad, kube::WriteOptions()));
  ASSERT_FALSE(created);
  EXPECT_TRUE(created.error().isInvalid()) << created.error().message();
  EXPECT_THAT(created.error().message(), HasSubstr("spec.gateway.replicas"));
  EXPECT_FALSE(validate(bad).empty()) << "validate() agrees";
}

}  // namespace
}  // namespace egress::client
