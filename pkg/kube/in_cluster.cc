#include "pkg/kube/in_cluster.h"

#include <cstdlib>
#include <memory>
#include <optional>

#include "pkg/kube/config_util.h"

namespace egress::kube {
namespace {

constexpr size_t kMaxFileBytes = 4 << 20;

// The file's contents; nullopt if it does not exist; an error if it exists but cannot be read.
Result<std::optional<std::string>> readOptionalFile(const std::string& path) {
  auto read = readBoundedFile(path, kMaxFileBytes, FileKind::Any);
  if (!read) {
    return Error::config("in-cluster config: " + configDetail(read.error()));
  }
  if (!*read) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(std::move((*read)->data));
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
  if (auto first = provider->current(); !first) {
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
