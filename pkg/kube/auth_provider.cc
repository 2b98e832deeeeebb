#include "pkg/kube/auth_provider.h"

#include <sys/stat.h>

namespace egress::kube {

TokenFileProvider::TokenFileProvider(std::string path, CredentialClock clock)
    : path_(std::move(path)),
      clock_(clock ? std::move(clock) : CredentialClock(&std::chrono::system_clock::now)) {}

Result<TokenFileProvider::ReadToken> TokenFileProvider::readTokenFile() const {
  auto read = readBoundedFile(path_, kMaxTokenBytes, FileKind::Regular);
  if (!read) {
    return Error::config("token file " + configDetail(read.error()));
  }
  if (!*read) {
    return Error::config("token file " + path_ + ": does not exist");
  }
  std::string token = trimSpace((*read)->data);
  if (token.empty()) {
    return Error::config("token file " + path_ + " is empty");
  }
  return ReadToken{std::move(token), (*read)->identity};
}

Result<Credentials> TokenFileProvider::current() {
  std::lock_guard lock(mu_);
  const auto now = clock_();
  if (haveToken_) {
    // A clock that stepped backwards counts as due, so a stepped clock cannot freeze the token.
    const bool statDue = now < lastStat_ || now - lastStat_ >= kStatInterval;
    const bool readDue = now < lastRead_ || now - lastRead_ >= kMaxAge;
    if (!statDue && !readDue) {
      return Credentials{token_, {}, {}};
    }
    if (!readDue) {
      lastStat_ = now;
      struct stat st {};
      if (::stat(path_.c_str(), &st) == 0 && fileIdentity(st) == identity_) {
        return Credentials{token_, {}, {}};
      }
    }
  }
  auto read = readTokenFile();
  if (!read) {
    if (!haveToken_) {
      return read.error();
    }
    // Keep serving the previous token and retry after the next interval, not on every request.
    lastStat_ = now;
    lastRead_ = now;
    return Credentials{token_, {}, {}};
  }
  token_ = std::move(read->token);
  identity_ = read->identity;
  haveToken_ = true;
  lastStat_ = now;
  lastRead_ = now;
  return Credentials{token_, {}, {}};
}

void TokenFileProvider::invalidate(const Credentials&) {
  std::lock_guard lock(mu_);
  haveToken_ = false;
  token_.clear();
}

}  // namespace egress::kube
