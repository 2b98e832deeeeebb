#include "pkg/controllerruntime/reconcile_result.h"

#include <fmt/format.h>

namespace egress::controllerruntime {

std::string toString(const ReconcileResult& result) {
  switch (result.kind()) {
    case ReconcileResult::Kind::Done:
      return "done";
    case ReconcileResult::Kind::Requeue:
      return "requeue";
    case ReconcileResult::Kind::RequeueAfter:
      return fmt::format("requeue after {}s",
                         std::chrono::duration<double>(result.after()).count());
    case ReconcileResult::Kind::Error:
      return "error: " + result.message();
  }
  return "?";
}

}  // namespace egress::controllerruntime
