// End-to-end tests of the C++ test kubelet (test/testenv_kubelet) in the control plane it is part
// of: nodes registered as kubelet.sh registers them (Ready, no not-ready taint), Deployments
// made Available with unique pod IPs inside each node's podCIDR, hostNetwork pods at their node's
// address, pods deleted at once whatever their grace period, an API server restart and a kubelet
// restart survived; and how many pods per second it makes Running (500 replicas over 3 nodes,
// printed; run with EGRESS_TESTENV_KUBELET= to measure kubelet.sh instead).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "pkg/apis/core/pod.h"
#include "pkg/base/clock.h"
#include "pkg/cache/rest_lister_watcher.h"
#include "pkg/cache/shared_informer.h"
#include "pkg/ipam/address.h"
#include "pkg/kube/kubeconfig.h"
#include "pkg/kube/rest_client.h"
#include "test/e2e/testenv/environment.h"
#include "test/testutil/run_sync.h"
#include <signal.h>

namespace egress::testenv {
namespace {

using ::testing::HasSubstr;
using testutil::runSync;
using Seconds = std::chrono::duration<double>;

const kube::Resource kPods{"", "v1", "pods", true};
const kube::Resource kNodes{"", "v1", "nodes", false};
const kube::Resource kDeployments{"apps", "v1", "deployments", true};

// As environment.cc starts the control plane.
int nodeCount() {
  const char* nodes = std::getenv("EGRESS_TESTENV_NODES");
  return nodes != nullptr ? std::atoi(nodes) : 2;
}

std::string str(const rapidjson::Value& v, std::initializer_list<const char*> path) {
  const rapidjson::Value* cur = &v;
  for (const char* key : path) {
    if (!cur->IsObject()) {
      return "<absent>";
    }
    auto it = cur->FindMember(key);
    if (it == cur->MemberEnd()) {
      return "<absent>";
    }
    cur = &it->value;
  }
  return cur->IsString() ? std::string(cur->GetString(), cur->GetStringLength()) : "<not a string>";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int kubeletPid(const ControlPlane& cp) {
  int pid = -1;
  std::ifstream(cp.dir() + "/kubelet.pid") >> pid;
  return pid;
}

bool inCidr(const std::string& ip, const std::string& cidr) {
  auto a = ipam::parseAddress(ip);
  auto p = ipam::parseCIDR(cidr);
  return a && p && a->value >= p->first() && a->value <= p->last();
}

std::string deployment(const std::string& name, int replicas) {
  return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":")" + name +
         R"("},"spec":{"replicas":)" + std::to_string(replicas) +
         R"(,"selector":{"matchLabels":{"app":")" + name +
         R"("}},"template":{"metadata":{"labels":{"app":")" + name +
         R"("}},"spec":{"containers":[{"name":"app","image":"example.invalid/egress/app:1"},)"
         R"({"name":"sidecar","image":"example.invalid/egress/sidecar:2"}]}}}})";
}

std::string pod(const std::string& name, const std::string& spec) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"("},"spec":{"containers":[{"name":"app","image":"example.invalid/egress/app:1"}])" +
         (spec.empty() ? "" : "," + spec) + "}}";
}

