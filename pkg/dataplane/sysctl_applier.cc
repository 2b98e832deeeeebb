#include "pkg/dataplane/sysctl_applier.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace egress::dataplane {

Result<std::string, std::string> SysctlApplier::read(const std::string& path) const {
  std::ifstream in(root_ + "/" + path);
  if (!in) {
    return unexpected("sysctl " + path + ": " + std::strerror(errno));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string v = ss.str();
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) {
    v.pop_back();
  }
  return v;
}

Result<int, std::string> SysctlApplier::apply(const std::vector<Sysctl>& want) {
  int changes = 0;
  for (const auto& s : want) {
    auto have = read(s.path);
    if (!have) {
      return unexpected(have.error());
    }
    if (*have == s.value) {
      continue;
    }
    std::ofstream out(root_ + "/" + s.path);
    out << s.value << '\n';
    out.flush();
    if (!out) {
      return unexpected("sysctl " + s.toString() + ": " + std::strerror(errno));
    }
    ++changes;
  }
  return changes;
}

}  // namespace egress::dataplane
