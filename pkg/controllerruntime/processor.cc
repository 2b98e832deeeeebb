#include "pkg/controllerruntime/processor.h"

namespace egress::controllerruntime {

bool ProcessorResults::add(ReconcileResult result, const std::string& name) {
  switch (result.kind()) {
    case ReconcileResult::Kind::Done:
      return true;
    case ReconcileResult::Kind::RequeueAfter:
      if (combined_.isDone() || result.after() < combined_.after()) {
        combined_ = std::move(result);
      }
      return true;
    case ReconcileResult::Kind::Requeue:
      combined_ = std::move(result);
      return false;
    case ReconcileResult::Kind::Error:
      combined_ = ReconcileResult::error(name + ": " + result.message());
      return false;
  }
  return true;
}

}  // namespace egress::controllerruntime