class TestKubeletE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    kube::KubeconfigOptions options;
    options.paths = {controlPlane().kubeconfig()};
    auto config = kube::loadKubeconfig(options);
    ASSERT_TRUE(config) << config.error().message();
    config->qps = -1;
    auto client = kube::RestClient::create(ioc_.get_executor(), *config, nullptr);
    ASSERT_TRUE(client) << client.error().message();
    client_ = std::move(*client);
    std::random_device rd;
    ns_ = "kubelet-e2e-" + std::to_string(rd() % 1000000);
    ASSERT_EQ(controlPlane().createNamespace(ns_), "");
  }

  void TearDown() override {
    if (!ns_.empty()) {
      // Also the kubelet deleting every pod of the namespace at once.
      auto del = controlPlane().kubectl({"delete", "namespace", ns_, "--timeout=180s"});
      EXPECT_TRUE(del.ok()) << del.output;
    }
  }

  template <class T>
  T run(boost::asio::awaitable<T> task) {
    return runSync(ioc_, std::move(task));
  }

  void create(const kube::Resource& r, const std::string& body) {
    auto created = run(client_->create(r, ns_, body));
    ASSERT_TRUE(created) << created.error().message();
  }

  // A bare pod the scheduler places, Ready; `spec` is merged into its spec.
  void createReadyPod(const std::string& name, const std::string& spec) {
    ASSERT_NO_FATAL_FAILURE(create(kPods, pod(name, spec)));
    auto ready = controlPlane().kubectl(
        {"-n", ns_, "wait", "--for=condition=Ready", "pod/" + name, "--timeout=120s"});
    ASSERT_TRUE(ready.ok()) << ready.output;
  }

  // Polls `check` every 100 ms for up to `limit`; true once it held.
  static bool eventually(const std::function<bool()>& check, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (check()) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return check();
  }

  bool available(const std::string& name, int replicas) {
    auto d = run(client_->get(kDeployments, ns_, name));
    if (!d || !d->HasMember("status")) {
      return false;
    }
    const auto& s = (*d)["status"];
    return s.HasMember("availableReplicas") && s["availableReplicas"].IsInt64() &&
           s["availableReplicas"].GetInt64() == replicas;
  }

  void waitAvailable(const std::string& name, int replicas) {
    EXPECT_TRUE(eventually([&] { return available(name, replicas); }, std::chrono::seconds(180)))
        << "deployment " << name << " not Available with " << replicas << " replicas\n"
        << controlPlane().kubectl({"-n", ns_, "get", "deploy,rs,pods", "-o", "wide"}).output;
  }

  rapidjson::Document listPods(const std::string& ns) {
    kube::ListOptions opts;
    auto list = run(client_->list(kPods, ns, opts));
    EXPECT_TRUE(list) << list.error().message();
    return list ? std::move(*list) : rapidjson::Document();
  }

  // Every pod of `ns` (all namespaces for "") is Running and Ready on a fake node, with its
  // node's hostIP and a pod IP inside that node's podCIDR that no other pod has; returns how
  // many pods there are.
  size_t expectRunningWithUniqueIps(const std::string& ns, std::set<std::string>* seen) {
    rapidjson::Document pods = listPods(ns);
    if (!pods.IsObject() || !pods.HasMember("items")) {
      ADD_FAILURE() << "no pod list";
      return 0;
    }
    size_t count = 0;
    for (const auto& p : pods["items"].GetArray()) {
      const std::string node = str(p, {"spec", "nodeName"});
      if (!node.starts_with("egress-node-") || p["metadata"].HasMember("deletionTimestamp")) {
        continue;
      }
      const std::string key =
          str(p, {"metadata", "namespace"}) + "/" + str(p, {"metadata", "name"});
      const std::string index = node.substr(std::string("egress-node-").size());
      const std::string ip = str(p, {"status", "podIP"});
      EXPECT_EQ(str(p, {"status", "phase"}), "Running") << key;
      EXPECT_EQ(str(p, {"status", "hostIP"}), "127.0.1." + index) << key;
      EXPECT_TRUE(inCidr(ip, "10.244." + index + ".0/24")) << key << " on " << node << ": " << ip;
      EXPECT_TRUE(seen->insert(ip).second) << key << ": " << ip << " is another pod's IP too";
      const bool hasPodIps = p["status"].HasMember("podIPs") && p["status"]["podIPs"].IsArray() &&
                             !p["status"]["podIPs"].Empty();
      EXPECT_TRUE(hasPodIps) << key;
      if (hasPodIps) {
        EXPECT_EQ(str(p["status"]["podIPs"][0], {"ip"}), ip) << key;
      }
      std::set<std::string> trueConditions;
      for (const auto& c : p["status"]["conditions"].GetArray()) {
        if (str(c, {"status"}) == "True") {
          trueConditions.insert(str(c, {"type"}));
        }
      }
      EXPECT_EQ(trueConditions,
                (std::set<std::string>{"Initialized", "Ready", "ContainersReady", "PodScheduled"}))
          << key;
      ++count;
    }
    return count;
  }

  boost::asio::io_context ioc_;
  std::unique_ptr<kube::RestClient> client_;
  std::string ns_;
};

