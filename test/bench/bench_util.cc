#include "test/bench/bench_util.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

#include <boost/asio/co_spawn.hpp>
#include <fmt/format.h>

#include "test/testutil/run_sync.h"
#include <malloc.h>

#if defined(__SANITIZE_ADDRESS__)
#define EGRESS_COUNT_HEAP 0
#else
#define EGRESS_COUNT_HEAP 1
#endif

#if EGRESS_COUNT_HEAP
// glibc's own entry points: the definitions below take the public names and count.
// NOLINTBEGIN(bugprone-reserved-identifier,readability-identifier-naming): glibc's names
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* ptr);
}
// NOLINTEND(bugprone-reserved-identifier,readability-identifier-naming)

namespace {

// Plain thread_locals of trivial type: static TLS of the executable, never allocated.
thread_local uint64_t tAllocations = 0;
thread_local uint64_t tAllocatedBytes = 0;
thread_local int64_t tLiveBytes = 0;

void* counted(void* p) {
  if (p != nullptr) {
    const size_t n = malloc_usable_size(p);
    ++tAllocations;
    tAllocatedBytes += n;
    tLiveBytes += static_cast<int64_t>(n);
  }
  return p;
}

void uncount(void* p) {
  if (p != nullptr) {
    tLiveBytes -= static_cast<int64_t>(malloc_usable_size(p));
  }
}

}  // namespace

extern "C" {
void* malloc(size_t size) noexcept {
  return counted(__libc_malloc(size));
}
void* calloc(size_t count, size_t size) noexcept {
  return counted(__libc_calloc(count, size));
}
void* realloc(void* ptr, size_t size) noexcept {
  uncount(ptr);
  void* p = __libc_realloc(ptr, size);
  if (p == nullptr && size != 0) {
    // Failed: the old block is still there.
    tLiveBytes += ptr != nullptr ? static_cast<int64_t>(malloc_usable_size(ptr)) : 0;
    return nullptr;
  }
  return counted(p);
}
void* memalign(size_t alignment, size_t size) noexcept {
  return counted(__libc_memalign(alignment, size));
}
void* aligned_alloc(size_t alignment, size_t size) noexcept {
  return counted(__libc_memalign(alignment, size));
}
int posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  void* p = counted(__libc_memalign(alignment, size));
  if (p == nullptr) {
    return ENOMEM;
  }
  *out = p;
  return 0;
}
void free(void* ptr) noexcept {
  uncount(ptr);
  __libc_free(ptr);
}
}
#endif

