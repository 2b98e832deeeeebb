#include "pkg/kube/auth_provider.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace egress::kube {
namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string trimSpace(std::string s) {
  size_t end = s.size();
  while (end > 0 && isSpace(s[end - 1])) {
    --end;
  }
  size_t begin = 0;
  while (begin < end && isSpace(s[begin])) {
    ++begin;
  }
  return s.substr(begin, end - begin);
}

int64_t mtimeNanos(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

TokenFileProvider::TokenFileProvider(std::string path, CredentialClock clock)
    : path_(std::move(path)),
      clock_(clock ? std::move(clock) : CredentialClock(&std::chrono::system_clock::now)) {}

Result<TokenFileProvider::ReadToken> TokenFileProvider::readTokenFile() const {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error::config("token file " + path_ + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Error::config("token file " + path_ + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error::config("token file " + path_ + ": not a regular file");
  }
  std::string data;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Error::config("token file " + path_ + ": " + std::strerror(err));
    }
    if (n == 0) {
      break;
    }
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > kMaxTokenBytes) {
      ::close(fd);
      return Error::config("token file " + path_ + ": larger than " +
                           std::to_string(kMaxTokenBytes) + " bytes");
    }
  }
  ::close(fd);
  std::string token = trimSpace(std::move(data));
  if (token.empty()) {
    return Error::config("token file " + path_ + " is empty");
  }
  return ReadToken{std::move(token),
                   FileIdentity{st.st_dev, st.st_ino, st.st_size, mtimeNanos(st)}};
}

Result<Credentials> TokenFileProvider::credentials() {
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
      if (::stat(path_.c_str(), &st) == 0 &&
          FileIdentity{st.st_dev, st.st_ino, st.st_size, mtimeNanos(st)} == identity_) {
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

void TokenFileProvider::invalidate() {
  std::lock_guard lock(mu_);
  haveToken_ = false;
  token_.clear();
}

}  // namespace egress::kube
