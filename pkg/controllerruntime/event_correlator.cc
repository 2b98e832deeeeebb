#include "pkg/controllerruntime/event_correlator.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <utility>

namespace egress::controllerruntime {
namespace {

// client-go joins the fields with nothing in between, so ("ab","c") and ("a","bc") collide; a
// separator that names and messages do not contain keeps the keys apart.
std::string joinKey(std::initializer_list<std::string_view> fields) {
  std::string key;
  for (std::string_view f : fields) {
    key.append(f);
    key.push_back('\0');
  }
  return key;
}

// getEventKey. client-go also has source.host and involvedObject.fieldPath, which the recorder
// never sets.
std::string eventKey(const core::Event& e) {
  const auto& o = e.involvedObject;
  return joinKey({e.sourceComponent, o.kind, o.namespace_, o.name, o.uid, o.apiVersion, e.type,
                  e.reason, e.message});
}

// getSpamKey: the source, the object and the type.
std::string spamKey(const core::Event& e) {
  const auto& o = e.involvedObject;
  return joinKey({e.sourceComponent, o.kind, o.namespace_, o.name, o.uid, o.apiVersion, e.type});
}

// EventAggregatorByReasonFunc's aggregate key: everything but the message.
std::string aggregateKey(const core::Event& e) {
  const auto& o = e.involvedObject;
  return joinKey({e.sourceComponent, o.kind, o.namespace_, o.name, o.uid, o.apiVersion, e.type,
                  e.reason, e.reportingComponent, e.reportingInstance});
}

}  // namespace

EventCorrelator::EventCorrelator(const Clock& clock, EventCorrelatorOptions options)
    : clock_(clock),
      options_(options),
      aggregates_(options.cacheSize),
      logs_(options.cacheSize),
      spam_(options.cacheSize) {}

CorrelatedEvent EventCorrelator::correlate(core::Event event) {
  auto [aggregated, key] = aggregate(std::move(event));
  CorrelatedEvent out;
  out.event = observe(std::move(aggregated), key);
  out.key = std::move(key);
  out.skip = spamFiltered(out.event);
  return out;
}

std::pair<core::Event, std::string> EventCorrelator::aggregate(core::Event event) {
  const auto now = clock_.now();
  const std::string groupKey = aggregateKey(event);
  AggregateRecord* record = aggregates_.get(groupKey);
  // A record of similar events older than the interval starts afresh (client-go compares with
  // the zero time when there is none, which is always too old).
  if (record == nullptr || now - record->last > options_.aggregateInterval) {
    aggregates_.add(groupKey, AggregateRecord{});
    record = aggregates_.get(groupKey);
  }
  const auto inserted = record->messages.insert(event.message);
  record->last = now;
  if (record->messages.size() < options_.aggregateMaxEvents) {
    std::string key = eventKey(event);
    return {std::move(event), std::move(key)};
  }
  // client-go pops an arbitrary message to keep the set below the threshold; we pop the one
  // just added, so the messages seen before the threshold keep their own Events and every later
  // one is combined, whatever Go's map order would have picked.
  record->messages.erase(inserted.first);

  // The combined event: a fresh Event (the caller's name and timestamps are fresh ones) with
  // the message prefixed. client-go's copy leaves out reportingController/Instance; we keep
  // them, as the Event is as much theirs as the ones it combines.
  event.message = std::string(kCombinedMessagePrefix) + event.message;
  event.count = 1;
  return {std::move(event), groupKey};
}

core::Event EventCorrelator::observe(core::Event event, const std::string& key) {
  if (const EventLog* last = logs_.get(key); last != nullptr && last->count > 0) {
    event.metadata.name = last->name;
    event.firstTimestamp = last->firstTimestamp;
    event.count = last->count + 1;
  }
  logs_.add(key, EventLog{event.count, event.firstTimestamp, event.metadata.name});
  return event;
}

bool EventCorrelator::spamFiltered(const core::Event& event) {
  const auto now = clock_.now();
  const std::string key = spamKey(event);
  SpamBucket* bucket = spam_.get(key);
  if (bucket == nullptr) {
    spam_.add(key, SpamBucket{static_cast<double>(options_.spamBurst), now});
    bucket = spam_.get(key);
  }
  // x/time/rate's advance(): refill for the time since the last use, up to the burst.
  const double elapsed = std::chrono::duration<double>(now - bucket->last).count();
  const double tokens = std::min(static_cast<double>(options_.spamBurst),
                                 bucket->tokens + elapsed * options_.spamQps);
  if (tokens < 1) {
    return true;  // refused: nothing changes, as when AllowN is not ok
  }
  bucket->tokens = tokens - 1;
  bucket->last = now;
  return false;
}

}  // namespace egress::controllerruntime
