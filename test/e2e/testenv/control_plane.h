// File: control_plane.h
//
// A real Kubernetes control plane on loopback for end-to-end tests: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and the test kubelet (fake Ready nodes whose pods
// become Running/Ready; the C++ egress-testenv-kubelet of this build unless the options or
// EGRESS_TESTENV_KUBELET say otherwise), started through hack/testenv/up.sh and owned by this
// process. The supervisor watches this process: if it dies in any way (SIGINT, SIGKILL, a
// crash), every component it started is stopped and the run directory removed.
//
//   auto cp = ControlPlane::start({.nodes = 2});
//   ASSERT_TRUE(cp) << cp.error();
//   auto out = (*cp)->kubectl({"get", "nodes"});
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace egress::testenv {

// What a command printed and how it ended.
struct CommandResult {
  int exitCode = -1;
  std::string output;  // stdout and stderr, interleaved as written

  bool ok() const { return exitCode == 0; }
};

// Runs argv (no shell) with optional extra environment entries; output is captured.
CommandResult runCommand(const std::vector<std::string>& argv,
                         const std::vector<std::string>& extraEnv = {});

struct ControlPlaneOptions {
  int nodes = 2;
  // The test kubelet's binary, "" for hack/testenv/kubelet.sh. Unset: EGRESS_TESTENV_KUBELET
  // from the environment if it is set (empty: the script), else the C++ kubelet of this build.
  std::optional<std::string> kubelet;
  // up.sh --advertise-address: the API server also serves on this address (all addresses
  // bound, this one in its certificate). "": loopback only.
  std::string advertiseAddress;
};

class ControlPlane {
 public:
  // Starts a fresh control plane and waits until it is ready (apiserver /readyz, nodes Ready,
  // the default ServiceAccount has its token). Returns nullptr and fills `error` on failure.
  static std::unique_ptr<ControlPlane> start(const ControlPlaneOptions& options,
                                             std::string& error);

  // Stops every component and removes the run directory.
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  const std::string& dir() const { return dir_; }
  // Admin kubeconfig with a client certificate.
  std::string kubeconfig() const { return dir_ + "/kubeconfig"; }
  // Admin kubeconfig with a bearer token file.
  std::string tokenKubeconfig() const { return dir_ + "/kubeconfig-token"; }
  const std::string& server() const { return server_; }
  // The supervisor's pid; signalling it with SIGTERM tears the control plane down.
  int supervisorPid() const { return supervisorPid_; }
  // The test kubelet's binary, or "" when hack/testenv/kubelet.sh runs.
  const std::string& kubelet() const { return kubelet_; }

  // kubectl (1.33, from the test cache) against this control plane.
  CommandResult kubectl(const std::vector<std::string>& args) const;
  // Creates namespace `ns` and waits (up to 30 s) until the controller-manager's root-CA
  // publisher has put kube-root-ca.crt into it, so that ConfigMap cannot show up in the middle
  // of a test's lists and watches. Returns "" or what went wrong.
  std::string createNamespace(const std::string& ns) const;
  // hack/testenv/ctl.sh DIR ARGS... (restart a component, compact etcd).
  CommandResult ctl(const std::vector<std::string>& args) const;

 private:
  ControlPlane(std::string dir, std::string server, int supervisorPid, std::string kubelet);
  void stop();

  std::string dir_;
  std::string server_;
  int supervisorPid_;
  std::string kubelet_;
};

// The repository root (for hack/ scripts and test data).
std::string sourceDir();

}  // namespace egress::testenv
