// File: subcontroller.h
//
// The base of the operator's subcontrollers (egressgateway, ipampool, operator, agentlease): a
// controllerruntime::Controller that reconciles against the Context the main controller owns and
// shares with all of them. Each subcontroller says in its own header what it watches, and
// overrides addEventHandlers() and reconcile() privately: only the Controller base calls them.
#pragma once

#include <utility>

#include "pkg/controller/context.h"
#include "pkg/controllerruntime/controller.h"

namespace egress::controller {

class Subcontroller : public controllerruntime::Controller {
 public:
  Subcontroller(Options options, Context& ctx) : Controller(std::move(options)), ctx_(ctx) {}

 protected:
  Context& ctx_;
};

}  // namespace egress::controller
