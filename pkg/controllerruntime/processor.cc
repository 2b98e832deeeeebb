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

net::awaitable<ReconcileResult> runProcessors(std::vector<std::shared_ptr<Processor>> processors,
                                              std::string key) {
  ReconcileResult combined = ReconcileResult::done();
  for (const auto& processor : processors) {
    ReconcileResult result = co_await processor->process(key);
    if (foldProcessorResult(combined, std::move(result), processor->name())) {
      break;
    }
  }
  co_return combined;
}

}  // namespace egress::controllerruntime
