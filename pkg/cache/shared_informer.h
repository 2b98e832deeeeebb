// File: shared_informer.h
//
// client-go's SharedIndexInformer for one object type: a Reflector fills a DeltaFIFO, one loop
// pops it into the Indexer (the cache) and then notifies every registered handler. Each handler
// has its own unbounded buffer and its own coroutine, so a slow handler delays only itself; a
// handler added after start receives synthetic adds for everything already cached; handlers may
// ask for their own resync period. The transform runs before anything is stored (keep only
// the fields the operator reads: the main memory lever).
//
//   SharedIndexInformer<core::Pod> pods(std::make_unique<RestListerWatcher>(client, kPods, ""),
//                                       core::decodePod, clock, {.name = "pods"});
//   pods.addEventHandler({.onAdd = ..., .onUpdate = ..., .onDelete = ...});
//   pods.start(ioc.get_executor());
#pragma once

#include <deque>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "pkg/base/clock.h"
#include "pkg/base/notifier.h"
#include "pkg/cache/delta_fifo.h"
#include "pkg/cache/indexer.h"
#include "pkg/cache/reflector.h"

namespace egress::cache {

template <class T>
struct EventHandler {
  using Ptr = std::shared_ptr<const T>;
  std::function<void(const Ptr& obj, bool isInInitialList)> onAdd;
  std::function<void(const Ptr& oldObj, const Ptr& newObj)> onUpdate;
  // finalStateUnknown: the delete was inferred by a relist; obj is the last state known.
  std::function<void(const Ptr& obj, bool finalStateUnknown)> onDelete;
};

// What every informer offers its factory, whatever its object type.
class InformerBase {
 public:
  virtual ~InformerBase() = default;
  virtual void start(net::any_io_executor executor) = 0;
  virtual void stop() = 0;
  virtual bool hasSynced() const = 0;
  // True once every coroutine the informer started has finished (after stop()).
  virtual bool stopped() const = 0;
};

inline constexpr std::chrono::milliseconds kMinimumResyncPeriod{1000};

template <class T>
class SharedIndexInformer : public InformerBase {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Decoder = typename DeltaFifo<T>::Decoder;
  using Transform = typename DeltaFifo<T>::Transform;

  struct Options {
    std::string name;
    std::chrono::milliseconds defaultResync{0};
    Transform transform;
    ReflectorOptions reflector;
  };

  // One handler's registration: its buffer, its coroutine, its view of "synced".
  class Registration {
   public:
    bool hasSynced() const { return informer_->hasSynced() && initialPending_ == 0; }
    size_t pending() const { return buffer_.size(); }

   private:
    friend class SharedIndexInformer;
    enum class Kind { Add, Update, Delete };
    struct Notification {
      Kind kind;
      Ptr oldObj;
      Ptr obj;
      bool flag = false;  // isInInitialList (Add) or finalStateUnknown (Delete)
    };
    Registration(SharedIndexInformer* informer, EventHandler<T> handler,
                 std::chrono::milliseconds resync, const net::any_io_executor& ex)
        : informer_(informer), handler_(std::move(handler)), resync_(resync), wake_(ex) {}

    SharedIndexInformer* informer_;
    EventHandler<T> handler_;
    std::chrono::milliseconds resync_;
    Clock::TimePoint nextResync_{};
    std::deque<Notification> buffer_;
    size_t initialPending_ = 0;
    Notifier wake_;
    bool running_ = false;
  };

  SharedIndexInformer(std::unique_ptr<ListerWatcher> lw, Decoder decoder, Clock& clock,
                      Options options, net::any_io_executor executor)
      : lw_(std::move(lw)),
        clock_(clock),
        options_(std::move(options)),
        executor_(std::move(executor)),
        ready_(executor_),
        fifo_(std::move(decoder), options_.transform, &indexer_, [this] { ready_.notify(); }),
        resyncCheckPeriod_(options_.defaultResync) {}

  ~SharedIndexInformer() override = default;

