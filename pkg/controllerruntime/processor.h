// File: processor.h
//
// A Processor is one step of a controller's reconcile (the seed's IPPoolProcessor,
// DeploymentProcessor, StatusProcessor): a controller runs its processors in order for each key.
// How their results combine (runProcessors):
//   - error or requeue stops the chain: it is the reconcile's result, later processors do not run
//     (a later step must not act on what an earlier one failed to establish);
//   - requeueAfter(d) does not stop it: the remaining processors still run (a step waiting for
//     pods to become ready must not keep the status step from reporting that wait), and the
//     shortest such d is the result unless a later processor errs or requeues;
//   - all done: done.
// An exception escaping a processor is not caught here: it ends the reconcile and the controller
// treats it as a panic (counted, logged, retried).
//
// Processors are held by shared_ptr and co-owned by the reconcile that runs them, so a
// controller may be destroyed while one of them is suspended.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "pkg/controllerruntime/reconcile_result.h"

namespace egress::controllerruntime {

namespace net = boost::asio;

class Processor {
 public:
  virtual ~Processor() = default;
  // For logs and error messages ("<name>: <message>").
  virtual const std::string& name() const = 0;
  // Brings what this processor owns for `key` ("namespace/name" or "name") to its desired state.
  virtual net::awaitable<ReconcileResult> process(const std::string& key) = 0;
};

// Folds one processor's result into the chain's result so far (`combined`, starting as done()),
// as described above; true when the chain stops here, `combined` then being its result. An
// error message is prefixed with the processor's name. For chains over other arguments than a
// key (the operator's processors take a per-reconcile view).
bool foldProcessorResult(ReconcileResult& combined, ReconcileResult result,
                         const std::string& processorName);

// Runs `processors` in order for `key` and combines their results with foldProcessorResult.
net::awaitable<ReconcileResult> runProcessors(std::vector<std::shared_ptr<Processor>> processors,
                                              std::string key);

}  // namespace egress::controllerruntime
