#include "pkg/kube/watched_file.h"

#include <sys/stat.h>

namespace egress::kube {

WatchedFile::WatchedFile(std::string what, std::string path, size_t limit, Parse parse,
                         CredentialClock clock)
    : what_(std::move(what)),
      path_(std::move(path)),
      limit_(limit),
      parse_(std::move(parse)),
      clock_(clock ? std::move(clock) : CredentialClock(&std::chrono::system_clock::now)) {}

Result<FileContents> WatchedFile::read() const {
  auto read = readBoundedFile(path_, limit_, FileKind::Regular);
  if (!read) {
    return Error::config(what_ + " " + configDetail(read.error()));
  }
  if (!*read) {
    return Error::config(what_ + " " + path_ + ": does not exist");
  }
  auto parsed = parse_((*read)->data);
  if (!parsed) {
    return Error::config(what_ + " " + path_ + ": " + configDetail(parsed.error()));
  }
  return FileContents{std::move(*parsed), (*read)->identity};
}

Result<std::string> WatchedFile::current() {
  std::lock_guard lock(mu_);
  const auto now = clock_();
  if (have_) {
    // A clock that stepped backwards counts as due, so a stepped clock cannot freeze the file.
    const bool statDue = now < lastStat_ || now - lastStat_ >= kStatInterval;
    const bool readDue = now < lastRead_ || now - lastRead_ >= kMaxAge;
    if (!statDue && !readDue) {
      return value_;
    }
    if (!readDue) {
      lastStat_ = now;
      struct stat st {};
      if (::stat(path_.c_str(), &st) == 0 && fileIdentity(st) == identity_) {
        return value_;
      }
    }
  }
  auto read = this->read();
  if (!read) {
    if (!have_) {
      return read.error();
    }
    // Keep serving the previous contents; retry after the next interval, not on every call.
    lastStat_ = now;
    lastRead_ = now;
    return value_;
  }
  value_ = std::move(read->data);
  identity_ = read->identity;
  have_ = true;
  lastStat_ = now;
  lastRead_ = now;
  return value_;
}

void WatchedFile::forgetIf(const std::string& seen) {
  std::lock_guard lock(mu_);
  if (have_ && value_ == seen) {
    have_ = false;
    value_.clear();
  }
}

}  // namespace egress::kube
