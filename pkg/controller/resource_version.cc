#include "pkg/controller/resource_version.h"

#include <charconv>
#include <cstdint>

namespace egress::controller {

bool versionBefore(const std::string& cached, const std::string& written) {
  uint64_t a = 0;
  uint64_t b = 0;
  const auto* ae = cached.data() + cached.size();
  const auto* be = written.data() + written.size();
  auto [ap, aerr] = std::from_chars(cached.data(), ae, a);
  auto [bp, berr] = std::from_chars(written.data(), be, b);
  return aerr == std::errc() && berr == std::errc() && ap == ae && bp == be && a < b;
}

}  // namespace egress::controller