TEST_F(TestKubeletE2E, TheControlPlaneRunsTheCppKubelet) {
  const ControlPlane& cp = controlPlane();
  ASSERT_NE(cp.kubelet(), "") << "EGRESS_TESTENV_KUBELET chose kubelet.sh";
  const int pid = kubeletPid(cp);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe").string(),
            std::filesystem::canonical(cp.kubelet()).string());
  const std::string log = readFile(cp.dir() + "/logs/kubelet.log");
  for (int i = 1; i <= nodeCount(); ++i) {
    EXPECT_THAT(log, HasSubstr("registered node egress-node-" + std::to_string(i))) << log;
  }
}

TEST_F(TestKubeletE2E, NodesAreRegisteredReadyAndUntaintedAsKubeletShDoes) {
  kube::ListOptions opts;
  opts.labelSelector = "egress.testenv/fake=true";
  auto nodes = run(client_->list(kNodes, "", opts));
  ASSERT_TRUE(nodes) << nodes.error().message();
  std::set<std::string> names;
  for (const auto& n : (*nodes)["items"].GetArray()) {
    const std::string name = str(n, {"metadata", "name"});
    names.insert(name);
    const std::string i = name.substr(std::string("egress-node-").size());
    const auto& labels = n["metadata"]["labels"];
    EXPECT_EQ(str(labels, {"kubernetes.io/hostname"}), name);
    EXPECT_EQ(str(labels, {"kubernetes.io/os"}), "linux");
    EXPECT_EQ(str(labels, {"kubernetes.io/arch"}), "amd64");
    EXPECT_EQ(str(n, {"spec", "podCIDR"}), "10.244." + i + ".0/24");
    ASSERT_TRUE(n["spec"].HasMember("podCIDRs"));
    EXPECT_EQ(n["spec"]["podCIDRs"].Size(), 1u);
    EXPECT_FALSE(n["spec"].HasMember("taints") && !n["spec"]["taints"].Empty())
        << name << " is tainted";
    const auto& status = n["status"];
    for (const char* key : {"capacity", "allocatable"}) {
      EXPECT_EQ(str(status, {key, "cpu"}), "16") << name;
      EXPECT_EQ(str(status, {key, "memory"}), "64Gi") << name;
      EXPECT_EQ(str(status, {key, "pods"}), "250") << name;
      EXPECT_EQ(str(status, {key, "ephemeral-storage"}), "100Gi") << name;
    }
    std::map<std::string, std::string> addresses;
    for (const auto& a : status["addresses"].GetArray()) {
      addresses[str(a, {"type"})] = str(a, {"address"});
    }
    EXPECT_EQ(addresses, (std::map<std::string, std::string>{{"InternalIP", "127.0.1." + i},
                                                             {"Hostname", name}}));
    std::map<std::string, std::string> conditions;
    for (const auto& c : status["conditions"].GetArray()) {
      conditions[str(c, {"type"})] = str(c, {"status"});
    }
    EXPECT_EQ(conditions, (std::map<std::string, std::string>{{"Ready", "True"},
                                                              {"MemoryPressure", "False"},
                                                              {"DiskPressure", "False"},
                                                              {"PIDPressure", "False"}}));
    EXPECT_EQ(str(status, {"nodeInfo", "kubeletVersion"}), "v1.20.0-egress-testenv");
    EXPECT_EQ(str(status, {"nodeInfo", "containerRuntimeVersion"}), "fake://0");
  }
  std::set<std::string> want;
  for (int i = 1; i <= nodeCount(); ++i) {
    want.insert("egress-node-" + std::to_string(i));
  }
  EXPECT_EQ(names, want);
}