  // Before or after start. A period in (0, 1s) is raised to 1s; after start, one shorter than
  // the informer's check period is raised to it (client-go's rules).
  Registration& addEventHandler(EventHandler<T> handler,
                                std::chrono::milliseconds resync = std::chrono::milliseconds(-1)) {
    if (resync.count() < 0) {
      resync = options_.defaultResync;
    }
    if (resync.count() > 0 && resync < kMinimumResyncPeriod) {
      resync = kMinimumResyncPeriod;
    }
    if (resync.count() > 0) {
      if (!started_) {
        if (resyncCheckPeriod_.count() == 0 || resync < resyncCheckPeriod_) {
          resyncCheckPeriod_ = resync;
        }
      } else if (resyncCheckPeriod_.count() == 0) {
        resync = std::chrono::milliseconds(0);  // the informer never resyncs
      } else if (resync < resyncCheckPeriod_) {
        resync = resyncCheckPeriod_;
      }
    }
    registrations_.push_back(std::unique_ptr<Registration>(
        new Registration(this, std::move(handler), resync, executor_)));
    Registration& reg = *registrations_.back();
    reg.nextResync_ = clock_.now() + resync;
    if (started_) {
      // Late handlers learn the current contents as adds from the initial list.
      for (const auto& [key, obj] : indexer_.items()) {
        reg.buffer_.push_back({Registration::Kind::Add, nullptr, obj, true});
        ++reg.initialPending_;
      }
      startRegistration(reg);
    }
    return reg;
  }

  // Extra indexes; false on a name clash.
  bool addIndexers(const std::map<std::string, IndexFunc<T>>& indexers) {
    return indexer_.addIndexers(indexers);
  }

  void start(net::any_io_executor executor) override {
    if (started_) {
      return;  // Run twice is a no-op in client-go too
    }
    started_ = true;
    executor_ = executor;
    ReflectorOptions ro = options_.reflector;
    if (ro.name.empty()) {
      ro.name = options_.name;
    }
    ro.resyncPeriod = resyncCheckPeriod_;
    ro.shouldResync = [this] { return shouldResync(); };
    std::random_device rd;
    reflector_ = std::make_unique<Reflector>(
        *lw_, fifo_, clock_, std::move(ro), [gen = std::mt19937_64(rd())]() mutable {
          return std::uniform_real_distribution<double>(0.0, 1.0)(gen);
        });
    for (auto& reg : registrations_) {
      startRegistration(*reg);
    }
    ++running_;
    net::co_spawn(executor_, runReflector(), rethrowUnhandled);
    ++running_;
    net::co_spawn(executor_, processLoop(), rethrowUnhandled);
  }

  void stop() override {
    stopping_ = true;
    if (reflector_) {
      reflector_->stop();
    }
    ready_.notify();
    for (auto& reg : registrations_) {
      reg->wake_.notify();
    }
  }

  bool stopped() const override { return running_ == 0; }
  bool hasSynced() const override { return fifo_.hasSynced(); }
  const Indexer<T>& indexer() const { return indexer_; }
  const Reflector* reflector() const { return reflector_.get(); }
  std::chrono::milliseconds resyncCheckPeriod() const { return resyncCheckPeriod_; }
  size_t decodeFailures() const { return fifo_.decodeFailures(); }

 private:
  net::awaitable<void> runReflector() {
    co_await reflector_->run();
    --running_;
  }

  void startRegistration(Registration& reg) {
    if (reg.running_) {
      return;
    }
    reg.running_ = true;
    ++running_;
    net::co_spawn(executor_, runRegistration(&reg), rethrowUnhandled);
  }

  net::awaitable<void> runRegistration(Registration* reg) {
    while (!stopping_) {
      size_t delivered = 0;
      while (!reg->buffer_.empty() && !stopping_) {
        auto n = std::move(reg->buffer_.front());
        reg->buffer_.pop_front();
        deliver(*reg, n);
        // Let the other handlers and the reflector run between notifications.
        if (++delivered % 64 == 0) {
          co_await net::post(executor_, net::use_awaitable);
        }
      }
      if (!stopping_) {
        co_await reg->wake_.wait();
      }
    }
    --running_;
  }

