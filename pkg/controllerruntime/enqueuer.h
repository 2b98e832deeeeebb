// File: enqueuer.h
//
// What an event handler holds to feed keys to a controller's workqueue. It is a small copyable
// handle on the controller's shared state, not a pointer to the controller: informers may call
// their handlers after the controller is gone (the factory usually outlives it), and keys that
// arrive then are dropped instead of touching freed memory. Keys are "namespace/name" or "name"
// (cache::objectKey, client-go's MetaNamespaceKeyFunc).
#pragma once

#include <memory>
#include <string>

#include "pkg/base/clock.h"

namespace egress::controllerruntime {

namespace detail {
struct ControllerState;
}

class Enqueuer {
 public:
  Enqueuer() = default;  // adds nothing
  // Queues `key` for a reconcile (deduplicated; never given to two workers at once).
  void add(const std::string& key) const;
  // Queues `key` once `delay` has passed.
  void addAfter(const std::string& key, Clock::Duration delay) const;

 private:
  friend class Controller;
  explicit Enqueuer(std::weak_ptr<detail::ControllerState> state) : state_(std::move(state)) {}
  std::weak_ptr<detail::ControllerState> state_;
};

}  // namespace egress::controllerruntime
