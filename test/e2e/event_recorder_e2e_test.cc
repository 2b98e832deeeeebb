// End-to-end tests of the EventRecorder against the real local control plane: repeats of one
// event become one Event whose count the API and `kubectl get events` show, a repeat after the
// Event was deleted creates it again, a cluster-scoped object's events land in "default", and
// shutdown() flushes what is queued.
#include <functional>
#include <random>
#include <string>

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "pkg/apis/core/event.h"
#include "pkg/controllerruntime/event_recorder.h"
#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_client.h"
#include "test/e2e/testenv/environment.h"
#include "test/testutil/run_sync.h"

namespace egress::controllerruntime {
namespace {

using testenv::controlPlane;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using testutil::runSync;

const kube::Resource kConfigMaps{"", "v1", "configmaps", true};
const kube::Resource kNamespaces{"", "v1", "namespaces", false};
const kube::Resource kEvents{"", "v1", "events", true};

net::awaitable<bool> shutDown(EventRecorder* recorder, Clock::TimePoint deadline) {
  co_await recorder->shutdown(deadline);
  co_return true;
}

class EventRecorderE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    kube::KubeconfigOptions options;
    options.paths = {controlPlane().kubeconfig()};
    auto config = kube::loadKubeconfig(options);
    ASSERT_TRUE(config) << config.error().message();
    auto client = kube::RestClient::create(ioc_.get_executor(), *config, nullptr);
    ASSERT_TRUE(client) << client.error().message();
    client_ = std::move(*client);
    std::random_device rd;
    ns_ = "events-e2e-" + std::to_string(rd() % 1000000);
    ASSERT_EQ(controlPlane().createNamespace(ns_), "");

    EventRecorderOptions recorderOptions;
    recorderOptions.instance = "egress-operator-e2e-0";
    recorder_ = std::make_unique<EventRecorder>(ioc_.get_executor(), *client_, clock_,
                                                recorderOptions, nullptr);
  }

  void TearDown() override {
    if (recorder_) {
      std::optional<bool> done;
      testutil::spawnInto(ioc_, shutDown(recorder_.get(), clock_.now() + std::chrono::seconds(10)),
                          done);
      runUntil([&] { return done.has_value(); });
    }
  }

  // Runs the io_context until `done` holds; a stall of a minute fails the test instead of
  // hanging it.
  void runUntil(const std::function<bool()>& done) {
    while (!done()) {
      ioc_.restart();
      if (ioc_.run_one_for(std::chrono::seconds(60)) == 0) {
        break;
      }
    }
    ASSERT_TRUE(done()) << "the io_context went idle first";
  }
  void runUntilWritten() {
    runUntil([&] { return recorder_->pending() == 0; });
  }

  // The metadata of a new ConfigMap `name` in the test namespace, as the server made it.
  meta::ObjectMeta createConfigMap(const std::string& name) {
    const std::string body =
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"("}})";
    auto created = runSync(ioc_, client_->create(kConfigMaps, ns_, body));
    EXPECT_TRUE(created) << created.error().message();
    if (!created) {
      return {};
    }
    auto metadata = meta::decodeObjectMeta((*created)["metadata"]);
    EXPECT_TRUE(metadata);
    return metadata ? *metadata : meta::ObjectMeta{};
  }

  // The Events in `ns` about the object named `name`.
  std::vector<core::Event> eventsAbout(const std::string& ns, const std::string& name) {
    kube::ListOptions options;
    options.fieldSelector = "involvedObject.name=" + name;
    auto list = runSync(ioc_, client_->list(kEvents, ns, options));
    EXPECT_TRUE(list) << list.error().message();
    std::vector<core::Event> out;
    if (!list) {
      return out;
    }
    for (const auto& item : (*list)["items"].GetArray()) {
      auto e = core::decodeEvent(item);
      EXPECT_TRUE(e) << e.error().toString();
      if (e) {
        out.push_back(*e);
      }
    }
    return out;
  }

  net::io_context ioc_;
  RealClock clock_{ioc_.get_executor()};
  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<EventRecorder> recorder_;
  std::string ns_;
};

