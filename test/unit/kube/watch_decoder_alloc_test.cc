// Heap allocations per decoded watch event, counted at malloc itself (RapidJSON and OpenSSL
// allocate with malloc, not operator new): the decoder must reuse one parser buffer and value
// arena per stream instead of building each event in a fresh 64 KiB pool, and a watch read
// over TLS must not take a fresh record buffer per event. Its own binary, because the counting
// malloc replaces the C library's for the whole program. Each test prints its figure
// ("allocations_per_event=") for the record.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "pkg/kube/rest_client.h"
#include "pkg/kube/watch_decoder.h"
#include "test/testutil/run_sync.h"
#include "test/unit/kube/fake_api_server.h"

#if defined(__SANITIZE_ADDRESS__)
// From the sanitizer runtime (compiler-rt's allocator_interface.h, which GCC does not ship).
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*onMalloc)(const volatile void*,
                                                                          size_t),
                                                         void (*onFree)(const volatile void*));
#endif

namespace {

std::atomic<size_t> gAllocations{0};
// This thread's share, in calls and requested bytes: a test may run a server on another thread.
thread_local size_t tAllocations = 0;
thread_local size_t tAllocatedBytes = 0;

void count(size_t n) {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  ++tAllocations;
  tAllocatedBytes += n;
}

}  // namespace

#if defined(__SANITIZE_ADDRESS__)
// ASan owns malloc; it reports every allocation to these hooks instead.
namespace {
void onMalloc(const volatile void*, size_t n) {
  count(n);
}
void onFree(const volatile void*) {}
const int kHooksInstalled = __sanitizer_install_malloc_and_free_hooks(onMalloc, onFree);
}  // namespace
#else
// The executable's definitions win over the C library's; operator new lands here too.
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);

void* malloc(size_t n) {
  count(n);
  return __libc_malloc(n);
}
void* calloc(size_t items, size_t n) {
  count(items * n);
  return __libc_calloc(items, n);
}
void* realloc(void* p, size_t n) {
  count(n);
  return __libc_realloc(p, n);
}
void free(void* p) {
  __libc_free(p);
}
}
#endif

namespace egress::kube {
namespace {

// A pod as the API server sends it: metadata with labels, annotations and managedFields, a
// spec with one container, a status (about 2 KB of JSON).
std::string podEventLine(int i) {
  const std::string n = std::to_string(i);
  return R"({"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-)" +
         n + R"(","namespace":"default","uid":"6f1c2a4e-0b7d-4c55-9a57-)" + n +
         R"(","resourceVersion":")" + std::to_string(1000 + i) +
         R"(","creationTimestamp":"2024-05-01T10:00:00Z","labels":{"app":"web","tier":"frontend",)"
         R"("pod-template-hash":"5d8f7c9b6"},"annotations":{"kubectl.kubernetes.io/restartedAt":)"
         R"("2024-05-01T09:59:00Z"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet",)"
         R"("name":"web-5d8f7c9b6","uid":"0a1b2c3d","controller":true,"blockOwnerDeletion":true}],)"
         R"("managedFields":[{"manager":"kube-controller-manager","operation":"Update",)"
         R"("apiVersion":"v1","time":"2024-05-01T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":)"
         R"({"f:metadata":{"f:labels":{".":{},"f:app":{},"f:tier":{}}},"f:spec":{"f:containers":)"
         R"({"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}]},"spec":{"containers":)"
         R"([{"name":"app","image":"registry.example/web:1.2.3","args":["--port=8080"],"ports":)"
         R"([{"containerPort":8080,"protocol":"TCP"}],"env":[{"name":"MODE","value":"prod"}],)"
         R"("resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"memory":"256Mi"}},)"
         R"("volumeMounts":[{"name":"kube-api-access","mountPath":"/var/run/secrets/kubernetes.io/)"
         R"(serviceaccount","readOnly":true}],"terminationMessagePath":"/dev/termination-log",)"
         R"("imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","dnsPolicy":"ClusterFirst",)"
         R"("serviceAccountName":"default","nodeName":"node-1","schedulerName":"default-scheduler",)"
         R"("tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":)"
         R"("NoExecute","tolerationSeconds":300}]},"status":{"phase":"Running","conditions":[{"type":)"
         R"("Ready","status":"True","lastTransitionTime":"2024-05-01T10:00:05Z"}],"hostIP":)"
         R"("10.0.0.11","podIP":"10.244.1.)" +
         std::to_string(i % 250) +
         R"(","startTime":"2024-05-01T10:00:00Z","containerStatuses":[{"name":"app","ready":true,)"
         R"("restartCount":0,"image":"registry.example/web:1.2.3","imageID":"sha256:abc","started":)"
         R"(true,"state":{"running":{"startedAt":"2024-05-01T10:00:03Z"}}}]}}})"
         "\n";
}

