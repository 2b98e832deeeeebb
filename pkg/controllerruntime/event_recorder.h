// File: event_recorder.h
//
// The operator's EventRecorder (controller-runtime's record.EventRecorder over client-go's
// event broadcaster and correlator): a reconcile reports what it did to an object as a core/v1
// Event, which `kubectl describe` and `kubectl get events` show.
//
//   EventRecorder recorder(ioc.get_executor(), client, clock, options, &registry);
//   recorder.event(ref, core::kEventTypeWarning, "PoolExhausted", "no free IPv4 address");
//   recorder.eventf(ref, core::kEventTypeNormal, "Allocated", "assigned {} to {}", ip, pod);
//   ...
//   co_await recorder.shutdown(clock.now() + std::chrono::seconds(5));   // on SIGTERM
//
// Recording never blocks and never fails: event() correlates the event at once (repeats,
// similar events, spam; see event_correlator.h) and queues the write; `writers` background
// coroutines write the queue, oldest first, never two writes of one Event (one correlator key)
// at once, so an Event's create lands before its repeats' patches. Three
// deliberate differences from client-go, which queues raw events and correlates them in one
// writer goroutine: spam is refused before it takes queue room; a repeat whose earlier write is
// still queued replaces that write (count and lastTimestamp are absolute), so a hot loop costs
// one queue slot and one request; and several writes may be in flight, because with one a slow
// or retried write holds every later Event back (make bench: 860 Events queued at convergence
// took 342 s to write one by one). Distinct Events of one object may land out of order, as a
// retried write does in client-go too; each carries its own timestamps. What
// cannot be written is dropped and counted in event_recorder_dropped_total{reason}:
//   queue_full         the queue (queueLength writes) was full
//   spam               the per-object spam filter refused it
//   invalid            the type was neither Normal nor Warning
//   rejected           the API server answered with an error, or the client could not send it
//                      (credentials): not retried, as in client-go
//   retries_exhausted  no answer after maxTries attempts (network errors)
//   shutdown           still queued when shutdown() reached its deadline, or recorded after it
//
// Events go to the involved object's namespace ("default" for cluster-scoped objects, as in
// client-go), named "<object name>.<hex wall-clock nanoseconds>" (unique per recorder).
// Single-threaded: call it from the io_context's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <fmt/format.h>

#include "pkg/apis/core/event.h"
#include "pkg/apis/core/object_reference.h"
#include "pkg/apis/meta/object_meta.h"
#include "pkg/base/clock.h"
#include "pkg/controllerruntime/event_correlator.h"

namespace prometheus {
class Registry;
}

namespace egress::kube {
class RestClient;
}

namespace egress::controllerruntime {

class EventWriter;

// The reference an Event names its object by (client-go's reference.GetReference), from the
// object's metadata and its apiVersion and kind ("networking.egressgateway.dev/v1alpha1",
// "EgressGatewayPolicy").
core::ObjectReference objectReference(const meta::ObjectMeta& metadata, std::string apiVersion,
                                      std::string kind);

// client-go's makeEvent: the Event one recording starts as, before correlation: count 1, first
// and last timestamps `now`, in the object's namespace (cluster-scoped objects: "default").
core::Event makeEvent(const core::ObjectReference& object, std::string_view type,
                      std::string_view reason, std::string message, meta::Time now,
                      std::string name, const std::string& component, const std::string& instance);

struct EventRecorderOptions {
  // source.component and reportingComponent (the reporting controller).
  std::string component = "egress-gateway-operator";
  // reportingInstance: which replica reports (the pod's name); "" leaves it out.
  std::string instance;
  // Writes waiting to be sent (client-go's maxQueuedEvents).
  size_t queueLength = 1000;
  // client-go's recordToSink: attempts per write, and the sleep between two; the first sleep
  // is a random fraction of it, so that recorders that failed together do not retry together.
  int maxTries = 12;
  Clock::Duration retryInterval = std::chrono::seconds(10);
  // Writes in flight at most (each retrying on its own); 1 is client-go's single writer.
  int writers = 4;
  EventCorrelatorOptions correlator;
  // Wall time for the timestamps and names written; empty = clock.wallNow().
  std::function<std::chrono::system_clock::time_point()> wallNow;
  // Uniform in [0, 1), for the retry jitter; empty = a seeded std::mt19937.
  std::function<double()> random;
};

class EventRecorder {
 public:
  // Starts the writer on `executor`. `client` and `clock` must outlive the recorder, and also
  // its writer's request in flight if the recorder is destroyed without shutdown(). `registry`
  // may be null (no metrics).
  EventRecorder(const net::any_io_executor& executor, kube::RestClient& client, Clock& clock,
                EventRecorderOptions options, prometheus::Registry* registry);
  // Drops (and counts) what is still queued and tells the writer to stop.
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Records that `reason` happened to `object`; type is core::kEventTypeNormal or
  // core::kEventTypeWarning. Returns at once.
  void event(const core::ObjectReference& object, std::string_view type, std::string_view reason,
             std::string message);

  // event() with the message formatted by fmt (compile-time checked).
  template <class... Args>
  void eventf(const core::ObjectReference& object, std::string_view type, std::string_view reason,
              fmt::format_string<Args...> format, Args&&... args) {
    event(object, type, reason, fmt::format(format, std::forward<Args>(args)...));
  }

  // Writes what is queued, and what is recorded meanwhile, until the queue is empty or
  // `deadline` (of the recorder's Clock) passes; what is left then is dropped. Returns once the
  // writer has ended: if a request is in flight at the deadline, when it completes (the
  // transport's request timeout bounds that). Later events are dropped. Call once.
  net::awaitable<void> shutdown(Clock::TimePoint deadline);

  // Writes queued or in flight.
  size_t pending() const;

 private:
  // "<object name>.<hex nanoseconds>", strictly increasing per recorder.
  std::string eventName(const std::string& objectName, std::chrono::system_clock::time_point t);

  std::string component_;
  std::string instance_;
  std::function<std::chrono::system_clock::time_point()> wallNow_;
  EventCorrelator correlator_;
  // The queue and the writer coroutine's state, shared with that coroutine so that it can end
  // safely after the recorder is gone.
  std::shared_ptr<EventWriter> writer_;
  int64_t lastNameNanos_ = 0;
  std::mt19937_64 uuidRandom_;
};

}  // namespace egress::controllerruntime
