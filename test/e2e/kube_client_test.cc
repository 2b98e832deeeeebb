// End-to-end tests of pkg/kube against the real local control plane: verbs and subresources,
// server-side apply, pagination, gzip-compressed lists, watches from a known resourceVersion,
// 410 Gone after an etcd compaction, and every kind of credential a kubeconfig can carry.
#include <fstream>
#include <random>
#include <set>

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_client.h"
#include "test/e2e/testenv/environment.h"
#include "test/testutil/run_sync.h"
#include <sys/stat.h>
#include <unistd.h>

namespace egress::kube {
namespace {

using testenv::controlPlane;
using ::testing::HasSubstr;
using testutil::runSync;

const Resource kConfigMaps{"", "v1", "configmaps", true};
const Resource kDeployments{"apps", "v1", "deployments", true};

std::string str(const rapidjson::Value& v, const char* a, const char* b = nullptr) {
  const rapidjson::Value* cur = &v;
  for (const char* key : {a, b}) {
    if (key == nullptr) {
      break;
    }
    auto it = cur->FindMember(key);
    if (it == cur->MemberEnd()) {
      return "<absent>";
    }
    cur = &it->value;
  }
  return cur->IsString() ? cur->GetString() : "<not a string>";
}

std::string configMap(const std::string& name, const std::string& value,
                      const std::string& resourceVersion = "") {
  std::string rv =
      resourceVersion.empty() ? "" : R"(,"resourceVersion":")" + resourceVersion + "\"";
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + "\"" + rv +
         R"(},"data":{"k":")" + value + "\"}}";
}

class KubeClientE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = clientFor(controlPlane().kubeconfig());
    ASSERT_NE(client_, nullptr);
    std::random_device rd;
    ns_ = "kube-e2e-" + std::to_string(rd() % 1000000);
    const std::string error = controlPlane().createNamespace(ns_);
    ASSERT_EQ(error, "");
  }

  std::unique_ptr<RestClient> clientFor(const std::string& kubeconfig, double qps = 500,
                                        bool disableCompression = true) {
    KubeconfigOptions options;
    options.paths = {kubeconfig};
    auto config = loadKubeconfig(options);
    EXPECT_TRUE(config) << (config ? "" : config.error().message());
    if (!config) {
      return nullptr;
    }
    config->qps = qps;
    config->burst = 1000;
    config->disableCompression = disableCompression;
    auto client = RestClient::create(ioc_.get_executor(), *config, nullptr);
    EXPECT_TRUE(client) << (client ? "" : client.error().message());
    return client ? std::move(*client) : nullptr;
  }

  template <class T>
  T run(net::awaitable<T> task) {
    return runSync(ioc_, std::move(task));
  }

  net::io_context ioc_;
  std::unique_ptr<RestClient> client_;
  std::string ns_;
};

TEST_F(KubeClientE2E, ConfigMapCrudWithConflictsAndPreconditions) {
  auto created = run(client_->create(kConfigMaps, ns_, configMap("cm", "v1")));
  ASSERT_TRUE(created) << created.error().message();
  const std::string rv1 = str(*created, "metadata", "resourceVersion");
  const std::string uid = str(*created, "metadata", "uid");

  auto dup = run(client_->create(kConfigMaps, ns_, configMap("cm", "v1")));
  ASSERT_FALSE(dup);
  EXPECT_TRUE(dup.error().isAlreadyExists()) << dup.error().message();

  auto updated = run(client_->update(kConfigMaps, ns_, "cm", configMap("cm", "v2", rv1)));
  ASSERT_TRUE(updated) << updated.error().message();
  EXPECT_EQ(str(*updated, "data", "k"), "v2");

  // A PUT with the old resourceVersion loses to the one before it.
  auto stale = run(client_->update(kConfigMaps, ns_, "cm", configMap("cm", "v3", rv1)));
  ASSERT_FALSE(stale);
  EXPECT_TRUE(stale.error().isConflict()) << stale.error().message();

  auto patched =
      run(client_->patch(kConfigMaps, ns_, "cm", PatchType::Merge, R"({"data":{"extra":"yes"}})"));
  ASSERT_TRUE(patched) << patched.error().message();
  EXPECT_EQ(str(*patched, "data", "k"), "v2");
  EXPECT_EQ(str(*patched, "data", "extra"), "yes");

  auto got = run(client_->get(kConfigMaps, ns_, "cm"));
  ASSERT_TRUE(got);
  EXPECT_EQ(str(*got, "data", "extra"), "yes");

  DeleteOptions wrongUid;
  wrongUid.preconditionUid = "00000000-0000-0000-0000-000000000000";
  auto refused = run(client_->remove(kConfigMaps, ns_, "cm", wrongUid));
  ASSERT_FALSE(refused);
  EXPECT_TRUE(refused.error().isConflict()) << refused.error().message();

  DeleteOptions rightUid;
  rightUid.preconditionUid = uid;
  ASSERT_TRUE(run(client_->remove(kConfigMaps, ns_, "cm", rightUid)));
  auto gone = run(client_->get(kConfigMaps, ns_, "cm"));
  ASSERT_FALSE(gone);
  EXPECT_TRUE(gone.error().isNotFound());
  EXPECT_THAT(gone.error().message(), HasSubstr("\"cm\" not found"));
}

