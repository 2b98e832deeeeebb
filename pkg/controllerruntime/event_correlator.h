// File: event_correlator.h
//
// client-go's EventCorrelator (tools/record/events_cache.go): decides, for each event a
// controller records, what to write to the API so that repeats do not flood it.
//  - Repeats of one event (same source, involved object, type, reason and message) become one
//    Event whose count grows: the first is created, later ones patch count and lastTimestamp.
//  - Similar events (same object, type and reason, different messages): once 10 distinct
//    messages arrive with less than 10 minutes between one and the next, further new messages
//    go into one Event "(combined from similar events): <latest message>", counted as above.
//  - Spam: each (source, object, type) has a token bucket of 25 events refilled at one per 5
//    minutes; an event finding it empty is skipped (but still counted in the Event's count, so
//    the next write carries the true number of occurrences).
// Every table is an LRU of 4096 entries. Pure logic over the clock passed in; the EventRecorder
// owns one and does the writing.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "pkg/apis/core/event.h"
#include "pkg/base/clock.h"
#include "pkg/controllerruntime/lru_cache.h"

namespace egress::controllerruntime {

// client-go's defaults (NewEventCorrelator).
struct EventCorrelatorOptions {
  size_t cacheSize = 4096;  // entries per table (maxLruCacheEntries)
  int spamBurst = 25;       // events per (source, object, type) before the refill rate applies
  double spamQps = 1.0 / 300;
  size_t aggregateMaxEvents = 10;  // distinct messages before similar events are combined
  // A similar event further apart than this from the previous one starts the count afresh.
  std::chrono::seconds aggregateInterval{600};
};

inline constexpr std::string_view kCombinedMessagePrefix = "(combined from similar events): ";

struct CorrelatedEvent {
  // What to write: count 1 means create it; count > 1 means patch the Event of that name
  // (count, lastTimestamp, message), or create it if it is gone.
  core::Event event;
  // Identifies the Event this write updates: writes with the same key carry absolute values, so
  // a later one supersedes an earlier one that was not sent yet.
  std::string key;
  // The spam filter refused it: write nothing.
  bool skip = false;
};

class EventCorrelator {
 public:
  EventCorrelator(const Clock& clock, EventCorrelatorOptions options);

  // `event` as the recorder made it: a fresh unique name, its namespace, count 1 and first and
  // last timestamps of now. Returns it with name, count and firstTimestamp of the Event it
  // repeats, or turned into a combined event, or skipped.
  CorrelatedEvent correlate(core::Event event);

 private:
  struct AggregateRecord {
    std::set<std::string> messages;
    Clock::TimePoint last{};
  };
  struct EventLog {
    int32_t count = 0;
    std::optional<meta::Time> firstTimestamp;
    std::string name;
  };
  // x/time/rate's Limiter as flowcontrol's passive token bucket uses it: TryAccept takes a token
  // if there is one and never waits.
  struct SpamBucket {
    double tokens = 0;
    Clock::TimePoint last{};
  };

  // EventAggregate: the event itself and its full key, or the combined event and its
  // aggregate key.
  std::pair<core::Event, std::string> aggregate(core::Event event);
  // eventObserve: the event as a repeat of what is cached under `key`, if anything.
  core::Event observe(core::Event event, const std::string& key);
  // EventSourceObjectSpamFilter.Filter: true if the event must be skipped.
  bool spamFiltered(const core::Event& event);

  const Clock& clock_;
  EventCorrelatorOptions options_;
  LruCache<AggregateRecord> aggregates_;
  LruCache<EventLog> logs_;
  LruCache<SpamBucket> spam_;
};

}  // namespace egress::controllerruntime
