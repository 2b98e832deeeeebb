// File: shared_informer.h
//
// client-go's SharedIndexInformer for one object type: a Reflector fills a DeltaFIFO, one loop
// pops it into the Indexer (the cache) and then notifies every registered handler. Each handler
// has its own unbounded buffer and its own coroutine, so a slow handler delays only itself; a
// handler added after start receives synthetic adds for everything already cached, and has
// synced once it has run them. Handlers may ask for their own resync period, within what the
// informer allows (client-go's rules: an informer whose default period is 0 never resyncs).
// The transform runs before anything is stored (keep only the fields the operator reads: the
// main memory lever).
//
// Objects that do not decode: the cache keeps them as undecodable entries (see indexer.h) and
// handlers hear of them through onUndecodable. Such an object leaves the typed view without an
// onDelete (it was not deleted); a later version that decodes comes back through onAdd; its
// deletion comes through onDelete with an object that carries only its metadata (namespace,
// name, resourceVersion) and finalStateUnknown set. informer_decode_failures_total{resource}
// counts the failing versions when a Prometheus registry is given.
//
// Lifetime: the informer's state (cache, FIFO, reflector, handlers) is owned jointly by the
// informer and its coroutines, so the informer may be destroyed while the io_context runs (its
// destructor stops it; no handler runs afterwards, and the coroutines finish on their own).
// stop() cancels the LIST or watch request in flight at once; stopped() is true once every
// coroutine has finished, the reflector's resync loop included. The clock, the metrics registry
// and whatever the ListerWatcher uses (the REST client) must outlive those coroutines.
//
//   SharedIndexInformer<core::Pod> pods(std::make_unique<RestListerWatcher>(client, kPods, ""),
//                                       core::decodePod, clock, {.name = "pods"}, executor);
//   auto reg = pods.addEventHandler({.onAdd = ..., .onUpdate = ..., .onDelete = ...});
//   pods.start(ioc.get_executor());
#pragma once

#include <deque>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <spdlog/spdlog.h>

#include "pkg/base/clock.h"
#include "pkg/base/notifier.h"
#include "pkg/cache/delta_fifo.h"
#include "pkg/cache/indexer.h"
#include "pkg/cache/informer_base.h"
#include "pkg/cache/informer_metrics.h"
#include "pkg/cache/reflector.h"
#include "pkg/cache/yield.h"

namespace egress::cache {

template <class T>
struct EventHandler {
  using Ptr = std::shared_ptr<const T>;
  std::function<void(const Ptr& obj, bool isInInitialList)> onAdd;
  std::function<void(const Ptr& oldObj, const Ptr& newObj)> onUpdate;
  // finalStateUnknown: the delete was inferred by a relist (obj is the last state known), or
  // the object was known only as undecodable (obj carries only its metadata).
  std::function<void(const Ptr& obj, bool finalStateUnknown)> onDelete;
  // The object's current version does not decode; the cache holds `entry` for it instead.
  std::function<void(const UndecodablePtr& entry)> onUndecodable;
};

inline constexpr std::chrono::milliseconds kMinimumResyncPeriod{1000};

// client-go's determineResyncPeriod: a handler's period as the informer can honour it.
std::chrono::milliseconds determineResyncPeriod(std::chrono::milliseconds desired,
                                                std::chrono::milliseconds check);

template <class T>
class SharedIndexInformer : public InformerBase {
  struct State;

 public:
  using Ptr = std::shared_ptr<const T>;
  using Decoder = typename DeltaFifo<T>::Decoder;
  using Transform = typename DeltaFifo<T>::Transform;

  struct Options {
    std::string name;
    std::chrono::milliseconds defaultResync{0};
    Transform transform = nullptr;
    ReflectorOptions reflector;
    // For informer_decode_failures_total; null = no metrics.
    prometheus::Registry* metrics = nullptr;
    std::string resource;  // the metric's label; "" = name
  };

  // One handler's registration: its buffer, its coroutine, its view of "synced".
  class Registration {
   public:
    // The informer has synced and this handler has run (not just been queued) its initial adds.
    bool hasSynced() const;
    size_t pending() const { return buffer_.size(); }

   private:
    friend class SharedIndexInformer;
    enum class Kind { Add, Update, Delete, Undecodable };
    struct Notification {
      Kind kind;
      Ptr oldObj;
      Ptr obj;
      UndecodablePtr undecodable;
      bool flag = false;  // isInInitialList (Add) or finalStateUnknown (Delete)
    };
    Registration(const std::shared_ptr<const State>& informer, EventHandler<T> handler,
                 std::chrono::milliseconds requestedResync, std::chrono::milliseconds resync,
                 const net::any_io_executor& ex)
        : informer_(informer),
          handler_(std::move(handler)),
          requestedResync_(requestedResync),
          resync_(resync),
          wake_(ex) {}

