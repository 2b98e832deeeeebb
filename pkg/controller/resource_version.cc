#include "pkg/controller/resource_version.h"

#include <charconv>
#include <cstdint>

namespace egress::controller {
namespace {

bool parse(const std::string& text, uint64_t& out) {
  const auto* end = text.data() + text.size();
  auto [p, err] = std::from_chars(text.data(), end, out);
  return err == std::errc() && p == end && !text.empty();
}

}  // namespace

std::optional<uint64_t> versionNumber(const std::string& version) {
  uint64_t out = 0;
  return parse(version, out) ? std::optional<uint64_t>(out) : std::nullopt;
}

bool versionBefore(const std::string& cached, const std::string& written) {
  uint64_t a = 0;
  uint64_t b = 0;
  return parse(cached, a) && parse(written, b) && a < b;
}

bool versionReached(const std::string& observed, const std::string& version) {
  if (observed.empty()) {
    return false;
  }
  uint64_t a = 0;
  uint64_t b = 0;
  if (parse(observed, a) && parse(version, b)) {
    return a >= b;
  }
  return observed == version;
}

}  // namespace egress::controller
