#include "pkg/controllerruntime/processor.h"

namespace egress::controllerruntime {

bool foldProcessorResult(ReconcileResult& combined, ReconcileResult result,
                         const std::string& processorName) {
  switch (result.kind()) {
    case ReconcileResult::Kind::Done:
      return false;
    case ReconcileResult::Kind::RequeueAfter:
      if (combined.isDone() || result.after() < combined.after()) {
        combined = std::move(result);
      }
      return false;
    case ReconcileResult::Kind::Requeue:
      combined = std::move(result);
      return true;
    case ReconcileResult::Kind::Error:
      combined = ReconcileResult::error(processorName + ": " + result.message());
      return true;
  }
  return false;
}

}  // namespace egress::controllerruntime
