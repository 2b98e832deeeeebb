// File: auth_provider.h
//
// Where the credentials of each request come from: the Credentials the transport attaches, the
// AuthProvider interface it asks before every request (and tells about a 401), the check every
// bearer token passes before it goes into a header, a fixed token, and the pairing of a token
// source with a client-certificate source. Providers backed by rotating files are in
// file_credentials.h, the exec plugin provider in exec_credential.h.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "pkg/kube/errors.h"
#include "pkg/kube/watched_file.h"

namespace egress::kube {

namespace net = boost::asio;

// Attached to each request.
struct Credentials {
  std::string bearerToken;  // "" if none
  // A client certificate + key (PEM) that may change (exec plugins, certificate files); "" if
  // none.
  std::string clientCertPem;
  std::string clientKeyPem;
  bool operator==(const Credentials&) const = default;
};

class AuthProvider {
 public:
  virtual ~AuthProvider() = default;
  // Current credentials; joins or starts a refresh when nothing valid is cached; never blocks the
  // io_context thread. Called for every request, so it must be cheap while cached.
  virtual net::awaitable<Result<Credentials>> credentials() = 0;
  // A request made with `used` got 401: drop the cache only if `used` is still what is cached
  // (client-go's exec Authenticator.maybeRefreshCreds), so a burst of requests that all carried
  // the old credential refreshes once.
  virtual void invalidate(const Credentials& used) = 0;
};

// A token must fit in an HTTP header: a control character (CR and LF above all: header
// injection) is refused, as Go's net/http refuses such a header value. The error says so
// without quoting the token.
Result<Ok> checkBearerToken(std::string_view token);

// A token fixed in the kubeconfig. invalidate() has nothing to refresh.
class StaticTokenProvider final : public AuthProvider {
 public:
  explicit StaticTokenProvider(std::string token) : token_(std::move(token)) {}
  net::awaitable<Result<Credentials>> credentials() override;
  void invalidate(const Credentials&) override {}

 private:
  const std::string token_;
};

// The bearer token of one provider with the client certificate of another (a kubeconfig user
// with a token file and certificate files). 401s are passed to both.
class CombinedAuthProvider final : public AuthProvider {
 public:
  CombinedAuthProvider(std::shared_ptr<AuthProvider> token,
                       std::shared_ptr<AuthProvider> certificate)
      : token_(std::move(token)), certificate_(std::move(certificate)) {}
  net::awaitable<Result<Credentials>> credentials() override;
  void invalidate(const Credentials& used) override;

 private:
  const std::shared_ptr<AuthProvider> token_;
  const std::shared_ptr<AuthProvider> certificate_;
};

}  // namespace egress::kube
