// File: sysctl_applier.h
//
// Sets the kernel parameters the data plane needs (kernel_state.h Sysctl: forwarding, the
// tunnel's rp_filter, proxy_delay and proxy_ndp on the uplink) under /proc/sys, writing only
// those whose value differs, so a second pass changes nothing. In a pod /proc/sys/net is
// read-only unless privileged: the chart's init container sets them, and the agent's own pass
// then finds them set (and names any it could not set).
#pragma once

#include <string>
#include <vector>

#include "pkg/base/result.h"
#include "pkg/dataplane/kernel_state.h"

namespace egress::dataplane {

class SysctlApplier {
 public:
  // `root` is /proc/sys; tests point it elsewhere.
  explicit SysctlApplier(std::string root = "/proc/sys") : root_(std::move(root)) {}

  // The number of parameters written.
  Result<int, std::string> apply(const std::vector<Sysctl>& want);
  // The current value (trailing newline removed), or an error naming the file.
  Result<std::string, std::string> read(const std::string& path) const;

 private:
  std::string root_;
};

}  // namespace egress::dataplane
