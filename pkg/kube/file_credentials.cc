#include "pkg/kube/file_credentials.h"

namespace egress::kube {
namespace {

Result<std::string> parseToken(const std::string& raw) {
  std::string token = trimSpace(raw);
  if (token.empty()) {
    return Error::config("is empty");
  }
  if (auto ok = checkBearerToken(token); !ok) {
    return ok.error();
  }
  return token;
}

Result<std::string> parsePem(const std::string& raw) {
  if (trimSpace(raw).empty()) {
    return Error::config("is empty");
  }
  return raw;
}

}  // namespace

TokenFileProvider::TokenFileProvider(std::string path, CredentialClock clock,
                                     std::string fallbackToken)
    : file_("token file", std::move(path), kMaxTokenBytes, parseToken, std::move(clock)),
      fallback_(std::move(fallbackToken)) {}

Result<Credentials> TokenFileProvider::current() {
  auto token = file_.current();
  if (!token) {
    if (!fallback_.empty()) {
      return Credentials{fallback_, {}, {}};
    }
    return token.error();
  }
  return Credentials{std::move(*token), {}, {}};
}

void TokenFileProvider::invalidate(const Credentials& used) {
  file_.forgetIf(used.bearerToken);
}

ClientCertFileProvider::ClientCertFileProvider(std::string certPath, std::string keyPath,
                                               const CredentialClock& clock)
    : cert_("client certificate", std::move(certPath), kMaxPemBytes, parsePem, clock),
      key_("client key", std::move(keyPath), kMaxPemBytes, parsePem, clock) {}

Result<Credentials> ClientCertFileProvider::current() {
  // A rotation rewrites both files; reading one new and one old is possible for up to a stat
  // interval. The transport then refuses the pair (key mismatch) for the requests of that
  // moment, as client-go's certificate loader does, and the next read picks up both.
  auto cert = cert_.current();
  if (!cert) {
    return cert.error();
  }
  auto key = key_.current();
  if (!key) {
    return key.error();
  }
  return Credentials{{}, std::move(*cert), std::move(*key)};
}

void ClientCertFileProvider::invalidate(const Credentials& used) {
  cert_.forgetIf(used.clientCertPem);
  key_.forgetIf(used.clientKeyPem);
}

}  // namespace egress::kube