    std::weak_ptr<const State> informer_;
    EventHandler<T> handler_;
    std::chrono::milliseconds requestedResync_;
    std::chrono::milliseconds resync_;
    Clock::TimePoint nextResync_{};
    std::deque<Notification> buffer_;
    size_t initialPending_ = 0;
    Notifier wake_;
    bool running_ = false;
  };
  using RegistrationPtr = std::shared_ptr<Registration>;

  SharedIndexInformer(std::unique_ptr<ListerWatcher> lw, Decoder decoder, Clock& clock,
                      Options options, net::any_io_executor executor)
      : state_(std::make_shared<State>(std::move(lw), std::move(decoder), clock, std::move(options),
                                       std::move(executor))) {}
  ~SharedIndexInformer() override { stop(); }
  SharedIndexInformer(const SharedIndexInformer&) = delete;
  SharedIndexInformer& operator=(const SharedIndexInformer&) = delete;

  // Before or after start; an error once the informer is stopped. `resync` < 0 takes the
  // informer's default; a period in (0, 1s) is raised to 1s; before start, a period shorter
  // than the informer's check period lowers it, after start it is raised to it; an informer
  // whose check period is 0 never resyncs (client-go's rules).
  kube::Result<RegistrationPtr> addEventHandler(
      EventHandler<T> handler, std::chrono::milliseconds resync = std::chrono::milliseconds(-1)) {
    State& s = *state_;
    if (s.stopping) {
      spdlog::warn("informer {}: a handler was not added: the informer is stopped", s.options.name);
      return kube::Error::cancelled();
    }
    if (resync.count() < 0) {
      resync = s.options.defaultResync;
    }
    if (resync.count() > 0) {
      if (resync < kMinimumResyncPeriod) {
        resync = kMinimumResyncPeriod;
      }
      if (resync < s.resyncCheckPeriod) {
        if (s.started) {
          resync = s.resyncCheckPeriod;
        } else {
          s.resyncCheckPeriod = resync;
          for (auto& r : s.registrations) {
            r->resync_ = determineResyncPeriod(r->requestedResync_, resync);
          }
        }
      }
    }
    RegistrationPtr reg(new Registration(state_, std::move(handler), resync,
                                         determineResyncPeriod(resync, s.resyncCheckPeriod),
                                         s.executor));
    reg->nextResync_ = s.clock.now() + reg->resync_;
    s.registrations.push_back(reg);
    if (s.started) {
      using Kind = typename Registration::Kind;
      // Late handlers learn the current contents as adds from the initial list.
      s.indexer.forEach([&](const Ptr& obj) {
        reg->buffer_.push_back({Kind::Add, nullptr, obj, nullptr, true});
        ++reg->initialPending_;
      });
      for (const auto& [key, entry] : s.indexer.undecodable()) {
        reg->buffer_.push_back({Kind::Undecodable, nullptr, nullptr, entry, false});
      }
      startRegistration(state_, reg);
    }
    return reg;
  }

  // Extra indexes; false on a name clash.
  bool addIndexers(const std::map<std::string, IndexFunc<T>>& indexers) {
    return state_->indexer.addIndexers(indexers);
  }

  void start(net::any_io_executor executor) override {
    State& s = *state_;
    if (s.started || s.stopping) {
      return;  // Run twice is a no-op in client-go too
    }
    s.started = true;
    s.executor = std::move(executor);
    ReflectorOptions ro = s.options.reflector;
    if (ro.name.empty()) {
      ro.name = s.options.name;
    }
    ro.resyncPeriod = s.resyncCheckPeriod;
    State* raw = &s;  // the reflector runs only while a coroutine holds the state
    ro.shouldResync = [raw] { return raw->shouldResync(); };
    std::random_device rd;
    s.reflector = std::make_unique<Reflector>(
        *s.lw, s.fifo, s.clock, std::move(ro), [gen = std::mt19937_64(rd())]() mutable {
          return std::uniform_real_distribution<double>(0.0, 1.0)(gen);
        });
    for (auto& reg : s.registrations) {
      startRegistration(state_, reg);
    }
    ++s.running;
    net::co_spawn(s.executor, runReflector(state_), rethrowUnhandled);
    ++s.running;
    net::co_spawn(s.executor, processLoop(state_), rethrowUnhandled);
  }