namespace egress::bench {
namespace {

boost::asio::awaitable<void> createRange(kube::RestClient* client, const BenchNamespaces* ns,
                                         const std::map<std::string, std::string>* ownerUids,
                                         int from, int to, int* failures, int* done) {
  for (int i = from; i < to; ++i) {
    const std::string name = "bench-" + std::to_string(i);
    const std::string podNs = ns->ofPod(i);
    std::string body = benchPod(name, ownerUids->at(podNs), "bench", "", i / kPodsPerReplicaSet);
    auto r = co_await client->create(kPods, podNs, std::move(body));
    if (!r && !r.error().isAlreadyExists()) {
      ++*failures;
      std::fprintf(stderr, "create %s/%s: %s\n", podNs.c_str(), name.c_str(),
                   r.error().message().c_str());
      continue;
    }
    std::string status = benchPodStatus();
    auto s = co_await client->patch(kPods, podNs, name, kube::PatchType::Merge, std::move(status),
                                    kube::WriteOptions(), "status");
    if (!s) {
      ++*failures;
      std::fprintf(stderr, "patch %s/%s/status: %s\n", podNs.c_str(), name.c_str(),
                   s.error().message().c_str());
    }
  }
  ++*done;
}

boost::asio::awaitable<void> deleteRange(kube::RestClient* client, const BenchNamespaces* ns,
                                         int from, int to, int* failures, int* done) {
  for (int i = from; i < to; ++i) {
    const std::string name = "bench-" + std::to_string(i);
    kube::DeleteOptions opts;
    opts.gracePeriodSeconds = 0;  // unscheduled: no kubelet has to stop anything
    auto r = co_await client->remove(kPods, ns->ofPod(i), name, std::move(opts));
    if (!r && !r.error().isNotFound()) {
      ++*failures;
      std::fprintf(stderr, "delete %s: %s\n", name.c_str(), r.error().message().c_str());
    }
  }
  ++*done;
}

void rethrow(const std::exception_ptr& e) {
  if (e) {
    std::rethrow_exception(e);
  }
}

}  // namespace

HeapStats threadHeapStats() {
#if EGRESS_COUNT_HEAP
  return {tAllocations, tAllocatedBytes, tLiveBytes};
#else
  return {};
#endif
}

bool heapCountingEnabled() {
  return EGRESS_COUNT_HEAP != 0;
}

std::string benchPod(const std::string& name, const std::string& ownerUid, const std::string& app,
                     const std::string& nodeName, int replicaSet) {
  const std::string hash = fmt::format("{:010x}", 0x7d9f8b6c5dULL + replicaSet);
  const std::string workload = "web-" + std::to_string(replicaSet);
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"(","generateName":")" + workload + "-" + hash + R"(-","labels":{"app":")" + app +
         R"(","tier":"backend","team":"egress","pod-template-hash":")" + hash +
         R"(",)"
         R"("app.kubernetes.io/name":")" +
         workload +
         R"(","app.kubernetes.io/version":"1.2.3",)"
         R"("app.kubernetes.io/part-of":"storefront"},"annotations":{"prometheus.io/scrape":"true",)"
         R"("prometheus.io/port":"9090","kubectl.kubernetes.io/restartedAt":"2026-11-30T08:15:00Z",)"
         R"("checksum/config":"5f2b8c0e9a7d4c1b3e6f8a0d2c4b6e8f1a3c5e7d9b0f2a4c6e8d0b2f4a6c8e0d"},)"
         R"("ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"bench-owner","uid":")" +
         ownerUid + R"(","controller":true,"blockOwnerDeletion":true}]},"spec":{)" +
         (nodeName.empty() ? std::string(R"("schedulerName":"bench-no-scheduler",)")
                           : R"("nodeName":")" + nodeName + "\",") +
         R"("serviceAccountName":"default","terminationGracePeriodSeconds":30,)"
         R"("securityContext":{"runAsNonRoot":true,"runAsUser":10001,"fsGroup":10001},)"
         R"("initContainers":[{"name":"migrate","image":"example.invalid/bench/migrate:1.2.3",)"
         R"("command":["/bin/migrate","--wait-for-db"],)"
         R"("env":[{"name":"DB_HOST","value":"db.storefront.svc"}],)"
         R"("resources":{"requests":{"cpu":"10m","memory":"16Mi"},)"
         R"("limits":{"cpu":"100m","memory":"64Mi"}},)"
         R"("volumeMounts":[{"name":"config","mountPath":"/etc/app"}]}],)"
         R"("containers":[{"name":"app","image":"example.invalid/bench/app:1.2.3",)"
         R"("args":["--port=8080","--metrics-port=9090","--log-level=info",)"
         R"("--config=/etc/app/config.yaml"],)"
         R"("ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},)"
         R"({"name":"metrics","containerPort":9090,"protocol":"TCP"}],)"
         R"("env":[{"name":"MODE","value":"bench"},{"name":"REGION","value":"local"},)"
         R"({"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},)"
         R"({"name":"POD_NAMESPACE","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}},)"
         R"({"name":"POD_IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}},)"
         R"({"name":"GOMAXPROCS","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu",)"
         R"("divisor":"1"}}}],"resources":{"requests":{"cpu":"250m","memory":"256Mi"},)"
         R"("limits":{"cpu":"1","memory":"512Mi"}},)"
         R"("livenessProbe":{"httpGet":{"path":"/healthz","port":8080},"initialDelaySeconds":10,)"
         R"("periodSeconds":10,"timeoutSeconds":2,"failureThreshold":3},)"
         R"("readinessProbe":{"httpGet":{"path":"/readyz","port":8080},"periodSeconds":5,)"
         R"("timeoutSeconds":2},"volumeMounts":[{"name":"config","mountPath":"/etc/app",)"
         R"("readOnly":true},{"name":"tls","mountPath":"/etc/tls","readOnly":true},)"
         R"({"name":"cache","mountPath":"/var/cache/app"}],)"
         R"("securityContext":{"allowPrivilegeEscalation":false,"readOnlyRootFilesystem":true,)"
         R"("capabilities":{"drop":["ALL"]}}},)"
         R"({"name":"sidecar-proxy","image":"example.invalid/bench/proxy:2.0.1",)"
         R"("args":["proxy","--upstream=127.0.0.1:8080","--listen=0.0.0.0:15001"],)"
         R"("ports":[{"name":"proxy","containerPort":15001,"protocol":"TCP"},)"
         R"({"name":"admin","containerPort":15000,"protocol":"TCP"}],)"
         R"("env":[{"name":"PROXY_MODE","value":"sidecar"},)"
         R"({"name":"NODE_NAME","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}}],)"
         R"("resources":{"requests":{"cpu":"50m","memory":"64Mi"},)"
         R"("limits":{"cpu":"500m","memory":"128Mi"}},)"
         R"("readinessProbe":{"httpGet":{"path":"/ready","port":15000},"periodSeconds":5},)"
         R"("volumeMounts":[{"name":"tls","mountPath":"/etc/tls","readOnly":true}]}],)"
         R"("volumes":[{"name":"config","configMap":{"name":"web-config","defaultMode":420}},)"
         R"({"name":"tls","secret":{"secretName":"web-tls","defaultMode":256}},)"
         R"({"name":"cache","emptyDir":{"sizeLimit":"1Gi"}}],)"
         R"("tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists",)"
         R"("effect":"NoExecute","tolerationSeconds":300},)"
         R"({"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute",)"
         R"("tolerationSeconds":300}]}})";
}

