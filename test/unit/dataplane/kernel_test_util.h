// File: kernel_test_util.h
//
// What the tests that program a kernel (in their own network namespace, netns_main.cc) share:
// running a shell command or a function in a node's namespace, a pod's connection to the echo
// server, the desired state of a node of the three-node topology (topology.h), and items as sorted
// canonical lines to compare what was programmed with what was read back.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pkg/dataplane/desired_state.h"
#include "test/unit/dataplane/topology.h"
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

namespace egress::dataplane::testing {

// Runs `fn` with this thread in network namespace `ns` (/run/netns/<ns>; sockets made inside
// stay there).
template <typename F>
void inNetns(const std::string& ns, F fn) {
  int self = open("/proc/thread-self/ns/net", O_RDONLY);
  int target = open(("/run/netns/" + ns).c_str(), O_RDONLY);
  ASSERT_GE(self, 0);
  ASSERT_GE(target, 0);
  ASSERT_EQ(setns(target, CLONE_NEWNET), 0) << ns;
  fn();
  ASSERT_EQ(setns(self, CLONE_NEWNET), 0);
  close(target);
  close(self);
}

inline void sh(const std::string& cmd) {
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// A command's standard output.
inline std::string output(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    return out;
  }
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) {
    out.append(buf, n);
  }
  pclose(p);
  return out;
}

// What the echo server (packets/echo.py) saw of a connection from pod namespace `pod` to
// `host` made by packets/client.py in `dir` (with its MODE), or "error: ...".
inline std::string connectFrom(const std::string& dir, const std::string& pod,
                               const std::string& host, const std::string& mode = "") {
  auto out = output("ip netns exec " + pod + " python3 " + dir + "/client.py " + host + " " + mode);
  while (!out.empty() && out.back() == '\n') {
    out.pop_back();
  }
  return out;
}

// A link's field as `ip -o link` prints it ("mtu", "link/ether", ...). Not /sys/class/net: the
// sysfs mounted there shows the host's namespace, not this one.
// In network namespace `ns` when it is given.
inline std::string linkField(const std::string& dev, const std::string& field,
                             const std::string& ns = "") {
  auto out = output("ip " + (ns.empty() ? std::string() : "-n " + ns + " ") + "-o link show dev " +
                    dev + " | tr ' ' '\\n' | grep -A1 -x '" + field + "' | tail -1");
  while (!out.empty() && out.back() == '\n') {
    out.pop_back();
  }
  return out;
}

inline DataplaneConfig uplinkConfig(const std::string& uplink = "eth0") {
  DataplaneConfig c;
  c.uplink = uplink;
  return c;
}

inline DesiredState desiredOf(const ClusterView& v, const DataplaneConfig& c = uplinkConfig()) {
  auto s = computeDesiredState(v, c);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error());
  return s.ok() ? *s : DesiredState{};
}

template <typename T>
std::vector<std::string> sorted(const std::vector<T>& items) {
  std::vector<std::string> out;
  for (const auto& i : items) {
    out.push_back(i.toString());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace egress::dataplane::testing
