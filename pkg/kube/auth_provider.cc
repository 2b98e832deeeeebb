#include "pkg/kube/auth_provider.h"

namespace egress::kube {

Result<Ok> checkBearerToken(std::string_view token) {
  for (const char c : token) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) {
      return Error::config(
          "the bearer token contains a control character (CR, LF or another), which cannot be "
          "sent in an HTTP header");
    }
  }
  return Ok{};
}

net::awaitable<Result<Credentials>> StaticTokenProvider::credentials() {
  co_return Credentials{token_, {}, {}};
}

net::awaitable<Result<Credentials>> CombinedAuthProvider::credentials() {
  // Locals, not members, past the first co_await: the provider may be shared by clients.
  const std::shared_ptr<AuthProvider> token = token_;
  const std::shared_ptr<AuthProvider> certificate = certificate_;
  auto fromToken = co_await token->credentials();
  if (!fromToken) {
    co_return fromToken.error();
  }
  auto fromCertificate = co_await certificate->credentials();
  if (!fromCertificate) {
    co_return fromCertificate.error();
  }
  co_return Credentials{fromToken->bearerToken, fromCertificate->clientCertPem,
                        fromCertificate->clientKeyPem};
}

void CombinedAuthProvider::invalidate(const Credentials& used) {
  token_->invalidate(Credentials{used.bearerToken, {}, {}});
  certificate_->invalidate(Credentials{{}, used.clientCertPem, used.clientKeyPem});
}

}  // namespace egress::kube
