// Component test of the reflector over the real REST client, transport and
// watch stream, against an HTTP server that cuts a watch inside a chunk of the chunked encoding
// and lets another go silent past the client's idle timeout. Both are normal ends of a watch
// (client-go's StreamWatcher): the reflector watches again from the last event's
// resourceVersion and never lists again.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/base/clock.h"
#include "pkg/cache/reflector.h"
#include "pkg/kube/rest_client.h"
#include "pkg/kube/transport.h"
#include "test/unit/cache/fake_lister_watcher.h"
#include "test/unit/cache/raw_http_server.h"

namespace egress::cache {
namespace {

using testing::chunk;
using testing::chunkedHead;
using ::testing::ElementsAre;
using testing::jsonResponse;
using testing::RawHttpServer;
using testing::RecordingStore;

const kube::Resource kPods{"", "v1", "pods", true};

std::string eventLine(const char* type, const std::string& name, const std::string& rv) {
  return std::string(R"({"type":")") + type +
         R"(","object":{"metadata":{"namespace":"ns","name":")" + name +
         R"(","resourceVersion":")" + rv + "\"}}}\n";
}

// The resourceVersion= of a request target.
std::string rvOf(const std::string& target) {
  const auto at = target.find("resourceVersion=");
  if (at == std::string::npos) {
    return "";
  }
  const auto from = at + std::string("resourceVersion=").size();
  return target.substr(from, target.find('&', from) - from);
}

// Lists through the REST client; watches through a transport of its own with a short idle
// timeout (the REST client derives its own from timeoutSeconds: minutes), wrapped in the REST
// client's WatchStream as the REST client does.
class ShortIdleListerWatcher : public ListerWatcher {
 public:
  ShortIdleListerWatcher(kube::RestClient& client, kube::Transport& transport,
                         std::chrono::milliseconds idle)
      : client_(client), transport_(transport), idle_(idle) {}

  net::awaitable<kube::Result<kube::ListPage>> list(kube::ListOptions options) override {
    co_return co_await client_.listPage(kPods, "ns", std::move(options));
  }
  net::awaitable<kube::Result<std::unique_ptr<kube::Watch>>> watch(
      kube::ListOptions options) override {
    kube::HttpRequest request;
    request.method = "GET";
    request.target = kube::resourcePath(kPods, "ns", "", "") + kube::listQuery(options, true);
    request.headers.emplace_back("Accept", "application/json");
    auto stream = co_await transport_.openStream(std::move(request));
    if (!stream) {
      co_return stream.error();
    }
    if ((*stream)->status() != 200) {
      co_return kube::Error::transport("unexpected status " + std::to_string((*stream)->status()));
    }
    co_return std::unique_ptr<kube::Watch>(
        std::make_unique<kube::WatchStream>(std::move(*stream), idle_));
  }
  std::string describe() const override { return "pods in ns"; }

 private:
  kube::RestClient& client_;
  kube::Transport& transport_;
  std::chrono::milliseconds idle_;
};

TEST(ReflectorComponent, CutAndIdleWatchesResumeFromTheLastEventWithoutListing) {
  net::io_context ioc;
  int watches = 0;
  RawHttpServer server(ioc, [&watches](const std::string& target) -> RawHttpServer::Reply {
    if (target.find("watch=true") == std::string::npos) {
      return {jsonResponse(R"({"kind":"PodList","metadata":{"resourceVersion":"10"},"items":[)"
                           R"({"metadata":{"namespace":"ns","name":"a","resourceVersion":"5"}}]})"),
              true};
    }
    switch (++watches) {
      case 1: {
        // One event, then the connection drops halfway through the next chunk.
        const std::string next = chunk(eventLine("MODIFIED", "a", "12"));
        return {
            chunkedHead() + chunk(eventLine("ADDED", "b", "11")) + next.substr(0, next.size() / 2),
            true};
      }
      case 2:
        // One event, then silence past the client's idle timeout.
        return {chunkedHead() + chunk(eventLine("ADDED", "c", "12")), false};
      default:
        return {chunkedHead() + chunk(eventLine("ADDED", "d", "13")), false};
    }
  });

  kube::RestConfig config;
  config.server = server.url();
  config.qps = 1000;
  config.burst = 1000;
  auto client = kube::RestClient::create(ioc.get_executor(), config, nullptr);
  ASSERT_TRUE(client) << client.error().message();
  kube::TransportConfig tc;
  tc.server = server.url();
  auto transport = kube::makeTransport(ioc.get_executor(), tc);
  ASSERT_TRUE(transport) << transport.error().message();
  ShortIdleListerWatcher lw(**client, **transport, std::chrono::milliseconds(300));

  RealClock clock(ioc.get_executor());
  RecordingStore store;
  ReflectorOptions options;
  options.name = "component";
  Reflector reflector(lw, store, clock, options, [] { return 0.0; });
  net::co_spawn(ioc, reflector.run(), net::detached);
  // A guard against hanging, not a measurement: the run takes about one idle timeout.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(watches >= 3 && !store.calls.empty() && store.calls.back() == "add d@13") &&
         std::chrono::steady_clock::now() < deadline) {
    ioc.run_one_for(std::chrono::milliseconds(100));
  }
  reflector.stop();
  for (int i = 0; i < 100 && reflector.running(); ++i) {
    ioc.run_one_for(std::chrono::milliseconds(10));
  }

  std::vector<std::string> lists;
  std::vector<std::string> watchRvs;
  for (const auto& target : server.targets()) {
    (target.find("watch=true") == std::string::npos ? lists : watchRvs).push_back(rvOf(target));
  }
  EXPECT_THAT(lists, ElementsAre("0")) << "one LIST, the initial one";
  EXPECT_THAT(watchRvs, ElementsAre("10", "11", "12"))
      << "each new watch starts at the last event the previous one delivered";
  EXPECT_EQ(reflector.stats().lists, 1);
  EXPECT_EQ(reflector.stats().backoffs, 0);
  EXPECT_THAT(store.calls,
              ElementsAre("start", "item a@5", "replace @10", "add b@11", "add c@12", "add d@13"));
}

}  // namespace
}  // namespace egress::cache
