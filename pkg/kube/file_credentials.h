// File: file_credentials.h
//
// Credentials read from files that rotate under a running process, each a WatchedFile (re-read
// when it changes, the last good contents kept through a failed re-read): a bearer token file
// (kubeconfig `tokenFile`, the in-cluster service-account token, which the kubelet rotates) and
// a client certificate and key (kubeconfig `client-certificate` / `client-key`, which
// cert-manager or a kubelet may renew), as client-go's cachingTokenSource and its
// certificate-rotating dialer follow them.
#pragma once

#include <cstddef>
#include <string>

#include "pkg/kube/auth_provider.h"
#include "pkg/kube/watched_file.h"

namespace egress::kube {

// A token read from a file, surrounding whitespace trimmed. `fallbackToken` (a kubeconfig
// `token` set beside `tokenFile`) is served while the file cannot be read, as client-go's
// bearer round tripper does. Thread-safe.
class TokenFileProvider final : public AuthProvider {
 public:
  static constexpr size_t kMaxTokenBytes = 1 << 20;

  explicit TokenFileProvider(std::string path, CredentialClock clock = {},
                             std::string fallbackToken = {});

  // The token now, read synchronously: the file is small and local, and a loader calls this
  // once to fail at startup rather than on the first request.
  Result<Credentials> current();
  net::awaitable<Result<Credentials>> credentials() override { co_return current(); }
  // Re-reads the file at the next call if `used` carried the token last read.
  void invalidate(const Credentials& used) override;
  const std::string& path() const { return file_.path(); }

 private:
  WatchedFile file_;
  const std::string fallback_;
};

// A client certificate and key read from two PEM files. Thread-safe.
class ClientCertFileProvider final : public AuthProvider {
 public:
  static constexpr size_t kMaxPemBytes = 4 << 20;

  ClientCertFileProvider(std::string certPath, std::string keyPath,
                         const CredentialClock& clock = {});

  Result<Credentials> current();
  net::awaitable<Result<Credentials>> credentials() override { co_return current(); }
  void invalidate(const Credentials& used) override;

 private:
  WatchedFile cert_;
  WatchedFile key_;
};

}  // namespace egress::kube
