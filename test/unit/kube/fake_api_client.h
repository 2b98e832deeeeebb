// File: fake_api_client.h
//
// A REST client for the in-process FakeApiServer, as the component tests of the client's users
// want it: no client-side rate limit and no retries, so each request a test causes reaches the
// server exactly once and nothing waits on the limiter's clock.
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "pkg/kube/rest_client.h"
#include "test/unit/kube/fake_api_server.h"

namespace egress::kube::testing {

inline Result<std::unique_ptr<RestClient>> clientFor(boost::asio::any_io_executor executor,
                                                     const FakeApiServer& server) {
  RestConfig config;
  config.server = server.url();
  config.qps = 0;
  RestClientOptions options;
  options.maxRetries = 0;
  return RestClient::create(std::move(executor), config, nullptr, options);
}

}  // namespace egress::kube::testing
