// File: trigger.h
//
// Trigger: keys that come from inside the process, not from an informer (controller-runtime's
// source.Channel): what one controller finds that another must look at, such as an address one
// policy's reconcile freed, which a waiting policy can now use. Whoever finds it adds the key;
// the controller that reconciles such keys connects the trigger to its queue in its own
// addEventHandlers(), beside its informers, so each controller declares everything that queues
// it, and the object holding the triggers is complete from its construction. Keys added while no
// controller is connected, or after it is gone, are dropped (see Enqueuer): nothing adds any
// before the Manager has set every controller up.
#pragma once

#include <string>
#include <utility>

#include "pkg/base/clock.h"
#include "pkg/controllerruntime/enqueuer.h"

namespace egress::controllerruntime {

class Trigger {
 public:
  // The queue this trigger's keys go to from now on.
  void connect(Enqueuer queue) { queue_ = std::move(queue); }
  void add(const std::string& key) const { queue_.add(key); }
  void addAfter(const std::string& key, Clock::Duration delay) const {
    queue_.addAfter(key, delay);
  }

 private:
  Enqueuer queue_;
};

}  // namespace egress::controllerruntime