TEST_F(KubeClientE2E, ServerSideApplyOwnsFieldsAndDetectsConflicts) {
  const std::string desired =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied"},"data":{"a":"1"}})";
  auto first = run(client_->apply(kConfigMaps, ns_, "applied", desired, {"egress-e2e", false}));
  ASSERT_TRUE(first) << first.error().message();
  auto again = run(client_->apply(kConfigMaps, ns_, "applied", desired, {"egress-e2e", false}));
  ASSERT_TRUE(again);
  EXPECT_EQ(str(*first, "metadata", "resourceVersion"), str(*again, "metadata", "resourceVersion"))
      << "re-applying the same intent is a no-op";

  const std::string rival =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied"},"data":{"a":"2"}})";
  auto conflict = run(client_->apply(kConfigMaps, ns_, "applied", rival, {"someone-else", false}));
  ASSERT_FALSE(conflict);
  EXPECT_TRUE(conflict.error().isConflict()) << conflict.error().message();
  auto forced = run(client_->apply(kConfigMaps, ns_, "applied", rival, {"someone-else", true}));
  ASSERT_TRUE(forced) << forced.error().message();
  EXPECT_EQ(str(*forced, "data", "a"), "2");
}

TEST_F(KubeClientE2E, DeploymentStatusAndScaleSubresources) {
  const std::string deployment = R"({"apiVersion":"apps/v1","kind":"Deployment",
    "metadata":{"name":"web"},
    "spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},
      "template":{"metadata":{"labels":{"app":"web"}},
        "spec":{"containers":[{"name":"c","image":"example.invalid/web:1"}]}}}})";
  auto applied = run(client_->apply(kDeployments, ns_, "web", deployment, {"egress-e2e", true}));
  ASSERT_TRUE(applied) << applied.error().message();

  // The real controller-manager, scheduler and test kubelet make it available.
  bool available = false;
  for (int i = 0; i < 600 && !available; ++i) {
    auto status = run(client_->get(kDeployments, ns_, "web", "status"));
    ASSERT_TRUE(status) << status.error().message();
    const auto& st = (*status)["status"];
    available = st.HasMember("availableReplicas") && st["availableReplicas"].GetInt() == 1;
    if (!available) {
      usleep(100 * 1000);
    }
  }
  ASSERT_TRUE(available);

  auto scale = run(client_->get(kDeployments, ns_, "web", "scale"));
  ASSERT_TRUE(scale) << scale.error().message();
  EXPECT_EQ(str(*scale, "kind"), "Scale");
  auto rescaled = run(client_->patch(kDeployments, ns_, "web", PatchType::Merge,
                                     R"({"spec":{"replicas":3}})", {}, "scale"));
  ASSERT_TRUE(rescaled) << rescaled.error().message();
  auto after = run(client_->get(kDeployments, ns_, "web"));
  ASSERT_TRUE(after);
  EXPECT_EQ((*after)["spec"]["replicas"].GetInt(), 3);

  // A status patch lands on the status subresource (the controller may later rewrite it).
  auto statusPatch = run(client_->patch(kDeployments, ns_, "web", PatchType::Merge,
                                        R"({"status":{"collisionCount":7}})", {}, "status"));
  ASSERT_TRUE(statusPatch) << statusPatch.error().message();
  EXPECT_EQ((*statusPatch)["status"]["collisionCount"].GetInt(), 7);
  // ... and a spec change sent to /status is ignored, as the API promises.
  auto ignored = run(client_->patch(kDeployments, ns_, "web", PatchType::Merge,
                                    R"({"spec":{"replicas":9}})", {}, "status"));
  ASSERT_TRUE(ignored);
  EXPECT_EQ((*ignored)["spec"]["replicas"].GetInt(), 3);
}

