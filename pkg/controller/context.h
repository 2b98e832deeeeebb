// File: context.h
//
// What the subcontrollers and their processors share, owned by the main controller
// (controller.h): the REST client, the watch cache, the allocator (the in-memory book of every
// egress IP, rebuilt from the policies' ledgers before any worker runs), the event recorder,
// the clock, the domain metrics, what the egw-agents' Leases say (agentlease/agents.h), and the
// cross-triggers between the subcontrollers.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "pkg/base/clock.h"
#include "pkg/controller/agentlease/agents.h"
#include "pkg/controller/cache/cache.h"
#include "pkg/controller/metrics.h"
#include "pkg/controllerruntime/enqueuer.h"
#include "pkg/controllerruntime/event_recorder.h"
#include "pkg/ipam/allocator.h"
#include "pkg/kube/rest_client.h"

namespace egress::controller {

struct Context {
  kube::RestClient& client;
  Cache& cache;
  ipam::Allocator& allocator;
  controllerruntime::EventRecorder& recorder;
  Clock& clock;
  Metrics& metrics;
  Agents& agents;
  // The subcontrollers' queues (set once they exist): a policy's allocation changed a pool's
  // counts, a release may let waiting policies complete, and the OperatorConfig's summary
  // counts policies and pools.
  controllerruntime::Enqueuer policies;
  controllerruntime::Enqueuer pools;
  controllerruntime::Enqueuer operatorConfig;
  // Per policy, the resourceVersion this process's last status write returned: the watch event
  // that brings exactly that version back (its echo) tells the reconcile nothing it did not
  // write, and queues nothing.
  std::map<std::string, std::string> policyStatusWrites;
};

// A policy's or a pool's status changed: the OperatorConfig's summary is recounted soon, once
// for a burst of changes.
void summaryChanged(Context& ctx);

// The involvedObject of an Event about one of our kinds.
core::ObjectReference referenceTo(std::string_view kind, const meta::ObjectMeta& meta);

}  // namespace egress::controller