// As a reflector consumes a watch: one event at a time, each dropped before the next.
TEST(WatchDecoderAllocations, SteadyStateEventsReuseTheStreamsMemory) {
  constexpr int kWarmUp = 50;
  constexpr int kMeasured = 1000;
  std::vector<std::string> lines;
  for (int i = 0; i < kWarmUp + kMeasured; ++i) {
    lines.push_back(podEventLine(i));
  }
  WatchDecoder decoder;
  std::vector<WatchEvent> events;
  events.reserve(4);
  size_t before = 0;
  for (int i = 0; i < kWarmUp + kMeasured; ++i) {
    if (i == kWarmUp) {
      before = gAllocations.load();
    }
    events.clear();
    ASSERT_TRUE(decoder.feed(lines[i], events));
    ASSERT_EQ(events.size(), 1u);
    ASSERT_EQ(events[0].object()["metadata"]["resourceVersion"].GetString(),
              std::to_string(1000 + i));
  }
  const double perEvent = static_cast<double>(gAllocations.load() - before) / kMeasured;
  std::printf("watch_decode allocations_per_event=%.2f bytes_per_event=%zu\n", perEvent,
              lines[kWarmUp].size());
  ::testing::Test::RecordProperty("allocations_per_event", std::to_string(perEvent));
  EXPECT_LT(perEvent, 1.0);
}

// A response body held in memory, handed out in reads of at most 16 KiB, as a socket would.
class MemoryStream : public ResponseStream {
 public:
  explicit MemoryStream(std::string body) : body_(std::move(body)) {}
  int status() const override { return 200; }
  const std::map<std::string, std::string>& headers() const override { return headers_; }
  net::awaitable<Result<size_t>> readSome(char* buf, size_t size,
                                          std::chrono::milliseconds) override {
    const size_t n = std::min({size, body_.size() - offset_, size_t{16 * 1024}});
    std::memcpy(buf, body_.data() + offset_, n);
    offset_ += n;
    co_return n;
  }
  void close() override {}