TEST_F(EventRecorderE2E, FiveRepeatsAreOneEventWithCountFive) {
  const meta::ObjectMeta cm = createConfigMap("routes");
  const auto ref = objectReference(cm, "v1", "ConfigMap");
  for (int i = 0; i < 5; ++i) {
    recorder_->event(ref, core::kEventTypeWarning, "RouteConflict",
                     "destination 10.0.0.0/8 overlaps the cluster CIDR");
    runUntilWritten();  // a create, then four patches of the real Event
  }

  auto events = eventsAbout(ns_, "routes");
  ASSERT_EQ(events.size(), 1u);
  const core::Event& e = events[0];
  EXPECT_EQ(e.count, 5);
  EXPECT_EQ(e.type, "Warning");
  EXPECT_EQ(e.reason, "RouteConflict");
  EXPECT_EQ(e.message, "destination 10.0.0.0/8 overlaps the cluster CIDR");
  EXPECT_EQ(e.involvedObject.kind, "ConfigMap");
  EXPECT_EQ(e.involvedObject.uid, cm.uid);
  EXPECT_EQ(e.involvedObject.namespace_, ns_);
  EXPECT_EQ(e.sourceComponent, "egress-gateway-operator");
  EXPECT_EQ(e.reportingComponent, "egress-gateway-operator");
  EXPECT_EQ(e.reportingInstance, "egress-operator-e2e-0");
  ASSERT_TRUE(e.firstTimestamp && e.lastTimestamp);
  EXPECT_LE(*e.firstTimestamp, *e.lastTimestamp);
  EXPECT_THAT(e.metadata.name, ::testing::StartsWith("routes."));

  auto kubectl = controlPlane().kubectl({"get", "events", "-n", ns_});
  ASSERT_TRUE(kubectl.ok()) << kubectl.output;
  EXPECT_THAT(kubectl.output, HasSubstr("RouteConflict"));
  EXPECT_THAT(kubectl.output, HasSubstr("configmap/routes"));
  EXPECT_THAT(kubectl.output, HasSubstr("destination 10.0.0.0/8 overlaps the cluster CIDR"));
  // The 1.20 server's table has no count column ("(x5 over ...)" came later): ask for it.
  auto counted = controlPlane().kubectl(
      {"get", "events", "-n", ns_, "--no-headers", "-o",
       "custom-columns=OBJECT:.involvedObject.name,REASON:.reason,COUNT:.count"});
  ASSERT_TRUE(counted.ok()) << counted.output;
  EXPECT_THAT(counted.output, MatchesRegex("routes +RouteConflict +5\n"));

  // The Event goes away (its TTL, or someone deletes it): the next repeat creates it again,
  // with the count the recorder knows.
  const std::string name = e.metadata.name;
  ASSERT_TRUE(runSync(ioc_, client_->remove(kEvents, ns_, name)));
  recorder_->event(ref, core::kEventTypeWarning, "RouteConflict",
                   "destination 10.0.0.0/8 overlaps the cluster CIDR");
  runUntilWritten();
  events = eventsAbout(ns_, "routes");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].metadata.name, name);
  EXPECT_EQ(events[0].count, 6);
}

TEST_F(EventRecorderE2E, ClusterScopedObjectsReportToDefaultAndShutdownFlushes) {
  auto got = runSync(ioc_, client_->get(kNamespaces, "", ns_));
  ASSERT_TRUE(got) << got.error().message();
  auto metadata = meta::decodeObjectMeta((*got)["metadata"]);
  ASSERT_TRUE(metadata);
  const auto ref = objectReference(*metadata, "v1", "Namespace");
  recorder_->eventf(ref, core::kEventTypeNormal, "Selected", "{} policies select pods here", 3);

  // Not run yet: shutdown() must write it before it returns.
  ASSERT_EQ(recorder_->pending(), 1u);
  std::optional<bool> done;
  testutil::spawnInto(ioc_, shutDown(recorder_.get(), clock_.now() + std::chrono::seconds(30)),
                      done);
  runUntil([&] { return done.has_value(); });
  recorder_.reset();

  auto events = eventsAbout("default", ns_);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].message, "3 policies select pods here");
  EXPECT_EQ(events[0].involvedObject.kind, "Namespace");
  EXPECT_EQ(events[0].involvedObject.namespace_, "");
  EXPECT_EQ(events[0].metadata.namespace_, "default");
}

}  // namespace
}  // namespace egress::controllerruntime