  void stop() override {
    State& s = *state_;
    s.stopping = true;
    if (s.reflector) {
      s.reflector->stop();
    }
    s.ready.notify();
    for (auto& reg : s.registrations) {
      reg->wake_.notify();
    }
  }

  bool stopped() const override { return state_->running == 0; }
  bool hasSynced() const override { return state_->fifo.hasSynced(); }
  const std::string& name() const override { return state_->options.name; }
  const Indexer<T>& indexer() const { return state_->indexer; }
  const Reflector* reflector() const { return state_->reflector.get(); }
  // client-go's LastSyncResourceVersion(): the reflector's, "" before it started. Never behind
  // what the indexer reflects (the reflector advances it in the same turn as it queues a
  // change), and ahead of it by what the queue holds.
  std::string lastSyncResourceVersion() const {
    return state_->reflector ? state_->reflector->lastSyncResourceVersion() : std::string();
  }
  // The resourceVersion up to which the indexer reflects the server's stream: the reflector's
  // last one while nothing it queued waits to be processed, else the last one that held when
  // the queue ran empty; "" before the first list. What a reader of the indexer has seen, never
  // more (the reflector's own version runs ahead of the indexer by the queue). Not in client-go,
  // whose LastSyncResourceVersion() is the reflector's: egw-agent reports this one, so that the
  // operator knows which writes a sync of the agent reflected.
  std::string indexedResourceVersion() const {
    const State& s = *state_;
    if (s.fifo.size() == 0 && s.reflector) {
      return s.reflector->lastSyncResourceVersion();
    }
    return s.indexedRv;
  }
  std::chrono::milliseconds resyncCheckPeriod() const { return state_->resyncCheckPeriod; }
  // Object versions that did not decode (each counted once).
  size_t decodeFailures() const { return state_->fifo.decodeFailures(); }

 private:
  using Kind = typename Registration::Kind;
  using Notification = typename Registration::Notification;

  // Everything the coroutines touch; they and the informer own it together.
  struct State {
    State(std::unique_ptr<ListerWatcher> lwIn, Decoder decoder, Clock& clockIn, Options optionsIn,
          net::any_io_executor executorIn)
        : lw(std::move(lwIn)),
          clock(clockIn),
          options(std::move(optionsIn)),
          executor(std::move(executorIn)),
          ready(executor),
          fifo(std::move(decoder), options.transform, &indexer, [this] { ready.notify(); }),
          resyncCheckPeriod(options.defaultResync) {
      fifo.reportDecodeFailures(
          options.name,
          decodeFailuresCounter(options.metrics,
                                options.resource.empty() ? options.name : options.resource));
    }

    void distribute(Notification n, bool sync) {
      for (auto& reg : registrations) {
        // A resync update goes only to handlers due for one.
        if (sync && syncing.count(reg.get()) == 0) {
          continue;
        }
        if (n.kind == Kind::Add && n.flag) {
          ++reg->initialPending_;
        }
        reg->buffer_.push_back(n);
        reg->wake_.notify();
      }
    }

    // Marks the handlers whose resync period has come round; true if any.
    bool shouldResync() {
      syncing.clear();
      const auto now = clock.now();
      for (auto& reg : registrations) {
        if (reg->resync_.count() > 0 && now >= reg->nextResync_) {
          syncing.insert(reg.get());
          reg->nextResync_ = now + reg->resync_;
        }
      }
      return !syncing.empty();
    }

    // An object to report the deletion of something known only by its key.
    static Ptr metadataOnly(const std::string& key, const std::string& resourceVersion) {
      auto stub = std::make_shared<T>();
      if (auto parts = splitKey(key)) {
        stub->metadata.namespace_ = parts->first;
        stub->metadata.name = parts->second;
      }
      stub->metadata.resourceVersion = resourceVersion;
      return stub;
    }