 private:
  std::string body_;
  size_t offset_ = 0;
  std::map<std::string, std::string> headers_;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Counts the events to the end of the stream; after the first `skip`, notes this thread's
// allocation counters (calls, and bytes if asked).
net::awaitable<Result<size_t>> drainEvents(Watch* watch, int skip, size_t* allocationsAfterSkip,
                                           size_t* bytesAfterSkip = nullptr) {
  size_t events = 0;
  for (;;) {
    auto event = co_await watch->next();
    if (!event) {
      co_return event.error();
    }
    if (!event->has_value()) {
      co_return events;
    }
    if (++events == static_cast<size_t>(skip)) {
      *allocationsAfterSkip = bytesAfterSkip != nullptr ? tAllocations : gAllocations.load();
      if (bytesAfterSkip != nullptr) {
        *bytesAfterSkip = tAllocatedBytes;
      }
    }
  }
}

#if defined(__SANITIZE_ADDRESS__)
// Instrumented coroutine frames outgrow Asio's recycling cache (blocks up to about 1 KB), so
// under ASan each next() allocates its few awaitable frames; the normal build recycles them.
constexpr double kStreamAllocationsAllowed = 3.0;
#else
constexpr double kStreamAllocationsAllowed = 1.0;
#endif

// The same through WatchStream::next(), the coroutine a reflector awaits per event: reads,
// decoding and the awaitable frames together.
TEST(WatchDecoderAllocations, WatchStreamNextPerEvent) {
  constexpr int kWarmUp = 50;
  constexpr int kMeasured = 1000;
  std::string body;
  for (int i = 0; i < kWarmUp + kMeasured; ++i) {
    body += podEventLine(i);
  }
  net::io_context ioc;
  WatchStream watch(std::make_unique<MemoryStream>(std::move(body)), std::chrono::seconds(60));
  size_t before = 0;
  auto drained = testutil::runSync(ioc, drainEvents(&watch, kWarmUp, &before));
  const size_t after = gAllocations.load();
  ASSERT_TRUE(drained) << drained.error().message();
  ASSERT_EQ(*drained, static_cast<size_t>(kWarmUp + kMeasured));
  const double perEvent = static_cast<double>(after - before) / kMeasured;
  std::printf("watch_stream_next allocations_per_event=%.2f\n", perEvent);
  ::testing::Test::RecordProperty("stream_allocations_per_event", std::to_string(perEvent));
  EXPECT_LT(perEvent, kStreamAllocationsAllowed);
}

// The whole client path a reflector awaits per event, over TLS as to a real API server: the
// transport's reads (Beast's parser, Asio's TLS engine, OpenSSL), WatchStream and the decoder.
// Asio turns on SSL_MODE_RELEASE_BUFFERS, under which OpenSSL frees its 16 KiB record buffer
// whenever it runs empty and takes a new one for the next record: one or two per event on a
// watch, where events arrive one by one. The server runs on a thread of its own, so that only
// the client's allocations are counted.
TEST(WatchDecoderAllocations, TlsWatchStreamPerEvent) {
  constexpr int kWarmUp = 50;
  constexpr int kMeasured = 1000;
  testing::FakeResponse response;
  for (int i = 0; i < kWarmUp + kMeasured; ++i) {
    response.chunks.push_back(podEventLine(i));  // one chunk, one TLS record, per event
  }
  net::io_context serverIoc;
  const testing::FakeTlsOptions tls{std::string(EGRESS_TESTDATA_DIR) + "/tls/server.crt",
                                    std::string(EGRESS_TESTDATA_DIR) + "/tls/server.key", ""};
  testing::FakeApiServer server(
      serverIoc, [&response](const testing::FakeRequest&) { return response; }, &tls);
  std::thread serverThread([&serverIoc] { serverIoc.run(); });

  net::io_context ioc;
  RestConfig config;
  config.server = server.url();
  config.caPem = readFile(std::string(EGRESS_TESTDATA_DIR) + "/tls/ca.crt");
  config.qps = -1;
  auto client = RestClient::create(ioc.get_executor(), config, nullptr);
  ASSERT_TRUE(client) << client.error().message();
  const Resource pods{"", "v1", "pods", true};
  auto watch = testutil::runSync(ioc, (*client)->watch(pods, "default", ListOptions{}));
  ASSERT_TRUE(watch) << watch.error().message();
  size_t before = 0;
  size_t bytesBefore = 0;
  auto drained = testutil::runSync(ioc, drainEvents(watch->get(), kWarmUp, &before, &bytesBefore));
  const size_t after = tAllocations;
  const size_t bytesAfter = tAllocatedBytes;
  serverIoc.stop();
  serverThread.join();
  ASSERT_TRUE(drained) << drained.error().message();
  ASSERT_EQ(*drained, static_cast<size_t>(kWarmUp + kMeasured));
  const double perEvent = static_cast<double>(after - before) / kMeasured;
  const double bytesPerEvent = static_cast<double>(bytesAfter - bytesBefore) / kMeasured;
  std::printf("tls_watch_stream allocations_per_event=%.2f allocated_bytes_per_event=%.0f\n",
              perEvent, bytesPerEvent);
  ::testing::Test::RecordProperty("tls_allocated_bytes_per_event", std::to_string(bytesPerEvent));
  // The record buffers alone were over 16 KiB per event; the event itself is about 2 KB.
  EXPECT_LT(bytesPerEvent, 4096.0);
}

}  // namespace
}  // namespace egress::kube