std::string benchPodStatus() {
  const std::string since = R"("lastProbeTime":null,"lastTransitionTime":"2026-12-01T10:00:00Z"})";
  const std::string unready =
      R"("status":"False","reason":"ContainersNotReady","message":"containers with unready )"
      R"(status: [app sidecar-proxy]",)";
  std::string statuses;
  for (const char* c : {R"("app","image":"example.invalid/bench/app:1.2.3")",
                        R"("sidecar-proxy","image":"example.invalid/bench/proxy:2.0.1")"}) {
    statuses += std::string(statuses.empty() ? "" : ",") + R"({"name":)" + c +
                R"(,"ready":false,"restartCount":0,"imageID":"",)"
                R"("state":{"waiting":{"reason":"PodInitializing"}}})";
  }
  return R"({"status":{"conditions":[{"type":"PodScheduled","status":"False",)"
         R"("reason":"Unschedulable","message":"0/5 nodes are available: 5 node(s) didn't )"
         R"(match pod affinity rules.",)" +
         since +
         R"(,{"type":"Initialized","status":"False","reason":"ContainersNotInitialized",)"
         R"("message":"containers with incomplete status: [migrate]",)" +
         since + R"(,{"type":"ContainersReady",)" + unready + since + R"(,{"type":"Ready",)" +
         unready + since +
         R"(],"initContainerStatuses":[{"name":"migrate",)"
         R"("image":"example.invalid/bench/migrate:1.2.3","ready":false,)"
         R"("restartCount":0,"imageID":"","state":{"waiting":)"
         R"({"reason":"PodInitializing"}}}],"containerStatuses":[)" +
         statuses + "]}}";
}

