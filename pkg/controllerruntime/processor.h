// File: processor.h
//
// A Processor is one step of a reconcile (the seed's IPPoolProcessor, DeploymentProcessor,
// StatusProcessor), over whatever the reconcile works on: `Arg`, the egressgateway controller's
// per-policy info view, gathered once per reconcile and passed down the chain. How the steps'
// results combine (runProcessors):
//   - error or requeue stops the chain: it is the reconcile's result, later processors do not run
//     (a later step must not act on what an earlier one failed to establish);
//   - requeueAfter(d) does not stop it: the remaining processors still run (a step waiting for
//     pods to become ready must not keep the status step from reporting that wait), and the
//     shortest such d is the result unless a later processor errs or requeues;
//   - all done: done.
// An exception escaping a processor is not caught here: it ends the reconcile and the controller
// treats it as a panic (counted, logged, retried).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "pkg/controllerruntime/reconcile_result.h"

namespace egress::controllerruntime {

namespace net = boost::asio;

template <typename Arg>
class Processor {
 public:
  virtual ~Processor() = default;
  // For logs and error messages ("<name>: <message>").
  virtual const std::string& name() const = 0;
  // Brings what this processor owns to its desired state. May add to `arg` what later
  // processors need.
  virtual net::awaitable<ReconcileResult> process(Arg& arg) = 0;
};

// Folds one processor's result into the chain's result so far (`combined`, starting as done()),
// as described above; true when the chain stops here, `combined` then being its result. An
// error message is prefixed with the processor's name.
bool foldProcessorResult(ReconcileResult& combined, ReconcileResult result,
                         const std::string& processorName);

// Runs `processors` in order over `arg` and combines their results with foldProcessorResult.
// The caller keeps `arg` and the processors alive until the returned awaitable completes.
template <typename Arg>
net::awaitable<ReconcileResult> runProcessors(
    const std::vector<std::shared_ptr<Processor<Arg>>>& processors, Arg& arg) {
  ReconcileResult combined = ReconcileResult::done();
  for (const auto& processor : processors) {
    ReconcileResult result = co_await processor->process(arg);
    if (foldProcessorResult(combined, std::move(result), processor->name())) {
      break;
    }
  }
  co_return combined;
}

}  // namespace egress::controllerruntime