  void deliver(Registration& reg, const typename Registration::Notification& n) {
    using Kind = typename Registration::Kind;
    switch (n.kind) {
      case Kind::Add:
        if (n.flag && reg.initialPending_ > 0) {
          --reg.initialPending_;
        }
        if (reg.handler_.onAdd) {
          reg.handler_.onAdd(n.obj, n.flag);
        }
        break;
      case Kind::Update:
        if (reg.handler_.onUpdate) {
          reg.handler_.onUpdate(n.oldObj, n.obj);
        }
        break;
      case Kind::Delete:
        if (reg.handler_.onDelete) {
          reg.handler_.onDelete(n.obj, n.flag);
        }
        break;
    }
  }

  void distribute(typename Registration::Notification n, bool sync) {
    for (auto& reg : registrations_) {
      // A resync update goes only to handlers due for one.
      if (sync && syncing_.count(reg.get()) == 0) {
        continue;
      }
      if (n.kind == Registration::Kind::Add && n.flag) {
        ++reg->initialPending_;
      }
      reg->buffer_.push_back(n);
      reg->wake_.notify();
    }
  }

  // Marks the handlers whose resync period has come round; true if any.
  bool shouldResync() {
    syncing_.clear();
    const auto now = clock_.now();
    for (auto& reg : registrations_) {
      if (reg->resync_.count() > 0 && now >= reg->nextResync_) {
        syncing_.insert(reg.get());
        reg->nextResync_ = now + reg->resync_;
      }
    }
    return !syncing_.empty();
  }

  net::awaitable<void> processLoop() {
    while (!stopping_) {
      while (auto popped = fifo_.pop()) {
        processDeltas(*popped);
        fifo_.done(*popped);
        if (stopping_) {
          break;
        }
      }
      if (!stopping_) {
        co_await ready_.wait();
      }
    }
    --running_;
  }

  // client-go's processDeltas: the cache is updated before any handler hears of it.
  void processDeltas(const typename DeltaFifo<T>::Popped& popped) {
    using Kind = typename Registration::Kind;
    for (const auto& d : popped.deltas) {
      if (d.type == DeltaType::Deleted) {
        Ptr last = d.object ? d.object : indexer_.get(popped.key);
        indexer_.remove(popped.key);
        distribute({Kind::Delete, nullptr, last, d.finalStateUnknown}, false);
        continue;
      }
      if (Ptr old = indexer_.get(popped.key)) {
        indexer_.put(popped.key, d.object);
        const bool sync = (d.type == DeltaType::Sync || d.type == DeltaType::Replaced) &&
                          old->metadata.resourceVersion == d.object->metadata.resourceVersion;
        distribute({Kind::Update, old, d.object, false}, sync);
      } else {
        indexer_.put(popped.key, d.object);
        distribute({Kind::Add, nullptr, d.object, popped.isInInitialList}, false);
      }
    }
  }

  std::unique_ptr<ListerWatcher> lw_;
  Clock& clock_;
  Options options_;
  net::any_io_executor executor_;
  Notifier ready_;
  Indexer<T> indexer_;
  DeltaFifo<T> fifo_;
  std::unique_ptr<Reflector> reflector_;
  std::vector<std::unique_ptr<Registration>> registrations_;
  std::set<const Registration*> syncing_;
  std::chrono::milliseconds resyncCheckPeriod_;
  bool started_ = false;
  bool stopping_ = false;
  int running_ = 0;
};

// Polls every 100 ms (client-go's syncedPollPeriod) until all informers have synced; false if
// `deadline` passes first.
net::awaitable<bool> waitForCacheSync(Clock& clock, std::vector<const InformerBase*> informers,
                                      Clock::TimePoint deadline);

}  // namespace egress::cache
