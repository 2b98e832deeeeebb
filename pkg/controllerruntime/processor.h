// File: processor.h
//
// How the results of a reconcile's steps combine: the processors of the seed (IPPoolProcessor,
// DeploymentProcessor, StatusProcessor) run in order, each a plain class with its own inputs and
// outputs (egressgateway/controller.cc hands each step what the steps before it decided), and
// what they share is this rule, ProcessorResults:
//   - error or requeue stops the chain: it is the reconcile's result, later processors do not run
//     (a later step must not act on what an earlier one failed to establish);
//   - requeueAfter(d) does not stop it: the remaining processors still run (a step waiting for
//     pods to become ready must not keep the status step from reporting that wait), and the
//     shortest such d is the result unless a later processor errs or requeues;
//   - all done: done.
// An exception escaping a processor is not caught here: it ends the reconcile and the controller
// treats it as a panic (counted, logged, retried).
#pragma once

#include <string>

#include "pkg/controllerruntime/reconcile_result.h"

namespace egress::controllerruntime {

class ProcessorResults {
 public:
  // Folds in the result of processor `name`, as described above; false when the chain stops
  // here. An error's message is prefixed with the processor's name.
  bool add(ReconcileResult result, const std::string& name);
  // The chain's result so far (done for none).
  const ReconcileResult& result() const { return combined_; }

 private:
  ReconcileResult combined_ = ReconcileResult::done();
};

}  // namespace egress::controllerruntime
