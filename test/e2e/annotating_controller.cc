#include "test/e2e/annotating_controller.h"

#include <utility>

#include "pkg/cache/informer_factory.h"
#include "pkg/controllerruntime/event_handlers.h"

namespace egress::e2e {

namespace {

using controllerruntime::ReconcileResult;

const kube::Resource kConfigMaps{"", "v1", "configmaps", true};

}  // namespace

AnnotatingController::AnnotatingController(Options options, kube::RestClient& client,
                                           AnnotatingControllerOptions sample)
    : Controller(std::move(options)), client_(client), sample_(std::move(sample)) {}

net::awaitable<Result<Ok, std::string>> AnnotatingController::start() {
  observe("started", "");
  co_return Ok{};
}

void AnnotatingController::stop() {
  observe("stop", "");
  Controller::stop();
}

Result<Ok, std::string> AnnotatingController::watchResources(
    cache::SharedInformerFactory& factory) {
  configMaps_ =
      &factory.informerFor<core::ConfigMap>(kConfigMaps, core::decodeConfigMap, sample_.namespace_);
  return Ok{};
}

Result<Ok, std::string> AnnotatingController::addEventHandlers() {
  auto handler = controllerruntime::enqueueForObject<core::ConfigMap>(enqueuer());
  if (auto reg = configMaps_->addEventHandler(handler); !reg) {
    return reg.error().message();
  }
  return Ok{};
}

net::awaitable<ReconcileResult> AnnotatingController::reconcile(const std::string& key) {
  observe("start", key);
  ReconcileResult result = co_await annotate(key);
  observe("finish", key);
  co_return result;
}

net::awaitable<ReconcileResult> AnnotatingController::annotate(const std::string& key) {
  auto object = configMaps_->indexer().get(key);
  if (!object) {
    co_return ReconcileResult::done();
  }
  const auto& meta = object->metadata;
  if (meta.name == sample_.failing && failed_ < sample_.failures) {
    ++failed_;
    co_return ReconcileResult::error("injected failure " + std::to_string(failed_));
  }
  if (meta.annotations.count(sample_.annotation) > 0) {
    co_return ReconcileResult::done();  // whoever wrote it
  }
  auto slow = sample_.slow.find(meta.name);
  const Clock::Duration delay = slow == sample_.slow.end() ? sample_.delay : slow->second;
  co_await clock().sleepFor(delay);
  // With the resourceVersion the decision was made on: a writer that took over from another
  // must not overwrite what it has not seen yet.
  std::string patch = R"({"metadata":{"resourceVersion":")" + meta.resourceVersion +
                      R"(","annotations":{")" + sample_.annotation + R"(":")" + sample_.value +
                      "\"}}}";
  auto patched = co_await client_.patch(kConfigMaps, meta.namespace_, meta.name,
                                        kube::PatchType::Merge, std::move(patch));
  if (!patched && patched.error().isConflict()) {
    co_return ReconcileResult::requeue();  // the cache was behind: look again
  }
  if (!patched && !patched.error().isNotFound()) {
    co_return ReconcileResult::error(patched.error().message());
  }
  // Not found: deleted after the cache showed it; the delete's own reconcile follows.
  co_return ReconcileResult::done();
}

void AnnotatingController::observe(std::string_view event, const std::string& key) const {
  if (sample_.observer) {
    sample_.observer(event, key);
  }
}

}  // namespace egress::e2e
