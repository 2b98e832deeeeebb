#include "pkg/cache/indexer.h"

namespace egress::cache {

std::optional<std::pair<std::string, std::string>> splitKey(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) {
    return std::make_pair(std::string(), key);
  }
  if (key.find('/', slash + 1) != std::string::npos) {
    return std::nullopt;
  }
  return std::make_pair(key.substr(0, slash), key.substr(slash + 1));
}

}  // namespace egress::cache