TEST_F(KubeClientE2E, ListPaginationReturnsEachObjectExactlyOnce) {
  constexpr int kObjects = 1200;
  for (int i = 0; i < kObjects; ++i) {
    auto r = run(client_->create(kConfigMaps, ns_, configMap("page-" + std::to_string(i), "x")));
    ASSERT_TRUE(r) << r.error().message();
  }
  std::multiset<std::string> seen;
  ListOptions opts;
  opts.limit = 500;
  int pages = 0;
  do {
    auto page = run(client_->list(kConfigMaps, ns_, opts));
    ASSERT_TRUE(page) << page.error().message();
    ++pages;
    for (const auto& item : (*page)["items"].GetArray()) {
      // The namespace also holds kube-root-ca.crt, published by the controller-manager.
      if (const auto name = str(item, "metadata", "name"); name.rfind("page-", 0) == 0) {
        seen.insert(name);
      }
    }
    opts.continueToken = str(*page, "metadata", "continue");
    if (opts.continueToken == "<absent>") {
      opts.continueToken.clear();
    }
  } while (!opts.continueToken.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen.size(), static_cast<size_t>(kObjects));
  for (int i = 0; i < kObjects; ++i) {
    ASSERT_EQ(seen.count("page-" + std::to_string(i)), 1u) << i;
  }
}

// The API server gzips responses over 128 KiB when asked to (APIResponseCompression): a client
// with compression enabled (the default) asks, decompresses, and gets the same objects as one
// with compression disabled (client_).
TEST_F(KubeClientE2E, LargeListsArriveCompressedWhenCompressionIsEnabled) {
  const std::string value(4096, 'v');
  for (int i = 0; i < 60; ++i) {
    auto r = run(client_->create(kConfigMaps, ns_, configMap("big-" + std::to_string(i), value)));
    ASSERT_TRUE(r) << r.error().message();
  }
  const std::string path = "/api/v1/namespaces/" + ns_ + "/configmaps";
  auto gzipClient = clientFor(controlPlane().kubeconfig(), 500, false);
  ASSERT_NE(gzipClient, nullptr);
  auto compressed = run(gzipClient->raw("GET", path));
  ASSERT_TRUE(compressed) << compressed.error().message();
  EXPECT_TRUE(compressed->decompressed)
      << "the server did not compress a " << compressed->body.size() << "-byte list";

  auto plain = run(client_->raw("GET", path));
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_FALSE(plain->decompressed);

  auto viaGzip = run(gzipClient->list(kConfigMaps, ns_, {}));
  auto viaPlain = run(client_->list(kConfigMaps, ns_, {}));
  ASSERT_TRUE(viaGzip && viaPlain);
  EXPECT_EQ((*viaGzip)["items"].Size(), (*viaPlain)["items"].Size());
  EXPECT_GE((*viaGzip)["items"].Size(), 60u);
}

TEST_F(KubeClientE2E, WatchFromAKnownResourceVersionSeesExactlyWhatFollowed) {
  ASSERT_TRUE(run(client_->create(kConfigMaps, ns_, configMap("before", "x"))));
  auto marker = run(client_->create(kConfigMaps, ns_, configMap("a", "1")));
  ASSERT_TRUE(marker);
  const std::string rv = str(*marker, "metadata", "resourceVersion");

  ASSERT_TRUE(
      run(client_->patch(kConfigMaps, ns_, "a", PatchType::Merge, R"({"data":{"k":"2"}})")));
  ASSERT_TRUE(run(client_->create(kConfigMaps, ns_, configMap("b", "1"))));
  ASSERT_TRUE(run(client_->remove(kConfigMaps, ns_, "a")));

  ListOptions opts;
  opts.resourceVersion = rv;
  opts.timeoutSeconds = 3;
  opts.allowWatchBookmarks = true;
  auto watch = run(client_->watch(kConfigMaps, ns_, opts));
  ASSERT_TRUE(watch) << watch.error().message();
  std::vector<std::string> events;
  for (;;) {
    auto ev = run((*watch)->next());
    ASSERT_TRUE(ev) << ev.error().message();
    if (!ev->has_value()) {
      break;  // the server ended the watch after timeoutSeconds: a clean end
    }
    if ((**ev).type == WatchEventType::Bookmark) {
      continue;
    }
    events.push_back(std::string(toString((**ev).type)) + " " +
                     str((**ev).object(), "metadata", "name"));
  }
  EXPECT_EQ(events, (std::vector<std::string>{"MODIFIED a", "ADDED b", "DELETED a"}));
}

