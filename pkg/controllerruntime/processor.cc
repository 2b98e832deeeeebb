#include "pkg/controllerruntime/processor.h"

namespace egress::controllerruntime {

net::awaitable<ReconcileResult> runProcessors(std::vector<std::shared_ptr<Processor>> processors,
                                              std::string key) {
  ReconcileResult combined = ReconcileResult::done();
  for (const auto& processor : processors) {
    ReconcileResult result = co_await processor->process(key);
    switch (result.kind()) {
      case ReconcileResult::Kind::Done:
        break;
      case ReconcileResult::Kind::RequeueAfter:
        if (combined.isDone() || result.after() < combined.after()) {
          combined = result;
        }
        break;
      case ReconcileResult::Kind::Requeue:
        co_return result;
      case ReconcileResult::Kind::Error:
        co_return ReconcileResult::error(processor->name() + ": " + result.message());
    }
  }
  co_return combined;
}

}  // namespace egress::controllerruntime
