#include "test/testenv_kubelet/fake_kubelet.h"

#include <boost/asio/co_spawn.hpp>
#include <spdlog/spdlog.h>

#include "pkg/apis/core/node.h"
#include "pkg/cache/indexer.h"
#include "pkg/cache/rest_lister_watcher.h"
#include "test/testenv_kubelet/fake_node.h"
#include "test/testenv_kubelet/pod_lifecycle.h"

namespace egress::testenv {
namespace {

const kube::Resource kPods{"", "v1", "pods", true};
const kube::Resource kNodes{"", "v1", "nodes", false};

// Only pods the scheduler (or their creator) bound to a node; which node is ours is decided in
// the handlers, since a field selector cannot match a prefix.
constexpr const char* kBoundPods = "spec.nodeName!=";
// Clock::Duration, so passing them to a coroutine makes no converted temporary.
constexpr Clock::Duration kSyncPoll = std::chrono::milliseconds(50);
constexpr Clock::Duration kStopPoll = std::chrono::milliseconds(10);

std::unique_ptr<workqueue::RateLimiter<std::string>> writeRetries() {
  // A test kubelet should catch up within seconds of an API server restart, not back off for
  // minutes as a controller's 1000 s cap would.
  return std::make_unique<workqueue::ItemExponentialFailureRateLimiter<std::string>>(
      std::chrono::milliseconds(5), std::chrono::seconds(2));
}

// The reflector's backoff between ListAndWatch attempts, shortened for the same reason.
cache::BackoffConfig informerBackoff() {
  cache::BackoffConfig b;
  b.initial = std::chrono::milliseconds(100);
  b.cap = std::chrono::seconds(2);
  return b;
}

}  // namespace

FakeKubelet::FakeKubelet(kube::RestClient& client, Clock& clock, net::any_io_executor executor,
                         FakeKubeletOptions options)
    : client_(client),
      clock_(clock),
      executor_(std::move(executor)),
      options_(options),
      addresses_(options.nodes),
      queue_({.name = "",
              .clock = clock,
              .executor = executor_,
              .registry = nullptr,
              .limiter = writeRetries()}),
      overflowLogged_(static_cast<size_t>(options.nodes) + 1, false),
      wake_(executor_) {
  Informer::Options io;
  io.name = "pods";
  io.transform = trimPod;
  io.reflector.backoff = informerBackoff();
  pods_ = std::make_unique<Informer>(
      std::make_unique<cache::RestListerWatcher>(client_, kPods, "", "", kBoundPods),
      decodeKubeletPod, clock_, std::move(io), executor_);
}

void FakeKubelet::stop() {
  stopping_ = true;
  wake_.notify();
}

net::awaitable<void> FakeKubelet::pause(FakeKubelet* self, Clock::Duration d) {
  const auto deadline = self->clock_.now() + d;
  co_await self->wake_.waitUntil(self->clock_, deadline, Notifier::Place::Back);
}

net::awaitable<void> FakeKubelet::run(FakeKubelet* self) {
  for (int node = 1; node <= self->options_.nodes && !self->stopping_; ++node) {
    co_await registerNode(self, node);
  }
  if (!self->stopping_) {
    self->startPods();
    while (!self->stopping_ && !self->registration_->hasSynced()) {
      co_await pause(self, kSyncPoll);
    }
    spdlog::info("pods listed: {} bound pods cached; {} workers start",
                 self->pods_->indexer().size(), self->options_.maxInFlight);
    for (int i = 0; i < self->options_.maxInFlight && !self->stopping_; ++i) {
      ++self->workers_;
      net::co_spawn(self->executor_, worker(self), rethrowUnhandled);
    }
  }
  const Clock::Duration reportPeriod = self->options_.reportPeriod;
  while (!self->stopping_) {
    co_await pause(self, reportPeriod);
    self->report();
  }
  self->queue_.shutDown();
  self->pods_->stop();
  while (self->workers_ > 0 || !self->pods_->stopped()) {
    co_await self->clock_.sleepFor(kStopPoll);
  }
  self->reported_ = {};
  self->report();
  spdlog::info("stopped");
}

net::awaitable<void> FakeKubelet::registerNode(FakeKubelet* self, int node) {
  const Clock::Duration retry = self->options_.registerRetry;
  for (int attempt = 1; !self->stopping_; ++attempt) {
    const std::string error = co_await tryRegisterNode(self, node);
    if (error.empty()) {
      spdlog::info("registered node {}", nodeName(node));
      co_return;
    }
    // The API server is usually still starting: say so now and then, not twice a second.
    if (attempt == 1 || attempt % 20 == 0) {
      spdlog::info("registering node {} (attempt {}): {}", nodeName(node), attempt, error);
    }
    co_await pause(self, retry);
  }
}

net::awaitable<std::string> FakeKubelet::tryRegisterNode(FakeKubelet* self, int node) {
  kube::RestClient& client = self->client_;
  std::string name = nodeName(node);
  std::string none;
  std::string status = "status";
  kube::WriteOptions apply;
  apply.fieldManager = kFieldManager;
  apply.force = true;  // the kubelet owns these fields, whoever touched them last
  std::string object = nodeApplyBody(node);
  auto applied = co_await client.apply(kNodes, none, name, std::move(object), apply, none);
  if (!applied) {
    co_return "apply: " + applied.error().message();
  }
  // Status through the status subresource, as a kubelet posts it.
  kube::WriteOptions write;
  write.fieldManager = kFieldManager;
  std::string statusPatch = nodeStatusPatch(node, self->clock_.wallNow());
  auto patched = co_await client.patch(kNodes, none, name, kube::PatchType::Merge,
                                       std::move(statusPatch), write, status);
  if (!patched) {
    co_return "status: " + patched.error().message();
  }
  auto read = core::decodeNode(*patched);
  if (!read) {
    co_return "status: " + read.error().toString();
  }
  std::string untaint = removeNotReadyTaintPatch(*read);
  if (untaint.empty()) {
    co_return "";
  }
  auto untainted = co_await client.patch(kNodes, none, name, kube::PatchType::Json,
                                         std::move(untaint), write, none);
  if (!untainted) {
    co_return "taint " + std::string(kNotReadyTaint) + ": " + untainted.error().message();
  }
  co_return "";
}

void FakeKubelet::startPods() {
  cache::EventHandler<KubeletPod> handler;
  handler.onAdd = [this](const PodPtr& pod, bool) {
    observe(*pod);
    enqueue(*pod);
  };
  handler.onUpdate = [this](const PodPtr& oldPod, const PodPtr& newPod) {
    if (oldPod->metadata.uid != newPod->metadata.uid) {
      // Deleted and created again under the same name while the watch was away.
      addresses_.release(cache::objectKey(oldPod->metadata));
    }
    observe(*newPod);
    enqueue(*newPod);
  };
  handler.onDelete = [this](const PodPtr& pod, bool) {
    addresses_.release(cache::objectKey(pod->metadata));
  };
  auto registration = pods_->addEventHandler(std::move(handler));
  // Only a stopped informer refuses handlers, and this one has not started.
  registration_ = std::move(*registration);
  pods_->start(executor_);
}

void FakeKubelet::observe(const core::Pod& pod) {
  const int node = nodeIndex(pod.spec.nodeName, options_.nodes);
  if (node == 0 || pod.spec.hostNetwork || pod.status.podIPs.empty()) {
    return;
  }
  const std::string key = cache::objectKey(pod.metadata);
  const std::string& ip = pod.status.podIPs.front();
  const std::string refused = addresses_.observe(node, key, ip);
  if (!refused.empty()) {
    spdlog::warn("pod {} shows pod IP {}, which is not its own: {}", key, ip, refused);
  }
}

void FakeKubelet::enqueue(const core::Pod& pod) {
  if (nextAction(pod, options_.nodes) != PodAction::kNone) {
    queue_.add(cache::objectKey(pod.metadata));
  }
}

net::awaitable<void> FakeKubelet::worker(FakeKubelet* self) {
  while (auto key = co_await self->queue_.get()) {
    std::string k = *key;
    const std::string error = co_await sync(self, k);
    if (error.empty()) {
      self->queue_.forget(*key);
    } else {
      ++self->stats_.failedWrites;
      const int requeues = self->queue_.numRequeues(*key);
      if (requeues % 10 == 0) {
        spdlog::warn("pod {}: {} (attempt {}); retrying", *key, error, requeues + 1);
      }
      self->queue_.addRateLimited(*key);
    }
    self->queue_.done(*key);
  }
  --self->workers_;
}

net::awaitable<std::string> FakeKubelet::sync(FakeKubelet* self, std::string key) {
  PodPtr pod = self->pods_->indexer().get(key);
  if (pod == nullptr) {
    co_return "";  // deleted meanwhile
  }
  switch (nextAction(*pod, self->options_.nodes)) {
    case PodAction::kNone:
      co_return "";
    case PodAction::kRun:
      co_return co_await runPod(self, std::move(pod));
    case PodAction::kDelete:
      co_return co_await deletePod(self, std::move(pod));
  }
  co_return "";
}

net::awaitable<std::string> FakeKubelet::runPod(FakeKubelet* self, PodPtr pod) {
  const int node = nodeIndex(pod->spec.nodeName, self->options_.nodes);
  const std::string key = cache::objectKey(pod->metadata);
  const std::string hostIP = nodeInternalIp(node);
  std::string podIP = hostIP;  // hostNetwork: the node's address, as a real kubelet reports it
  if (!pod->spec.hostNetwork) {
    auto assigned = self->addresses_.assign(node, key);
    if (!assigned) {
      co_return "no pod IP left on " + nodeName(node) + " (its podCIDR and overflow ranges hold " +
          std::to_string(self->addresses_.held(node)) + " pods)";
    }
    if (assigned->overflow && !self->overflowLogged_[static_cast<size_t>(node)]) {
      self->overflowLogged_[static_cast<size_t>(node)] = true;
      spdlog::warn(
          "{}: its podCIDR {} is full (254 pods hold its addresses); pod {} and the next ones "
          "get addresses from the overflow ranges 10.245-255.{}.0/24, outside the podCIDR",
          nodeName(node), nodePodCidr(node), key, node);
    }
    podIP = assigned->ip;
  }
  std::string body = runningStatusPatch(*pod, podIP, hostIP, self->clock_.wallNow());
  std::string ns = pod->metadata.namespace_;
  std::string name = pod->metadata.name;
  std::string status = "status";
  kube::WriteOptions write;
  write.fieldManager = kFieldManager;
  // Strategic merge: conditions merge by type, so another writer's (egw-agent's readiness gate,
  // set before this pod ran) stay; a merge patch would replace the whole list.
  auto patched = co_await self->client_.patch(kPods, ns, name, kube::PatchType::StrategicMerge,
                                              std::move(body), write, status);
  if (!patched) {
    if (patched.error().isNotFound()) {
      co_return "";  // deleted meanwhile; its address is released with the delete event
    }
    co_return "status patch: " + patched.error().message();
  }
  ++self->stats_.madeRunning;
  spdlog::info("running {} on {} at {}", key, nodeName(node), podIP);
  co_return "";
}

net::awaitable<std::string> FakeKubelet::deletePod(FakeKubelet* self, PodPtr pod) {
  std::string ns = pod->metadata.namespace_;
  std::string name = pod->metadata.name;
  kube::DeleteOptions options;
  options.gracePeriodSeconds = 0;
  options.preconditionUid = pod->metadata.uid;
  auto deleted = co_await self->client_.remove(kPods, ns, name, options);
  // Conflict: the UID precondition failed, so the pod we meant is gone and a new one took its
  // name; that one comes through the informer on its own.
  if (!deleted && !deleted.error().isNotFound() && !deleted.error().isConflict()) {
    co_return "delete: " + deleted.error().message();
  }
  ++self->stats_.deleted;
  spdlog::info("deleted {}", cache::objectKey(pod->metadata));
  co_return "";
}

void FakeKubelet::report() {
  if (stats_ == reported_) {
    return;
  }
  reported_ = stats_;
  spdlog::info(
      "pods: {} made Running, {} deleted, {} failed writes (retried); {} cached, {} queued",
      stats_.madeRunning, stats_.deleted, stats_.failedWrites, pods_->indexer().size(),
      queue_.len());
}

}  // namespace egress::testenv