TEST_F(TestKubeletE2E, DeploymentBecomesAvailableWithUniquePodIpsInTheNodesRanges) {
  constexpr int kReplicas = 60;
  create(kDeployments, deployment("web", kReplicas));
  waitAvailable("web", kReplicas);
  std::set<std::string> seen;
  EXPECT_EQ(expectRunningWithUniqueIps(ns_, &seen), static_cast<size_t>(kReplicas));
  // One status per container, running and ready.
  rapidjson::Document pods = listPods(ns_);
  for (const auto& p : pods["items"].GetArray()) {
    const auto& statuses = p["status"]["containerStatuses"];
    ASSERT_EQ(statuses.Size(), 2u);
    EXPECT_EQ(str(statuses[0], {"name"}), "app");
    EXPECT_EQ(str(statuses[0], {"image"}), "example.invalid/egress/app:1");
    EXPECT_EQ(str(statuses[1], {"name"}), "sidecar");
    EXPECT_EQ(str(statuses[1], {"image"}), "example.invalid/egress/sidecar:2");
    for (const auto& s : statuses.GetArray()) {
      EXPECT_TRUE(s["ready"].IsTrue());
      EXPECT_TRUE(s["state"].HasMember("running"));
    }
  }
}

TEST_F(TestKubeletE2E, AHostNetworkPodRunsAtItsNodesAddress) {
  ASSERT_NO_FATAL_FAILURE(createReadyPod("host", R"("hostNetwork":true)"));
  auto p = run(client_->get(kPods, ns_, "host"));
  ASSERT_TRUE(p) << p.error().message();
  const std::string node = str(*p, {"spec", "nodeName"});
  ASSERT_THAT(node, ::testing::StartsWith("egress-node-"));
  const std::string nodeIp = "127.0.1." + node.substr(std::string("egress-node-").size());
  EXPECT_EQ(str(*p, {"status", "hostIP"}), nodeIp);
  EXPECT_EQ(str(*p, {"status", "podIP"}), nodeIp);
}

TEST_F(TestKubeletE2E, ADeletedPodDisappearsAtOnceWhateverItsGracePeriod) {
  // Without a kubelet that confirms the deletion, this pod would stay Terminating for an hour.
  ASSERT_NO_FATAL_FAILURE(
      createReadyPod("slow-to-stop", R"("terminationGracePeriodSeconds":3600)"));
  auto del = run(client_->remove(kPods, ns_, "slow-to-stop"));
  ASSERT_TRUE(del) << del.error().message();
  // The DELETE only set the deletionTimestamp (its grace period is the pod's).
  ASSERT_TRUE((*del)["metadata"].HasMember("deletionTimestamp"));
  EXPECT_TRUE(eventually(
      [&] {
        auto p = run(client_->get(kPods, ns_, "slow-to-stop"));
        return !p && p.error().isNotFound();
      },
      std::chrono::seconds(60)))
      << "the pod is still there";
  EXPECT_THAT(readFile(controlPlane().dir() + "/logs/kubelet.log"),
              HasSubstr("deleted " + ns_ + "/slow-to-stop"));
}

TEST_F(TestKubeletE2E, SurvivesAnApiserverRestartAndKeepsMakingPodsRunning) {
  create(kDeployments, deployment("before", 10));
  waitAvailable("before", 10);
  const int pid = kubeletPid(controlPlane());
  ASSERT_GT(pid, 0);

  auto restart = controlPlane().ctl({"restart", "apiserver"});
  ASSERT_TRUE(restart.ok()) << restart.output;

  create(kDeployments, deployment("after", 20));
  waitAvailable("after", 20);
  // The same process did it: the kubelet is restarted only on request.
  EXPECT_EQ(kubeletPid(controlPlane()), pid);
  EXPECT_EQ(kill(pid, 0), 0) << "the kubelet died";
  std::set<std::string> seen;
  EXPECT_EQ(expectRunningWithUniqueIps(ns_, &seen), 30u);
}