    // client-go's processDeltas: the cache is updated before any handler hears of it.
    void processDeltas(const typename DeltaFifo<T>::Popped& popped) {
      const std::string& key = popped.key;
      for (const auto& d : popped.deltas) {
        if (d.type == DeltaType::Deleted) {
          Ptr last = d.object ? d.object : indexer.get(key);
          bool finalStateUnknown = d.finalStateUnknown;
          if (last == nullptr) {
            UndecodablePtr entry = d.undecodable ? d.undecodable : indexer.undecodable(key);
            last = metadataOnly(key, entry ? entry->resourceVersion : "");
            finalStateUnknown = true;
          }
          indexer.remove(key);
          distribute({Kind::Delete, nullptr, std::move(last), nullptr, finalStateUnknown}, false);
          continue;
        }
        if (d.undecodable) {
          const UndecodablePtr known = indexer.undecodable(key);
          const bool same =
              known != nullptr && known->resourceVersion == d.undecodable->resourceVersion;
          indexer.putUndecodable(key, d.undecodable);
          if (!same) {
            distribute({Kind::Undecodable, nullptr, nullptr, d.undecodable, false}, false);
          }
          continue;
        }
        if (Ptr old = indexer.get(key)) {
          indexer.put(d.object);
          const bool sync = (d.type == DeltaType::Sync || d.type == DeltaType::Replaced) &&
                            old->metadata.resourceVersion == d.object->metadata.resourceVersion;
          distribute({Kind::Update, std::move(old), d.object, nullptr, false}, sync);
        } else {
          indexer.put(d.object);
          distribute({Kind::Add, nullptr, d.object, nullptr, popped.isInInitialList}, false);
        }
      }
    }

    std::unique_ptr<ListerWatcher> lw;
    Clock& clock;
    Options options;
    net::any_io_executor executor;
    Notifier ready;
    Indexer<T> indexer;
    DeltaFifo<T> fifo;
    std::unique_ptr<Reflector> reflector;
    std::vector<RegistrationPtr> registrations;
    std::set<const Registration*> syncing;
    std::chrono::milliseconds resyncCheckPeriod;
    std::string indexedRv;  // indexedResourceVersion() while the queue is not empty
    bool started = false;
    bool stopping = false;
    int running = 0;
  };

  // The coroutines are static and take the state explicitly: spawned member coroutines lost
  // `this` under g++ 12, and holding the state keeps it alive for as long as they run.
  static net::awaitable<void> runReflector(std::shared_ptr<State> s) {
    co_await s->reflector->run();
    --s->running;
  }

  static net::awaitable<void> processLoop(std::shared_ptr<State> s) {
    while (!s->stopping) {
      size_t processed = 0;
      while (!s->stopping) {
        auto popped = s->fifo.pop();
        if (!popped) {
          break;
        }
        s->processDeltas(*popped);
        s->fifo.done(*popped);
        if (s->fifo.size() == 0) {
          s->indexedRv = s->reflector->lastSyncResourceVersion();
        }
        if (shouldYield(++processed)) {
          co_await yieldNow();
        }
      }
      if (!s->stopping) {
        co_await s->ready.wait();
      }
    }
    --s->running;
  }

  static void startRegistration(const std::shared_ptr<State>& s, const RegistrationPtr& reg) {
    if (reg->running_) {
      return;
    }
    reg->running_ = true;
    ++s->running;
    net::co_spawn(s->executor, runRegistration(s, reg), rethrowUnhandled);
  }

  static net::awaitable<void> runRegistration(std::shared_ptr<State> s, RegistrationPtr reg) {
    // Handlers are user code: let the other handlers and the reflector run between them.
    constexpr size_t kDeliveriesPerTurn = 64;
    while (!s->stopping) {
      size_t delivered = 0;
      while (!reg->buffer_.empty() && !s->stopping) {
        auto n = std::move(reg->buffer_.front());
        reg->buffer_.pop_front();
        deliver(*reg, n);
        if (shouldYield(++delivered, kDeliveriesPerTurn)) {
          co_await yieldNow();
        }
      }
      if (!s->stopping) {
        co_await reg->wake_.wait();
      }
    }
    --s->running;
  }

  static void deliver(Registration& reg, const Notification& n) {
    const auto& h = reg.handler_;
    switch (n.kind) {
      case Kind::Add:
        if (h.onAdd) {
          h.onAdd(n.obj, n.flag);
        }
        // Counted down after the handler ran: synced means "handled", not "queued".
        if (n.flag && reg.initialPending_ > 0) {
          --reg.initialPending_;
        }
        break;
      case Kind::Update:
        if (h.onUpdate) {
          h.onUpdate(n.oldObj, n.obj);
        }
        break;
      case Kind::Delete:
        if (h.onDelete) {
          h.onDelete(n.obj, n.flag);
        }
        break;
      case Kind::Undecodable:
        if (h.onUndecodable) {
          h.onUndecodable(n.undecodable);
        }
        break;
    }
  }

  std::shared_ptr<State> state_;
};

template <class T>
bool SharedIndexInformer<T>::Registration::hasSynced() const {
  auto informer = informer_.lock();
  return informer != nullptr && informer->fifo.hasSynced() && initialPending_ == 0;
}

}  // namespace egress::cache
