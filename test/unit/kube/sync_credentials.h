// File: sync_credentials.h
//
// Asks an AuthProvider for credentials from plain test code, on an io_context of its own.
#pragma once

#include <boost/asio/io_context.hpp>

#include "pkg/kube/auth_provider.h"
#include "test/testutil/run_sync.h"

namespace egress::kube {

inline Result<Credentials> syncCredentials(AuthProvider& provider) {
  boost::asio::io_context ioc;
  return testutil::runSync(ioc, provider.credentials());
}

}  // namespace egress::kube
