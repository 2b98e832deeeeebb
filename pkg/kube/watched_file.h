// File: watched_file.h
//
// A small file a running process must follow as it is rotated under it (a bound service-account
// token, a token file, a client certificate and key): stat()ed at most once per kStatInterval
// and re-read when its inode, size or mtime changed, and re-read regardless once the contents
// are kMaxAge old (client-go's cachingTokenSource re-reads every minute; a rewrite that keeps
// size and mtime, with coarse timestamps, would otherwise go unnoticed). A failed re-read keeps
// the previous contents, since the writer may be mid-rotation, and is retried after the next
// interval. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>

#include "pkg/kube/config_util.h"
#include "pkg/kube/errors.h"

namespace egress::kube {

// Injected by tests to move time; empty means std::chrono::system_clock::now.
using CredentialClock = std::function<std::chrono::system_clock::time_point()>;

class WatchedFile {
 public:
  static constexpr std::chrono::seconds kStatInterval{1};
  static constexpr std::chrono::seconds kMaxAge{60};

  // Turns the raw contents into the value kept (trimmed, checked), or an error that counts as a
  // failed read. Messages are prefixed with the path by the caller's description.
  using Parse = std::function<Result<std::string>(const std::string& raw)>;

  // `what` names the file in errors ("token file", "client certificate").
  WatchedFile(std::string what, std::string path, size_t limit, Parse parse, CredentialClock clock);

  // The contents as of now (see above). With nothing read yet, a failed read is the error.
  Result<std::string> current();
  // Drops the contents if they are still `seen`, so the next current() reads the file now (and
  // fails if it cannot). For a 401: a rejected credential must not be served again.
  void forgetIf(const std::string& seen);
  const std::string& path() const { return path_; }

 private:
  Result<FileContents> read() const;

  const std::string what_;
  const std::string path_;
  const size_t limit_;
  const Parse parse_;
  const CredentialClock clock_;
  std::mutex mu_;
  bool have_ = false;  // guarded by mu_, as are the fields below
  std::string value_;
  FileIdentity identity_;
  std::chrono::system_clock::time_point lastStat_;
  std::chrono::system_clock::time_point lastRead_;
};

}  // namespace egress::kube
