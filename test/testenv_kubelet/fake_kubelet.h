// File: fake_kubelet.h
//
// The test kubelet of the local control plane (egress-testenv-kubelet, started by
// hack/testenv/supervise.sh): registers the fake Nodes (fake_node.h), then keeps one
// SharedIndexInformer on the pods bound to a node (field selector spec.nodeName!=, trimmed by
// trimPod) and does what pod_lifecycle.h decides for each pod on one of its nodes: a status patch
// that makes it Running and Ready with a pod IP of its node (pod_addresses.h; a hostNetwork pod
// gets the node's address, as with a real kubelet), or a delete with grace period 0. The writes
// go through a rate-limited workqueue served by `maxInFlight` workers, so at most that many are
// in flight and a failed one is retried with backoff (5 ms doubling to 2 s). Nothing is ever
// executed.
//
// API server restarts are survived by the informer: its watch ends, it watches again (or lists
// again after 410 Gone) with a short backoff, and the pods that changed meanwhile come through
// the handlers as usual. Workers start only once the first list has been handled, so every pod
// IP already in use has been observed before a new one is assigned.
//
// The kubelet must outlive run()'s coroutine; stop() ends it (cancelling the informer's request
// in flight), and run() returns once every coroutine it started has finished.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "pkg/apis/core/pod.h"
#include "pkg/base/clock.h"
#include "pkg/base/notifier.h"
#include "pkg/cache/shared_informer.h"
#include "pkg/kube/rest_client.h"
#include "pkg/workqueue/rate_limiting_queue.h"
#include "test/testenv_kubelet/pod_addresses.h"
#include "test/testenv_kubelet/pod_lifecycle.h"

namespace egress::testenv {

struct FakeKubeletOptions {
  int nodes = 2;
  // Pod writes (status patches, deletes) in flight at once: the number of workers.
  int maxInFlight = 16;
  // Between attempts to register a node while the API server is not serving yet.
  std::chrono::milliseconds registerRetry{500};
  // A summary line is logged this often, when something changed.
  std::chrono::milliseconds reportPeriod{10'000};
};

struct FakeKubeletStats {
  int64_t madeRunning = 0;
  int64_t deleted = 0;
  int64_t failedWrites = 0;

  bool operator==(const FakeKubeletStats&) const = default;
};

class FakeKubelet {
 public:
  // `client` and `clock` must outlive run()'s coroutine.
  FakeKubelet(kube::RestClient& client, Clock& clock, net::any_io_executor executor,
              FakeKubeletOptions options);
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  // Registers every node (retrying each until it succeeds), then runs the pods until stop().
  // Static, taking the kubelet explicitly, as every coroutine that spawns others here (g++ 12
  // can lose `this` in spawned member coroutines).
  static net::awaitable<void> run(FakeKubelet* self);
  void stop();

  const FakeKubeletStats& stats() const { return stats_; }

 private:
  using Informer = cache::SharedIndexInformer<KubeletPod>;
  using PodPtr = Informer::Ptr;

  static net::awaitable<void> registerNode(FakeKubelet* self, int node);
  // "" when the node is registered, Ready and untainted; else what failed.
  static net::awaitable<std::string> tryRegisterNode(FakeKubelet* self, int node);
  static net::awaitable<void> worker(FakeKubelet* self);
  // "" when nothing is left to do for `key`; else why it must be retried.
  static net::awaitable<std::string> sync(FakeKubelet* self, std::string key);
  static net::awaitable<std::string> runPod(FakeKubelet* self, PodPtr pod);
  static net::awaitable<std::string> deletePod(FakeKubelet* self, PodPtr pod);
  // Waits `d`, or less if stop() is called.
  static net::awaitable<void> pause(FakeKubelet* self, Clock::Duration d);

  void startPods();
  // Handler work: record the address a pod shows, queue it if it needs a write.
  void observe(const core::Pod& pod);
  void enqueue(const core::Pod& pod);
  void report();

  kube::RestClient& client_;
  Clock& clock_;
  net::any_io_executor executor_;
  FakeKubeletOptions options_;
  PodAddresses addresses_;
  std::unique_ptr<Informer> pods_;
  Informer::RegistrationPtr registration_;
  workqueue::RateLimitingQueue<std::string> queue_;
  std::vector<bool> overflowLogged_;
  Notifier wake_;
  bool stopping_ = false;
  int workers_ = 0;
  FakeKubeletStats stats_;
  FakeKubeletStats reported_;
};

}  // namespace egress::testenv
