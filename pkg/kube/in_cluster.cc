#include "pkg/kube/in_cluster.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include <fcntl.h>
#include <unistd.h>

namespace egress::kube {
namespace {

constexpr size_t kMaxFileBytes = 4 << 20;

std::string trimSpace(const std::string& s) {
  const char* kSpace = " \t\r\n\v\f";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string::npos) {
    return {};
  }
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

// The file's contents; nullopt if it does not exist; an error if it exists but cannot be read.
Result<std::optional<std::string>> readOptionalFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return std::optional<std::string>();
    }
    return Error::config("in-cluster config: " + path + ": " + std::strerror(errno));
  }
  std::string data;
  char buf[16384];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 || data.size() + static_cast<size_t>(n) > kMaxFileBytes) {
      const std::string why =
          n < 0 ? std::strerror(errno) : "larger than " + std::to_string(kMaxFileBytes) + " bytes";
      ::close(fd);
      return Error::config("in-cluster config: " + path + ": " + why);
    }
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return std::optional<std::string>(std::move(data));
}

}  // namespace

Result<RestConfig> inClusterConfig(const InClusterOptions& options) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return Error::config(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
        "set (use --kubeconfig or KUBECONFIG outside a cluster)");
  }
  const std::string hostText = host;
  RestConfig config;
  // net.JoinHostPort: an IPv6 literal needs brackets to keep its colons apart from the port's.
  const bool ipv6 = hostText.find(':') != std::string::npos && hostText.front() != '[';
  config.server = "https://" + (ipv6 ? "[" + hostText + "]" : hostText) + ":" + port;

  const std::string dir = options.serviceAccountDir;
  auto provider = std::make_shared<TokenFileProvider>(dir + "/token", options.clock);
  // Read now, so a pod without a mounted token fails at startup rather than on first request.
  if (auto first = provider->credentials(); !first) {
    return first.error();
  }
  config.auth = std::move(provider);

  auto ca = readOptionalFile(dir + "/ca.crt");
  if (!ca) {
    return ca.error();
  }
  if (*ca) {
    config.caPem = std::move(**ca);
  }
  auto ns = readOptionalFile(dir + "/namespace");
  if (!ns) {
    return ns.error();
  }
  if (*ns && !trimSpace(**ns).empty()) {
    config.defaultNamespace = trimSpace(**ns);
  }
  return config;
}

}  // namespace egress::kube
