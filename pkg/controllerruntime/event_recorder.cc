#include "pkg/controllerruntime/event_recorder.h"

#include <algorithm>
#include <array>
#include <list>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include "pkg/apis/meta/encode.h"
#include "pkg/base/notifier.h"
#include "pkg/kube/rest_client.h"

namespace egress::controllerruntime {
namespace {

const kube::Resource kEvents{"", "v1", "events", true};

// metav1.NamespaceDefault: where client-go puts the events of cluster-scoped objects.
constexpr std::string_view kDefaultNamespace = "default";

// The reasons of event_recorder_dropped_total, all exported from the start so that a rate()
// over them works before the first drop.
enum class DropReason { QueueFull, Spam, Invalid, Rejected, RetriesExhausted, Shutdown };
constexpr std::array<std::string_view, 6> kDropReasonNames = {
    "queue_full", "spam", "invalid", "rejected", "retries_exhausted", "shutdown"};

// apimachinery's NameIsDNSSubdomain: at most 253 characters of lower-case alphanumerics, '-'
// and '.', starting and ending with an alphanumeric.
bool isDnsSubdomain(std::string_view name) {
  if (name.empty() || name.size() > 253) {
    return false;
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (char c : name) {
    if (!alnum(c) && c != '-' && c != '.') {
      return false;
    }
  }
  return alnum(name.front()) && alnum(name.back());
}

// What patching an existing Event changes: client-go's two-way strategic merge patch between
// the event with count, lastTimestamp and message blanked and the event, which yields these
// three fields.
std::string repeatPatch(const core::Event& e) {
  rapidjson::StringBuffer buf;
  meta::JsonWriter w(buf);
  w.StartObject();
  meta::writeField(w, "count", e.count);
  if (e.lastTimestamp) {
    meta::writeTimeField(w, "lastTimestamp", *e.lastTimestamp);
  }
  meta::writeField(w, "message", e.message);
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

enum class Outcome { Written, AlreadyExists, Rejected, Failed };

// client-go's recordEvent: success; an answer from the server, which would refuse the same
// write again (not retried); or no answer (retried).
Outcome outcomeOf(const kube::Result<rapidjson::Document>& result, const core::Event& event) {
  if (result) {
    return Outcome::Written;
  }
  const kube::Error& e = result.error();
  if (e.kind() == kube::Error::Kind::Transport || e.kind() == kube::Error::Kind::Decode) {
    spdlog::debug("event recorder: writing event {}/{} failed (will retry): {}",
                  event.metadata.namespace_, event.metadata.name, e.message());
    return Outcome::Failed;
  }
  if (e.isAlreadyExists()) {
    return Outcome::AlreadyExists;
  }
  spdlog::warn("event recorder: event {}/{} not written (will not retry): {}",
               event.metadata.namespace_, event.metadata.name, e.message());
  return Outcome::Rejected;
}

}  // namespace

// The queue and the writer coroutines. It lives as long as the longest of the recorder and the
// coroutines, so they can end safely after the recorder is destroyed.
class EventWriter {
 public:
  struct Write {
    core::Event event;
    std::string key;
    // First occurrences are created, repeats patch (client-go: count > 1). Fixed when queued:
    // a create that repeats catch up with before it is sent is still a create.
    bool create = true;
  };

  EventWriter(const net::any_io_executor& executor, kube::RestClient& client, Clock& clock,
              const EventRecorderOptions& options, prometheus::Registry* registry)
      : client_(&client),
        clock_(clock),
        queueLength_(options.queueLength),
        maxTries_(options.maxTries),
        retryInterval_(options.retryInterval),
        random_(options.random),
        wake_(executor),
        doneTimer_(clock.makeTimer()) {
    for (int i = 0; i < std::max(1, options.writers); ++i) {
      retryTimers_.push_back(clock.makeTimer());
    }
    running_ = retryTimers_.size();  // before any writer runs: done_ only once all have ended
    if (!random_) {
      random_ = [rng = std::mt19937(std::random_device{}())]() mutable {
        return std::uniform_real_distribution<double>(0, 1)(rng);
      };
    }
    if (registry != nullptr) {
      auto& family = prometheus::BuildCounter()
                         .Name("event_recorder_dropped_total")
                         .Help(
                             "Events the recorder did not write, by reason: queue_full, spam, "
                             "invalid, rejected, retries_exhausted, shutdown.")
                         .Register(*registry);
      for (size_t i = 0; i < kDropReasonNames.size(); ++i) {
        dropped_[i] = &family.Add({{"reason", std::string(kDropReasonNames[i])}});
      }
    }
  }

  size_t writers() const { return retryTimers_.size(); }
  // Writer `index` of writers(): takes the oldest queued write whose key has none in flight.
  static net::awaitable<void> run(std::shared_ptr<EventWriter> self, size_t index);

  // Queues the write, or drops (and counts) it.
  void enqueue(core::Event event, std::string key) {
    if (closed()) {
      drop(DropReason::Shutdown, 1);
      return;
    }
    // A repeat supersedes its queued predecessor: count, lastTimestamp and message are absolute,
    // and a create stays a create (one with a count > 1 is what a 404 on the patch leads to).
    if (auto it = queuedByKey_.find(key); it != queuedByKey_.end()) {
      it->second->event = std::move(event);
      return;
    }
    if (queue_.size() >= queueLength_) {
      if (!queueFullLogged_) {
        spdlog::warn(
            "event recorder: queue full ({} writes), dropping events (counted in "
            "event_recorder_dropped_total{{reason=\"queue_full\"}})",
            queueLength_);
        queueFullLogged_ = true;
      }
      drop(DropReason::QueueFull, 1);
      return;
    }
    const bool create = event.count <= 1;
    queue_.push_back(Write{std::move(event), key, create});
    queuedByKey_.emplace(std::move(key), std::prev(queue_.end()));
    wake_.notify();
  }

  void drop(DropReason reason, size_t n) {
    if (auto* counter = dropped_[static_cast<size_t>(reason)]; counter != nullptr) {
      counter->Increment(static_cast<double>(n));
    }
  }

  size_t pending() const { return queue_.size() + inflight_.size(); }
  bool closed() const { return closing_ && (abandoned_ || done_); }

  // No more waiting for the queue to empty: the writer stops once the write in flight (if any)
  // returns, and what is queued is dropped.
  void abandon() {
    closing_ = true;
    abandoned_ = true;
    drop(DropReason::Shutdown, queue_.size());
    queue_.clear();
    queuedByKey_.clear();
    for (auto& t : retryTimers_) {
      t->cancel();
    }
    wake_.notify();
  }

  // Called by the recorder's destructor: after this the writer touches nothing outside itself
  // (the registry may go away with the recorder's owner).
  void detach() {
    abandon();
    dropped_.fill(nullptr);
  }

  net::awaitable<void> shutdown(Clock::TimePoint deadline) {
    closing_ = true;
    wake_.notify();
    while (!done_ && !abandoned_ && clock_.now() < deadline) {
      co_await doneTimer_->waitUntil(deadline);
    }
    if (!done_) {
      if (!abandoned_) {
        spdlog::warn("event recorder: shutdown deadline reached, dropping {} events", pending());
      }
      abandon();
    }
    while (!done_) {
      co_await doneTimer_->waitUntil(Clock::TimePoint::max());
    }
  }

 private:
  net::awaitable<void> writeWithRetries(Write write, Timer& retryTimer);
  // The oldest queued write whose key has no write in flight, or end().
  std::list<Write>::iterator nextWritable() {
    return std::find_if(queue_.begin(), queue_.end(),
                        [this](const Write& w) { return !inflight_.contains(w.key); });
  }
  net::awaitable<Outcome> writeOnce(const core::Event& event, bool create);

  kube::RestClient* client_;
  Clock& clock_;
  size_t queueLength_;
  int maxTries_;
  Clock::Duration retryInterval_;
  std::function<double()> random_;

  std::list<Write> queue_;
  std::unordered_map<std::string, std::list<Write>::iterator> queuedByKey_;
  // The keys of the writes in flight: a repeat is not sent while its predecessor is (its patch
  // would find no Event yet, and its create would collide).
  std::unordered_set<std::string> inflight_;
  size_t running_ = 0;  // writer coroutines not yet ended (all are spawned at construction)
  bool queueFullLogged_ = false;

  // closing_: shutdown() began; the writer ends when the queue is empty. abandoned_: it ends
  // now. done_: it has ended.
  bool closing_ = false;
  bool abandoned_ = false;
  bool done_ = false;
  Notifier wake_;  // the queue got a write, a key's write ended, or the writers should stop
  std::vector<std::unique_ptr<Timer>> retryTimers_;  // each writer's sleep between attempts
  std::unique_ptr<Timer> doneTimer_;  // shutdown()'s wait; the last writer cancels it when done
  std::array<prometheus::Counter*, kDropReasonNames.size()> dropped_{};
};

// A static function taking its state explicitly: a member coroutine spawned from another
// coroutine can lose `this` under g++ 12 (README).
net::awaitable<void> EventWriter::run(std::shared_ptr<EventWriter> self, size_t index) {
  for (;;) {
    auto next = self->queue_.end();
    while (!self->abandoned_ && (next = self->nextWritable()) == self->queue_.end() &&
           !(self->closing_ && self->queue_.empty())) {
      co_await self->wake_.wait();
    }
    if (self->abandoned_ || next == self->queue_.end()) {
      break;
    }
    Write write = std::move(*next);
    self->queuedByKey_.erase(write.key);
    self->queue_.erase(next);
    if (self->queue_.empty()) {
      self->queueFullLogged_ = false;
    }
    const std::string key = write.key;
    self->inflight_.insert(key);
    co_await self->writeWithRetries(std::move(write), *self->retryTimers_[index]);
    self->inflight_.erase(key);
    self->wake_.notify();
  }
  if (--self->running_ == 0) {
    self->done_ = true;
    self->doneTimer_->cancel();
  }
}

// client-go's recordToSink: up to maxTries attempts, sleeping retryInterval between two (the
// first sleep a random fraction of it).
net::awaitable<void> EventWriter::writeWithRetries(Write write, Timer& retryTimer) {
  for (int tries = 1;; ++tries) {
    const Outcome outcome = co_await writeOnce(write.event, write.create);
    // A create that already exists on a later try is our own earlier try, which reached the
    // server although its answer did not reach us. On the first try it is another Event of
    // the same name: not written (client-go does not retry it either).
    if (outcome == Outcome::Written || (outcome == Outcome::AlreadyExists && tries > 1)) {
      co_return;
    }
    if (outcome == Outcome::AlreadyExists) {
      spdlog::warn("event recorder: event {}/{} already exists (will not retry)",
                   write.event.metadata.namespace_, write.event.metadata.name);
    }
    if (outcome == Outcome::Rejected || outcome == Outcome::AlreadyExists) {
      drop(DropReason::Rejected, 1);
      co_return;
    }
    if (abandoned_) {
      drop(DropReason::Shutdown, 1);
      co_return;
    }
    if (tries >= maxTries_) {
      spdlog::error("event recorder: unable to write event {}/{} (retry limit exceeded)",
                    write.event.metadata.namespace_, write.event.metadata.name);
      drop(DropReason::RetriesExhausted, 1);
      co_return;
    }
    auto delay = retryInterval_;
    if (tries == 1) {
      delay = std::chrono::duration_cast<Clock::Duration>(delay * random_());
    }
    const auto until = clock_.now() + delay;
    while (!abandoned_ && clock_.now() < until) {
      co_await retryTimer.waitUntil(until);
    }
    if (abandoned_) {
      drop(DropReason::Shutdown, 1);
      co_return;
    }
  }
}

// client-go's recordEvent: a repeat patches the Event it repeats, and creates it if the patch
// finds none (expired, or never written); a first occurrence is created.
net::awaitable<Outcome> EventWriter::writeOnce(const core::Event& event, bool create) {
  const std::string& ns = event.metadata.namespace_;
  if (!create) {
    // Arguments as named locals: g++ 12 mishandles temporaries in a co_await operand.
    std::string body = repeatPatch(event);
    kube::WriteOptions options;
    std::string noSubresource;
    auto patched =
        co_await client_->patch(kEvents, ns, event.metadata.name, kube::PatchType::StrategicMerge,
                                std::move(body), options, std::move(noSubresource));
    if (patched || !patched.error().isNotFound()) {
      co_return outcomeOf(patched, event);
    }
  }
  core::Event fresh = event;
  fresh.metadata.resourceVersion.clear();
  std::string body = meta::encodeToString(fresh, core::encodeEvent);
  kube::WriteOptions options;
  auto created = co_await client_->create(kEvents, ns, std::move(body), options);
  co_return outcomeOf(created, event);
}

core::ObjectReference objectReference(const meta::ObjectMeta& metadata, std::string apiVersion,
                                      std::string kind) {
  core::ObjectReference ref;
  ref.kind = std::move(kind);
  ref.namespace_ = metadata.namespace_;
  ref.name = metadata.name;
  ref.uid = metadata.uid;
  ref.apiVersion = std::move(apiVersion);
  ref.resourceVersion = metadata.resourceVersion;
  return ref;
}

core::Event makeEvent(const core::ObjectReference& object, std::string_view type,
                      std::string_view reason, std::string message, meta::Time now,
                      std::string name, const std::string& component, const std::string& instance) {
  core::Event e;
  e.metadata.name = std::move(name);
  e.metadata.namespace_ =
      object.namespace_.empty() ? std::string(kDefaultNamespace) : object.namespace_;
  e.involvedObject = object;
  e.type = std::string(type);
  e.reason = std::string(reason);
  e.message = std::move(message);
  e.count = 1;
  e.firstTimestamp = now;
  e.lastTimestamp = now;
  e.sourceComponent = component;
  e.reportingComponent = component;
  e.reportingInstance = instance;
  return e;
}

EventRecorder::EventRecorder(const net::any_io_executor& executor, kube::RestClient& client,
                             Clock& clock, EventRecorderOptions options,
                             prometheus::Registry* registry)
    : component_(std::move(options.component)),
      instance_(std::move(options.instance)),
      wallNow_(std::move(options.wallNow)),
      correlator_(clock, options.correlator),
      writer_(std::make_shared<EventWriter>(executor, client, clock, options, registry)),
      uuidRandom_(std::random_device{}()) {
  if (!wallNow_) {
    wallNow_ = [&clock] { return clock.wallNow(); };
  }
  for (size_t i = 0; i < writer_->writers(); ++i) {
    net::co_spawn(executor, EventWriter::run(writer_, i), rethrowUnhandled);
  }
}

EventRecorder::~EventRecorder() {
  writer_->detach();
}

void EventRecorder::event(const core::ObjectReference& object, std::string_view type,
                          std::string_view reason, std::string message) {
  if (type != core::kEventTypeNormal && type != core::kEventTypeWarning) {
    spdlog::error("event recorder: unsupported event type '{}' (reason {}, object {}/{})", type,
                  reason, object.namespace_, object.name);
    writer_->drop(DropReason::Invalid, 1);
    return;
  }
  const auto now = wallNow_();
  CorrelatedEvent correlated =
      correlator_.correlate(makeEvent(object, type, reason, std::move(message), now,
                                      eventName(object.name, now), component_, instance_));
  if (correlated.skip) {
    writer_->drop(DropReason::Spam, 1);
    return;
  }
  writer_->enqueue(std::move(correlated.event), std::move(correlated.key));
}

net::awaitable<void> EventRecorder::shutdown(Clock::TimePoint deadline) {
  // Through a local: the writer must stay alive while this coroutine waits on it.
  std::shared_ptr<EventWriter> writer = writer_;
  co_await writer->shutdown(deadline);
}

size_t EventRecorder::pending() const {
  return writer_->pending();
}

std::string EventRecorder::eventName(const std::string& objectName,
                                     std::chrono::system_clock::time_point t) {
  // client-go's suffix is the wall clock in nanoseconds; two events in the same nanosecond (a
  // coarse or fake clock) would collide, so the suffix never repeats within a recorder.
  int64_t nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  if (nanos <= lastNameNanos_) {
    nanos = lastNameNanos_ + 1;
  }
  lastNameNanos_ = nanos;
  std::string name = fmt::format("{}.{:x}", objectName, nanos);
  if (isDnsSubdomain(name)) {
    return name;
  }
  // As client-go (kubernetes#127594): an object name that is no valid Event name gets a random
  // UUID instead.
  std::uniform_int_distribution<uint64_t> dist;
  const uint64_t hi = (dist(uuidRandom_) & ~uint64_t{0xf000}) | 0x4000;  // version 4
  const uint64_t lo = (dist(uuidRandom_) & ~(uint64_t{3} << 62)) | (uint64_t{2} << 62);
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff,
                     hi & 0xffff, lo >> 48, lo & 0xffffffffffff);
}

}  // namespace egress::controllerruntime