TEST_F(KubeClientE2E, CompactedResourceVersionIsGone) {
  auto old = run(client_->create(kConfigMaps, ns_, configMap("old", "1")));
  ASSERT_TRUE(old);
  const std::string rv = str(*old, "metadata", "resourceVersion");
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(run(client_->patch(kConfigMaps, ns_, "old", PatchType::Merge,
                                   R"({"data":{"k":")" + std::to_string(i) + "\"}}")));
  }
  auto compact = controlPlane().ctl({"compact"});
  ASSERT_TRUE(compact.ok()) << compact.output;

  // An exact list at the compacted revision is answered by etcd: 410 Expired.
  ListOptions exact;
  exact.resourceVersion = rv;
  exact.resourceVersionMatch = "Exact";
  auto list = run(client_->list(kConfigMaps, ns_, exact));
  ASSERT_FALSE(list);
  EXPECT_TRUE(list.error().isGone() || list.error().isResourceExpired()) << list.error().message();

  // The watch cache still holds recent history in memory; restarting the apiserver starts a
  // new one at the current revision, so a watch from the compacted revision is too old.
  auto restart = controlPlane().ctl({"restart", "apiserver"});
  ASSERT_TRUE(restart.ok()) << restart.output;
  ListOptions from;
  from.resourceVersion = rv;
  auto watch = run(client_->watch(kConfigMaps, ns_, from));
  std::optional<Error> err;
  if (!watch) {
    err = watch.error();
  } else {
    auto ev = run((*watch)->next());
    ASSERT_FALSE(ev && ev->has_value()) << "no event may come from a compacted revision";
    if (!ev) {
      err = ev.error();
    }
  }
  ASSERT_TRUE(err);
  EXPECT_TRUE(err->isGone()) << err->message();
}

TEST_F(KubeClientE2E, TokenClientCertAndExecPluginKubeconfigsAuthenticate) {
  auto version = [this](RestClient& c) { return run(c.raw("GET", "/version")); };
  auto cert = clientFor(controlPlane().kubeconfig());
  auto token = clientFor(controlPlane().tokenKubeconfig());
  ASSERT_TRUE(cert && token);
  auto byCert = version(*cert);
  ASSERT_TRUE(byCert) << byCert.error().message();
  EXPECT_THAT(byCert->body, HasSubstr("gitVersion"));
  auto byToken = version(*token);
  ASSERT_TRUE(byToken) << byToken.error().message();

  // An exec plugin that hands out the admin token, as cloud CLIs do.
  const std::string dir = controlPlane().dir();
  const std::string plugin = dir + "/exec-plugin.sh";
  {
    std::ofstream out(plugin);
    out << "#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
           "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}' \"$(cat "
        << dir << "/pki/admin.token)\"\n";
  }
  chmod(plugin.c_str(), 0755);
  const std::string execKubeconfig = dir + "/kubeconfig-exec";
  {
    std::ofstream out(execKubeconfig);
    out << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
        << controlPlane().server() << "\n    certificate-authority: pki/ca.crt\n"
        << "users:\n- name: u\n  user:\n    exec:\n      apiVersion: "
           "client.authentication.k8s.io/v1\n      command: ./exec-plugin.sh\n"
           "      interactiveMode: Never\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
           "current-context: x\n";
  }
  auto exec = clientFor(execKubeconfig);
  ASSERT_TRUE(exec);
  auto byExec = version(*exec);
  ASSERT_TRUE(byExec) << byExec.error().message();

  const std::string wrongKubeconfig = dir + "/kubeconfig-wrong";
  {
    std::ofstream out(wrongKubeconfig);
    out << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
        << controlPlane().server() << "\n    certificate-authority: pki/ca.crt\n"
        << "users:\n- name: u\n  user:\n    token: not-a-valid-token\n"
           "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";
  }
  auto wrong = clientFor(wrongKubeconfig);
  ASSERT_TRUE(wrong);
  auto denied = run(wrong->get(kConfigMaps, "default", "anything"));
  ASSERT_FALSE(denied);
  EXPECT_TRUE(denied.error().isUnauthorized());
  EXPECT_EQ(denied.error().message(), "Unauthorized (401): Unauthorized");
}

}  // namespace
}  // namespace egress::kube
