// File: annotating_controller.h
//
// A sample controller for the e2e tests that run one through a real Manager against the real
// control plane (prometheus_e2e_test, controller_process): for each ConfigMap of one namespace
// that lacks the annotation `annotation` (whatever its value: another replica may have written
// it), it waits `delay` on the Manager's clock (so that
// reconciles are in flight long enough to be caught: scraped, or interrupted by a signal) and
// then writes `annotation: value` (conditional on the resourceVersion it decided on: a conflict
// requeues); a ConfigMap that already has it reconciles at once. The ConfigMap
// named `failing` fails its first `failures` reconciles (retried through the rate limiter); the
// ones named in `slow` wait their own delay. Every reconcile's start and finish, and the
// controller's start hook and stop, are reported to `observer`, on the io_context's thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "pkg/apis/core/config_map.h"
#include "pkg/cache/shared_informer.h"
#include "pkg/controllerruntime/controller.h"
#include "pkg/kube/rest_client.h"

namespace egress::e2e {

struct AnnotatingControllerOptions {
  std::string namespace_;
  std::string annotation = "e2e.egress.io/reconciled-by";
  std::string value;
  std::chrono::milliseconds delay{0};
  // ConfigMap name -> its own delay.
  std::map<std::string, std::chrono::milliseconds> slow;
  std::string failing;
  int failures = 0;
  // event: "started" (the start hook, key ""), "start" / "finish" (a reconcile of key), "stop"
  // (key ""). Empty = nobody listens.
  std::function<void(std::string_view event, const std::string& key)> observer;
};

class AnnotatingController : public controllerruntime::Controller {
 public:
  AnnotatingController(Options options, kube::RestClient& client,
                       AnnotatingControllerOptions sample);

  net::awaitable<Result<Ok, std::string>> start() override;
  void stop() override;

 protected:
  Result<Ok, std::string> watchResources(cache::SharedInformerFactory& factory) override;
  Result<Ok, std::string> addEventHandlers() override;
  net::awaitable<controllerruntime::ReconcileResult> reconcile(const std::string& key) override;

 private:
  net::awaitable<controllerruntime::ReconcileResult> annotate(const std::string& key);
  void observe(std::string_view event, const std::string& key) const;

  kube::RestClient& client_;
  AnnotatingControllerOptions sample_;
  int failed_ = 0;
  cache::SharedIndexInformer<core::ConfigMap>* configMaps_ = nullptr;
};

}  // namespace egress::e2e
