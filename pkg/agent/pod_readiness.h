// File: pod_readiness.h
//
// The gateway pods' readiness gate, from the agent's side: which gateway pods on this node need
// their condition kIPProgrammedCondition written, and the pods/status patch that writes it. True
// once every egress IP of the pod is programmed and announced here (DesiredState::readyPods after
// a successful apply); False once a pod that had it True holds nothing here any more (fenced,
// its IP moved away, its annotation gone). A pod that never had the condition is not written to
// until it is programmed: a missing gate condition already keeps it not Ready. The patch is a
// strategic merge patch, which merges conditions by type, so the kubelet's own conditions stay.
// ReadinessWriter writes them off the sync loop, one batch at a time: a sync never waits for the
// API server (a fenced agent must withdraw while the server does not answer), and a server slow
// to answer is not piled on.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "pkg/apis/core/pod.h"
#include "pkg/apis/meta/time.h"
#include "pkg/kube/rest_client.h"

namespace egress::agent {

struct ReadinessWrite {
  std::string ns;
  std::string name;
  bool programmed = false;
  // Of the cached pod the decision was made on.
  std::string resourceVersion;
};

// The writes the pods of `node` among `pods` need, given the keys ("namespace/name") of those
// whose IPs are programmed here. Pods being deleted are left alone.
std::vector<ReadinessWrite> readinessWrites(
    const std::vector<std::shared_ptr<const core::Pod>>& pods, const std::string& node,
    const std::vector<std::string>& readyPods);

// The strategic merge patch of pods/status that sets the condition.
std::string readinessPatch(const ReadinessWrite& write, const std::string& node, meta::Time now);

class ReadinessWriter : public std::enable_shared_from_this<ReadinessWriter> {
 public:
  // `client` must outlive every batch (the Manager's client outlives its io_context's run).
  ReadinessWriter(kube::RestClient& client, std::string node);

  // Starts a batch with the writes `pods` need (readinessWrites), unless one is in flight; those
  // not written then are found again by the next call. A write already made on the same
  // resourceVersion of the pod is not repeated (the informer has not shown it yet).
  void update(const net::any_io_executor& executor,
              const std::vector<std::shared_ptr<const core::Pod>>& pods,
              const std::vector<std::string>& readyPods, meta::Time now);
  bool busy() const { return busy_; }

 private:
  static net::awaitable<void> run(std::shared_ptr<ReadinessWriter> self,
                                  std::vector<ReadinessWrite> writes, meta::Time now);

  kube::RestClient& client_;
  std::string node_;
  bool busy_ = false;
  // Per pod ("namespace/name"): the value last written and the resourceVersion it was decided on.
  std::map<std::string, std::pair<bool, std::string>> written_;
};

}  // namespace egress::agent