TEST_F(TestKubeletE2E, PodIpsStayUniqueAcrossAKubeletRestart) {
  create(kDeployments, deployment("first", 30));
  waitAvailable("first", 30);
  const int pid = kubeletPid(controlPlane());
  auto restart = controlPlane().ctl({"restart", "kubelet"});
  ASSERT_TRUE(restart.ok()) << restart.output;
  EXPECT_NE(kubeletPid(controlPlane()), pid);

  // The new process learns the addresses in use before it hands out any.
  create(kDeployments, deployment("second", 30));
  waitAvailable("second", 30);
  std::set<std::string> mine;
  EXPECT_EQ(expectRunningWithUniqueIps(ns_, &mine), 60u);
  // Unique across every namespace, not only this test's.
  std::set<std::string> all;
  EXPECT_GE(expectRunningWithUniqueIps("", &all), 60u);
}

// Pods of one namespace as an informer sees them, timed as the events arrive.
class PodTracker {
 public:
  PodTracker(boost::asio::io_context& ioc, kube::RestClient& client, const std::string& ns)
      : ioc_(ioc), clock_(ioc.get_executor()) {
    cache::SharedIndexInformer<core::Pod>::Options options;
    options.name = "tracker";
    informer_ = std::make_unique<cache::SharedIndexInformer<core::Pod>>(
        std::make_unique<cache::RestListerWatcher>(client, kPods, ns), core::decodePod, clock_,
        options, ioc.get_executor());
    informer_->start(ioc.get_executor());
  }
  ~PodTracker() {
    informer_->stop();
    for (int i = 0; i < 500 && !informer_->stopped(); ++i) {
      ioc_.run_for(std::chrono::milliseconds(10));
    }
  }

  struct Counts {
    size_t pods = 0;
    size_t bound = 0;    // spec.nodeName set
    size_t running = 0;  // Running and Ready
  };
  Counts counts() const {
    Counts c;
    informer_->indexer().forEach([&](const auto& p) {
      ++c.pods;
      c.bound += p->spec.nodeName.empty() ? 0 : 1;
      c.running += p->status.phase == "Running" && core::isPodReady(*p) ? 1 : 0;
    });
    return c;
  }

  bool waitSynced(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!informer_->hasSynced() && std::chrono::steady_clock::now() < deadline) {
      ioc_.run_for(std::chrono::milliseconds(5));
    }
    return informer_->hasSynced();
  }

  // Runs the io_context until `done(counts())` or `limit`; the seconds it took, or nullopt.
  std::optional<double> runUntil(const std::function<bool(const Counts&)>& done,
                                 std::chrono::seconds limit) {
    const auto start = std::chrono::steady_clock::now();
    while (!done(counts())) {
      if (std::chrono::steady_clock::now() - start > limit) {
        return std::nullopt;
      }
      ioc_.run_for(std::chrono::milliseconds(5));
    }
    return Seconds(std::chrono::steady_clock::now() - start).count();
  }

 private:
  boost::asio::io_context& ioc_;
  RealClock clock_;
  std::unique_ptr<cache::SharedIndexInformer<core::Pod>> informer_;
};

// SIGSTOPs the kubelet for as long as it lives.
class PausedKubelet {
 public:
  explicit PausedKubelet(int pid) : pid_(pid) { stopped_ = kill(pid_, SIGSTOP) == 0; }
  ~PausedKubelet() { resume(); }
  PausedKubelet(const PausedKubelet&) = delete;
  PausedKubelet& operator=(const PausedKubelet&) = delete;
  bool stopped() const { return stopped_; }
  void resume() {
    if (stopped_) {
      kill(pid_, SIGCONT);
      stopped_ = false;
    }
  }

 private:
  int pid_;
  bool stopped_ = false;
};