std::optional<std::string> ensurePodOwner(boost::asio::io_context& ioc, kube::RestClient& client,
                                          const std::string& ns) {
  const kube::Resource configMaps{"", "v1", "configmaps", true};
  const std::string body =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench-owner"}})";
  (void)testutil::runSync(ioc, client.create(configMaps, ns, body));
  auto owner = testutil::runSync(ioc, client.get(configMaps, ns, "bench-owner"));
  if (!owner) {
    std::fprintf(stderr, "the pods' owner: %s\n", owner.error().message().c_str());
    return std::nullopt;
  }
  return std::string((*owner)["metadata"]["uid"].GetString());
}

namespace {

// Runs make(from, to, &failures, &done) over `parallel` slices of [first, end) at once, until
// every slice is done; whether none failed.
template <class Make>
bool inSlices(boost::asio::io_context& ioc, int first, int end, int parallel, Make make) {
  int failures = 0;
  int done = 0;
  const int per = (std::max(0, end - first) + parallel - 1) / parallel;
  for (int p = 0; p < parallel; ++p) {
    const int from = first + p * per;
    const int to = std::min(end, from + per);
    boost::asio::co_spawn(ioc, make(from, to, &failures, &done), rethrow);
  }
  while (done < parallel) {
    if (ioc.run_one() == 0) {
      ioc.restart();  // it ran out of work before we spawned ours; not an error
    }
  }
  return failures == 0;
}

}  // namespace

std::string BenchNamespaces::of(int index) const {
  return namespaces <= 1 ? base : base + "-" + std::to_string(index % namespaces);
}

std::vector<std::string> BenchNamespaces::all() const {
  std::vector<std::string> out;
  for (int i = 0; i < std::max(1, namespaces); ++i) {
    out.push_back(of(i));
  }
  return out;
}

bool ensureNamespaces(boost::asio::io_context& ioc, kube::RestClient& client,
                      const BenchNamespaces& ns) {
  const kube::Resource serviceAccounts{"", "v1", "serviceaccounts", true};
  std::vector<std::string> waiting;
  for (const auto& name : ns.all()) {
    const std::string body =
        R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + name + "\"}}";
    auto r = testutil::runSync(ioc, client.create(kNamespaces, "", body));
    if (!r && !r.error().isAlreadyExists()) {
      std::fprintf(stderr, "create namespace %s: %s\n", name.c_str(), r.error().message().c_str());
      return false;
    }
    waiting.push_back(name);
  }
  // The token controller makes the tokens in the background: one round over every namespace
  // still waiting, then a pause.
  const auto start = std::chrono::steady_clock::now();
  while (!waiting.empty() && secondsSince(start) < 180) {
    std::erase_if(waiting, [&](const std::string& name) {
      auto sa = testutil::runSync(ioc, client.get(serviceAccounts, name, "default"));
      return sa && sa->HasMember("secrets") && (*sa)["secrets"].IsArray() &&
             !(*sa)["secrets"].Empty();
    });
    if (!waiting.empty()) {
      ioc.run_for(std::chrono::milliseconds(200));
    }
  }
  if (!waiting.empty()) {
    std::fprintf(stderr, "%zu namespaces (%s first) have no default ServiceAccount token\n",
                 waiting.size(), waiting.front().c_str());
    return false;
  }
  return true;
}

bool createPods(boost::asio::io_context& ioc, kube::RestClient& client, const BenchNamespaces& ns,
                int first, int end, int parallel) {
  std::map<std::string, std::string> ownerUids;
  for (const auto& name : ns.all()) {
    auto uid = ensurePodOwner(ioc, client, name);
    if (!uid) {
      return false;
    }
    ownerUids[name] = *uid;
  }
  return inSlices(ioc, first, end, parallel, [&](int from, int to, int* failures, int* done) {
    return createRange(&client, &ns, &ownerUids, from, to, failures, done);
  });
}

bool deletePods(boost::asio::io_context& ioc, kube::RestClient& client, const BenchNamespaces& ns,
                int first, int end, int parallel) {
  return inSlices(ioc, first, end, parallel, [&](int from, int to, int* failures, int* done) {
    return deleteRange(&client, &ns, from, to, failures, done);
  });
}

}  // namespace egress::bench
