#include "test/bench/bench_util.h"

#include <boost/asio/co_spawn.hpp>

namespace egress::bench {
namespace {

boost::asio::awaitable<void> createRange(kube::RestClient* client, std::string ns, int from, int to,
                                         int* failures, int* done) {
  for (int i = from; i < to; ++i) {
    std::string body = benchPod("bench-" + std::to_string(i));
    auto r = co_await client->create(kPods, ns, std::move(body));
    if (!r && !r.error().isAlreadyExists()) {
      ++*failures;
      std::fprintf(stderr, "create bench-%d: %s\n", i, r.error().message().c_str());
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

bool createPods(boost::asio::io_context& ioc, kube::RestClient& client, const std::string& ns,
                int count, int parallel) {
  int failures = 0;
  int done = 0;
  const int per = (count + parallel - 1) / parallel;
  for (int p = 0; p < parallel; ++p) {
    const int from = p * per;
    const int to = std::min(count, from + per);
    boost::asio::co_spawn(ioc, createRange(&client, ns, from, to, &failures, &done), rethrow);
  }
  while (done < parallel) {
    if (ioc.run_one() == 0) {
      ioc.restart();  // it ran out of work before we spawned ours; not an error
    }
  }
  return failures == 0;
}

}  // namespace egress::bench