// 500 replicas over 3 nodes (capacity 250 pods each): how fast they all run, end to end and with
// every pod already bound when the kubelet starts looking (so only the kubelet is timed), and
// how fast the kubelet deletes them. The numbers are printed, not asserted: the machine is
// shared. What is asserted is that every pod runs, at an address no other pod has.
TEST_F(TestKubeletE2E, ThroughputOfFiveHundredReplicasOverThreeNodes) {
  if (nodeCount() < 3) {
    GTEST_SKIP() << "needs EGRESS_TESTENV_NODES >= 3 (ctest sets it for this binary)";
  }
  constexpr int kReplicas = 500;
  const auto kLimit = std::chrono::seconds(900);  // kubelet.sh needs minutes
  const std::string kubelet =
      controlPlane().kubelet().empty() ? "kubelet.sh" : controlPlane().kubelet();
  PodTracker tracker(ioc_, *client_, ns_);
  ASSERT_TRUE(tracker.waitSynced(std::chrono::seconds(60)));

  // 1. End to end: Deployment -> ReplicaSet -> pods -> scheduler -> kubelet.
  const auto start = std::chrono::steady_clock::now();
  create(kDeployments, deployment("burst", kReplicas));
  auto allRunning = tracker.runUntil(
      [](const auto& c) { return c.running == static_cast<size_t>(kReplicas); }, kLimit);
  ASSERT_TRUE(allRunning) << tracker.counts().running << " of " << kReplicas << " Running";
  const double endToEnd = Seconds(std::chrono::steady_clock::now() - start).count();
  std::set<std::string> seen;
  EXPECT_EQ(expectRunningWithUniqueIps(ns_, &seen), static_cast<size_t>(kReplicas));

  // 2. The kubelet deleting them: scale to 0, every pod gone.
  const auto scaleStart = std::chrono::steady_clock::now();
  auto scaled = run(client_->patch(kDeployments, ns_, "burst", kube::PatchType::Merge,
                                   R"({"spec":{"replicas":0}})"));
  ASSERT_TRUE(scaled) << scaled.error().message();
  auto allGone = tracker.runUntil([](const auto& c) { return c.pods == 0; }, kLimit);
  ASSERT_TRUE(allGone) << tracker.counts().pods << " pods left";
  const double deleting = Seconds(std::chrono::steady_clock::now() - scaleStart).count();

  // 3. The kubelet alone: every pod bound while it is stopped, then timed from SIGCONT.
  std::optional<double> kubeletOnly;
  {
    PausedKubelet paused(kubeletPid(controlPlane()));
    ASSERT_TRUE(paused.stopped());
    create(kDeployments, deployment("bound-first", kReplicas));
    auto bound = tracker.runUntil(
        [](const auto& c) { return c.bound == static_cast<size_t>(kReplicas); }, kLimit);
    ASSERT_TRUE(bound) << tracker.counts().bound << " of " << kReplicas << " bound";
    ASSERT_EQ(tracker.counts().running, 0u);
    paused.resume();
    kubeletOnly = tracker.runUntil(
        [](const auto& c) { return c.running == static_cast<size_t>(kReplicas); }, kLimit);
    ASSERT_TRUE(kubeletOnly) << tracker.counts().running << " of " << kReplicas << " Running";
  }
  std::set<std::string> seenAgain;
  EXPECT_EQ(expectRunningWithUniqueIps(ns_, &seenAgain), static_cast<size_t>(kReplicas));

  std::printf(
      "test kubelet %s, %d replicas over %d nodes:\n"
      "  end to end (create -> all Running): %.1f s, %.1f pods/s\n"
      "  deleting (scale to 0 -> all gone):  %.1f s, %.1f pods/s\n"
      "  kubelet alone (all bound, SIGCONT -> all Running): %.1f s, %.1f pods/s\n",
      kubelet.c_str(), kReplicas, nodeCount(), endToEnd, kReplicas / endToEnd, deleting,
      kReplicas / deleting, *kubeletOnly, kReplicas / *kubeletOnly);
  std::fflush(stdout);
}

}  // namespace
}  // namespace egress::testenv
