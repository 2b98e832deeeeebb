// File: status_write.h
//
// The one way the operator writes a status: an update of the status subresource carrying the
// object's resourceVersion (a compare-and-swap), under the operator's field manager. A conflict
// requeues (the next try reads the newer object; nothing is lost: what the status would say is
// computed again); not found is done (the delete event comes next); anything else is the
// reconcile's error, "<what>: <message>".
#pragma once

#include <optional>
#include <string>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "pkg/client/networking/v1alpha1/zz_generated.clientset.h"
#include "pkg/controller/names.h"
#include "pkg/controllerruntime/reconcile_result.h"
#include "pkg/kube/rest_client.h"

namespace egress::controller {

// `updated` is the cached object with the status to write; `written`, if not null, receives the
// object as the server returned it (its new resourceVersion) when the write succeeds.
template <typename T>
boost::asio::awaitable<controllerruntime::ReconcileResult> writeStatus(
    kube::RestClient& client, T updated, std::string what, std::optional<T>* written = nullptr) {
  client::TypedClient<T> typed(client, updated.metadata.namespace_);
  kube::WriteOptions opts;
  opts.fieldManager = std::string(kFieldManager);
  auto result = co_await typed.updateStatus(std::move(updated), std::move(opts));
  if (!result) {
    if (result.error().isConflict()) {
      co_return controllerruntime::ReconcileResult::requeue();
    }
    if (result.error().isNotFound()) {
      co_return controllerruntime::ReconcileResult::done();
    }
    co_return controllerruntime::ReconcileResult::error(what + ": " + result.error().message());
  }
  if (written != nullptr) {
    *written = std::move(*result);
  }
  co_return controllerruntime::ReconcileResult::done();
}

}  // namespace egress::controller
