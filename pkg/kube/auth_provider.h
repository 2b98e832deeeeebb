// File: auth_provider.h
//
// Where the credentials of each request come from: the Credentials the transport attaches, the
// AuthProvider interface it asks before every request (and tells about a 401), and the token
// providers: a fixed token, and a token file that is re-read when it changes, because bound
// service-account tokens rotate under a running process. The exec plugin provider lives in
// exec_credential.h.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "pkg/kube/config_util.h"
#include "pkg/kube/errors.h"

namespace egress::kube {

namespace net = boost::asio;

// Attached to each request.
struct Credentials {
  std::string bearerToken;  // "" if none
  // Exec plugins may return a client certificate + key (PEM); "" if none.
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

// Injected by tests to move time; empty means std::chrono::system_clock::now.
using CredentialClock = std::function<std::chrono::system_clock::time_point()>;

// A token fixed in the kubeconfig. invalidate() has nothing to refresh.
class StaticTokenProvider final : public AuthProvider {
 public:
  explicit StaticTokenProvider(std::string token) : token_(std::move(token)) {}
  net::awaitable<Result<Credentials>> credentials() override {
    co_return Credentials{token_, {}, {}};
  }
  void invalidate(const Credentials&) override {}

 private:
  const std::string token_;
};

// A token read from a file (kubeconfig `tokenFile`, the in-cluster service-account token),
// surrounding whitespace trimmed. The file is stat()ed at most once per kStatInterval and re-read
// when its inode, size or mtime changed, and re-read regardless once the token is kMaxAge old:
// client-go's cachingTokenSource re-reads every minute, and a rewrite that keeps size and mtime
// (coarse timestamps) would otherwise go unnoticed. If a re-read fails the previous token is
// kept (the kubelet may be mid-rotation); with no token to fall back on the error is returned.
// Thread-safe.
class TokenFileProvider final : public AuthProvider {
 public:
  static constexpr std::chrono::seconds kStatInterval{1};
  static constexpr std::chrono::seconds kMaxAge{60};
  static constexpr size_t kMaxTokenBytes = 1 << 20;

  explicit TokenFileProvider(std::string path, CredentialClock clock = {});

  // The token now, read synchronously: the file is small and local, and a loader calls this
  // once to fail at startup rather than on the first request.
  Result<Credentials> current();
  net::awaitable<Result<Credentials>> credentials() override { co_return current(); }
  void invalidate(const Credentials& used) override;
  const std::string& path() const { return path_; }

 private:
  struct ReadToken {
    std::string token;
    FileIdentity identity;
  };
  Result<ReadToken> readTokenFile() const;

  const std::string path_;
  const CredentialClock clock_;
  std::mutex mu_;
  bool haveToken_ = false;  // guarded by mu_, as are the fields below
  std::string token_;
  FileIdentity identity_;
  std::chrono::system_clock::time_point lastStat_;
  std::chrono::system_clock::time_point lastRead_;
};

}  // namespace egress::kube
