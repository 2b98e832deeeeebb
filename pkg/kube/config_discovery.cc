#include "pkg/kube/config_discovery.h"

#include <cstdlib>
#include <filesystem>
#include <optional>

#include <pwd.h>
#include <unistd.h>

namespace egress::kube {
namespace {

namespace fs = std::filesystem;

std::string homeDirectory() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return home;
  }
  // controller-runtime falls back to the passwd entry when HOME is unset (distroless images).
  struct passwd pw {};
  struct passwd* result = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &result) == 0 && result != nullptr &&
      result->pw_dir != nullptr) {
    return result->pw_dir;
  }
  return {};
}

}  // namespace

std::vector<std::string> kubeconfigPathsFromEnv(const char* value) {
  std::vector<std::string> paths;
  if (value == nullptr) {
    return paths;
  }
  const std::string_view text(value);
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(':', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    if (end > start) {
      paths.emplace_back(text.substr(start, end - start));
    }
    start = end + 1;
  }
  return paths;
}

Result<RestConfig> loadRestConfig(const std::string& kubeconfigFlag, const std::string& context,
                                  const InClusterOptions& inCluster) {
  KubeconfigOptions options;
  options.context = context;
  options.clock = inCluster.clock;
  if (!kubeconfigFlag.empty()) {
    options.paths = {kubeconfigFlag};
    return loadKubeconfig(options);
  }
  options.paths = kubeconfigPathsFromEnv(std::getenv("KUBECONFIG"));
  if (!options.paths.empty()) {
    return loadKubeconfig(options);
  }
  std::optional<Error> inClusterError;
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host != nullptr && *host != '\0') {
    auto config = inClusterConfig(inCluster);
    if (config) {
      return config;
    }
    inClusterError = config.error();
  }
  const std::string home = homeDirectory();
  const std::string path = home.empty() ? "" : home + "/.kube/config";
  std::error_code ec;
  if (!path.empty() && fs::exists(path, ec)) {
    options.paths = {path};
    return loadKubeconfig(options);
  }
  if (inClusterError) {
    return *inClusterError;
  }
  return Error::config(
      "no Kubernetes configuration found: no --kubeconfig, KUBECONFIG is not set, not running in "
      "a cluster (KUBERNETES_SERVICE_HOST is not set), and " +
      (path.empty() ? std::string("no home directory") : path + " does not exist"));
}

}  // namespace egress::kube
