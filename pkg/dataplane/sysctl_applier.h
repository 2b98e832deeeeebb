// File: sysctl_applier.h
//
// Sets the kernel parameters the data plane needs (kernel_state.h Sysctl: forwarding, the
// tunnel's rp_filter, proxy_delay and proxy_ndp on the uplink) under /proc/sys, writing only
// those whose value differs, so a second pass changes nothing. In a pod /proc/sys is read-only
// unless privileged: the chart's init container sets the global and uplink ones, and the
// agent's own pass then finds them set. The tunnel's rp_filter cannot be set there (the device
// exists only once the agent made it), so a per-device IPv4 parameter that /proc refuses is set
// through rtnetlink instead (IFLA_AF_SPEC/AF_INET/IFLA_INET_CONF, which needs only NET_ADMIN).
// Whatever neither way could set is named in the error.
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

  // The number of parameters written; every parameter is tried even after one fails.
  Result<int, std::string> apply(const std::vector<Sysctl>& want);
  // The current value (trailing newline removed), or an error naming the file.
  Result<std::string, std::string> read(const std::string& path) const;

 private:
  // Writes one file: 0 or the errno of the failure.
  int write(const Sysctl& s) const;

  std::string root_;
};

}  // namespace egress::dataplane
