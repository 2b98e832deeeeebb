// File: context.h
//
// What the subcontrollers and their processors share, owned by the main controller
// (controller.h): the REST client, the watch cache, the allocator (the in-memory book of every
// egress IP, rebuilt from the policies' ledgers before any worker runs), the event recorder,
// the clock, the domain metrics, what the egw-agents' Leases say (agentlease/agents.h), and the
// triggers through which the subcontrollers queue each other's keys. Complete once constructed:
// each trigger is connected by the subcontroller that reconciles its keys, in its own
// addEventHandlers().
#pragma once

#include <functional>
#include <map>
#include <string>

#include "pkg/base/clock.h"
#include "pkg/controller/agentlease/agents.h"
#include "pkg/controller/cache/cache.h"
#include "pkg/controller/metrics.h"
#include "pkg/controllerruntime/event_recorder.h"
#include "pkg/controllerruntime/trigger.h"
#include "pkg/ipam/allocator.h"
#include "pkg/kube/rest_client.h"

namespace egress::controller {

struct Context {
  Context(kube::RestClient& client, Cache& cache, ipam::Allocator& allocator,
          controllerruntime::EventRecorder& recorder, Clock& clock, Metrics& metrics,
          Agents& agents)
      : client(client),
        cache(cache),
        allocator(allocator),
        recorder(recorder),
        clock(clock),
        metrics(metrics),
        agents(agents) {}
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  kube::RestClient& client;
  Cache& cache;
  ipam::Allocator& allocator;
  controllerruntime::EventRecorder& recorder;
  Clock& clock;
  Metrics& metrics;
  Agents& agents;
  // Keys one subcontroller finds for another: a release may let waiting policies complete, an
  // agent's report changed what a policy's holders may do (to the egressgateway controller); a
  // policy's allocation changed a pool's counts (to the ipampool controller).
  controllerruntime::Trigger policies;
  controllerruntime::Trigger pools;
  // Per policy, the resourceVersion this process's last status write returned: the watch event
  // that brings exactly that version back (its echo) tells the reconcile nothing it did not
  // write, and queues nothing.
  std::map<std::string, std::string> policyStatusWrites;
};

// The involvedObject of an Event about one of our kinds.
core::ObjectReference referenceTo(std::string_view kind, const meta::ObjectMeta& meta);

}  // namespace egress::controller
