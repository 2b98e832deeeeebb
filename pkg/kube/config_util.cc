#include "pkg/kube/config_util.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace egress::kube {

std::string trimSpace(std::string_view s) {
  const auto isSpace = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  };
  while (!s.empty() && isSpace(s.back())) {
    s.remove_suffix(1);
  }
  while (!s.empty() && isSpace(s.front())) {
    s.remove_prefix(1);
  }
  return std::string(s);
}

std::string inQuotes(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

std::string joinComma(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

std::string configDetail(const Error& e) {
  std::string m = e.message();
  constexpr std::string_view kPrefix = "config: ";
  return m.rfind(kPrefix, 0) == 0 ? m.substr(kPrefix.size()) : m;
}

FileIdentity fileIdentity(const struct stat& st) {
  return FileIdentity{st.st_dev, st.st_ino, st.st_size,
                      static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

Result<std::optional<FileContents>> readBoundedFile(const std::string& path, size_t limit,
                                                    FileKind kind) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return std::optional<FileContents>();
    }
    return Error::config(path + ": " + std::strerror(errno));
  }
  const auto fail = [&](const std::string& why) {
    ::close(fd);
    return Error::config(path + ": " + why);
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return fail(std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    return fail("is a directory");
  }
  if (kind == FileKind::Regular && !S_ISREG(st.st_mode)) {
    return fail("is not a regular file");
  }
  FileContents out;
  out.identity = fileIdentity(st);
  char buf[16384];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return fail(std::strerror(errno));
    }
    if (n == 0) {
      break;
    }
    if (out.data.size() + static_cast<size_t>(n) > limit) {
      return fail("is larger than " + std::to_string(limit) + " bytes");
    }
    out.data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return std::optional<FileContents>(std::move(out));
}

}  // namespace egress::kube
