// File: delta_fifo.h
//
// client-go's DeltaFIFO: the queue between the reflector and the informer's cache. Every key is
// queued once however many changes (deltas) pile up for it, and pop() hands over all of a key's
// deltas, oldest first. Replace() (a relist) queues Replaced for every listed object and a
// Deleted "final state unknown" tombstone for every known object the list no longer has;
// Resync() queues Sync for known objects without pending deltas. Objects are decoded from the
// API's JSON and transformed (fields the operator does not use dropped) before they are queued.
//
// An object that does not decode is queued as an undecodable delta (key, resourceVersion and
// error, read from the raw JSON) instead of being skipped, so that its DELETED or MODIFIED is not
// lost and the cache can keep an explicit entry for it. Each failing object version is counted
// and logged once, however often relists meet it again.
//
// Replace yields to the io_context every few hundred objects; meanwhile pop() hands out
// nothing (the consumer waits for onReady), so the consumer never sees half a Replace.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <prometheus/counter.h>
#include <rapidjson/document.h>
#include <spdlog/spdlog.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/cache/indexer.h"
#include "pkg/cache/reflector_store.h"
#include "pkg/cache/undecodable.h"
#include "pkg/cache/yield.h"

namespace egress::cache {

enum class DeltaType { Added, Updated, Deleted, Replaced, Sync };
const char* toString(DeltaType t);

template <class T>
struct Delta {
  DeltaType type;
  // Null when this version did not decode (see `undecodable`), and for the tombstone of an
  // object known only as undecodable.
  std::shared_ptr<const T> object;
  // This version of the object did not decode: its key, resourceVersion and the error.
  UndecodablePtr undecodable;
  // DeletedFinalStateUnknown: the delete was inferred from a relist; `object` is the last state
  // we knew, possibly stale.
  bool finalStateUnknown = false;
};

template <class T>
class DeltaFifo : public ReflectorStore {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Deltas = std::vector<Delta<T>>;
  using Decoder = std::function<meta::Decoded<T>(const rapidjson::Value&)>;
  // A transform is a plain function, named by its address, so that the informer factory can
  // tell two apart (std::function cannot be compared) and share an informer only between
  // callers that asked for the same one.
  using Transform = void (*)(T&);

  struct Popped {
    std::string key;
    Deltas deltas;
    bool isInInitialList = false;
  };

  // One object of a complete list: typed, or undecodable.
  struct Listed {
    std::string key;
    Ptr object;
    UndecodablePtr undecodable;
  };

  // knownObjects: the informer's cache (for deletes and resync); may be null.
  DeltaFifo(Decoder decoder, Transform transform, const Indexer<T>* knownObjects,
            std::function<void()> onReady = nullptr)
      : decoder_(std::move(decoder)),
        transform_(transform),
        known_(knownObjects),
        onReady_(std::move(onReady)) {}

  // Where decode failures are reported: `name` in the log line, `counter` (may be null)
  // incremented once per failing object version.
  void reportDecodeFailures(std::string name, prometheus::Counter* counter) {
    name_ = std::move(name);
    decodeFailuresCounter_ = counter;
  }

  // --- typed operations -----------------------------------------------------------------------
  void add(Ptr obj) {
    populated_ = true;
    std::string key = objectKey(obj->metadata);  // before obj is moved from
    queue(key, {DeltaType::Added, std::move(obj), nullptr, false});
  }
  void update(Ptr obj) {
    populated_ = true;
    std::string key = objectKey(obj->metadata);
    queue(key, {DeltaType::Updated, std::move(obj), nullptr, false});
  }
  void remove(Ptr obj) {
    populated_ = true;
    std::string key = objectKey(obj->metadata);
    queueDelete(key, {DeltaType::Deleted, std::move(obj), nullptr, false});
  }

  // Replace: the list is the whole truth. Yields every few hundred objects.
  net::awaitable<void> replace(std::vector<Listed> list) {
    replacing_ = true;
    std::unordered_set<std::string_view> listed;
    listed.reserve(list.size());
    size_t n = 0;
    for (auto& item : list) {
      listed.insert(item.key);
      queue(item.key,
            {DeltaType::Replaced, std::move(item.object), std::move(item.undecodable), false});
      if (shouldYield(++n)) {
        co_await yieldNow();
      }
    }
    // Queued keys the list no longer has: tombstone with the newest state we have.
    std::vector<std::pair<std::string, Delta<T>>> gone;
    for (const auto& [key, deltas] : items_) {
      if (listed.count(key) == 0 && !deltas.empty()) {
        gone.emplace_back(key, Delta<T>{DeltaType::Deleted, deltas.back().object,
                                        deltas.back().undecodable, true});
      }
    }
    // Known objects (typed or undecodable) missing from the list and without queued deltas.
    if (known_ != nullptr) {
      known_->forEach([&](const std::shared_ptr<const T>& obj) {
        std::string key = objectKey(obj->metadata);
        if (listed.count(key) == 0 && items_.count(key) == 0) {
          gone.emplace_back(std::move(key), Delta<T>{DeltaType::Deleted, obj, nullptr, true});
        }
      });
      for (const auto& [key, entry] : known_->undecodable()) {
        if (listed.count(key) == 0 && items_.count(key) == 0) {
          gone.emplace_back(key, Delta<T>{DeltaType::Deleted, nullptr, entry, true});
        }
      }
    }
    for (auto& [key, delta] : gone) {
      queue(key, std::move(delta));
    }
    if (!populated_) {
      populated_ = true;
      initialPopulationCount_ = listed.size() + gone.size();
    }
    replacing_ = false;
    if (!queue_.empty() && onReady_) {
      onReady_();
    }
  }

  // --- ReflectorStore ---------------------------------------------------------------------------
  void startList() override { pendingList_.clear(); }
  void listItem(const rapidjson::Value& v) override {
    auto d = decode(v);
    if (d.object != nullptr) {
      std::string key = objectKey(d.object->metadata);
      pendingList_.push_back({std::move(key), std::move(d.object), nullptr});
    } else if (d.undecodable != nullptr) {
      pendingList_.push_back({d.undecodable->key, nullptr, std::move(d.undecodable)});
    }
  }
  void abortList() override { std::vector<Listed>().swap(pendingList_); }
  net::awaitable<void> finishList(std::string rv) override {
    (void)rv;
    std::vector<Listed> list = std::move(pendingList_);
    pendingList_.clear();
    co_await replace(std::move(list));
  }
  void addJson(const rapidjson::Value& v) override { queueJson(DeltaType::Added, v); }
  void updateJson(const rapidjson::Value& v) override { queueJson(DeltaType::Updated, v); }
  void removeJson(const rapidjson::Value& v) override {
    populated_ = true;
    // Only the key matters for a delete: an object that does not decode is no failure here.
    auto d = decode(v, false);
    if (d.object != nullptr) {
      remove(std::move(d.object));
    } else if (d.undecodable != nullptr) {
      std::string key = d.undecodable->key;
      queueDelete(key, {DeltaType::Deleted, nullptr, std::move(d.undecodable), false});
    }
  }
  // Sync for every known object without queued deltas; the transform is not re-applied. Not
  // during a Replace (the next resync comes soon enough).
  void resync() override {
    if (known_ == nullptr || replacing_) {
      return;
    }
    known_->forEach([&](const std::shared_ptr<const T>& obj) {
      std::string key = objectKey(obj->metadata);
      if (items_.count(key) == 0) {
        queue(key, {DeltaType::Sync, obj, nullptr, false});
      }
    });
  }

  // --- consumer side ----------------------------------------------------------------------------
  // Nothing while a Replace is under way.
  std::optional<Popped> pop() {
    if (queue_.empty() || replacing_) {
      return std::nullopt;
    }
    Popped out;
    out.key = std::move(queue_.front());
    queue_.pop_front();
    auto it = items_.find(out.key);
    out.deltas = std::move(it->second);
    items_.erase(it);
    out.isInInitialList = !hasSynced();
    return out;
  }
  // After processing a popped item: counts down the initial list. Deviation from DeltaFIFO
  // (which counts before processing): like RealFIFO, synced means "processed", not "popped".
  void done(const Popped& popped) {
    if (popped.isInInitialList && initialPopulationCount_ > 0) {
      --initialPopulationCount_;
    }
  }

  bool hasSynced() const { return populated_ && initialPopulationCount_ == 0; }
  size_t size() const { return queue_.size(); }
  const Deltas* peek(const std::string& key) const {
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : &it->second;
  }
  // Object versions that did not decode (each counted once).
  size_t decodeFailures() const { return decodeFailures_; }

 private:
  struct Decoded {
    Ptr object;
    UndecodablePtr undecodable;
  };

  // `report`: count and log a failure (once per object version).
  Decoded decode(const rapidjson::Value& v, bool report = true) {
    auto decoded = decoder_(v);
    if (decoded) {
      if (transform_ != nullptr) {
        transform_(*decoded);
      }
      return {std::make_shared<const T>(std::move(*decoded)), nullptr};
    }
    auto entry = describeUndecodable(v, decoded.error().toString());
    if (!entry) {
      if (!report) {
        return {};
      }
      countDecodeFailure();
      spdlog::warn("informer {}: dropping an object without a name that does not decode: {}", name_,
                   decoded.error().toString());
      return {};
    }
    if (report && !alreadyUndecodable(*entry)) {
      countDecodeFailure();
      spdlog::warn(
          "informer {}: {} at resourceVersion {} does not decode ({}); cached as undecodable",
          name_, entry->key, entry->resourceVersion, entry->error);
    }
    return {nullptr, std::make_shared<const UndecodableObject>(std::move(*entry))};
  }

  // This version is already known not to decode (cached or queued as such): a relist meets it
  // again, and it has been counted and logged.
  bool alreadyUndecodable(const UndecodableObject& e) const {
    if (known_ != nullptr) {
      if (auto cached = known_->undecodable(e.key);
          cached != nullptr && cached->resourceVersion == e.resourceVersion) {
        return true;
      }
    }
    auto it = items_.find(e.key);
    return it != items_.end() && !it->second.empty() && it->second.back().undecodable != nullptr &&
           it->second.back().undecodable->resourceVersion == e.resourceVersion;
  }

  void countDecodeFailure() {
    ++decodeFailures_;
    if (decodeFailuresCounter_ != nullptr) {
      decodeFailuresCounter_->Increment();
    }
  }

  void queueJson(DeltaType type, const rapidjson::Value& v) {
    populated_ = true;
    auto d = decode(v);
    if (d.object != nullptr) {
      std::string key = objectKey(d.object->metadata);
      queue(key, {type, std::move(d.object), nullptr, false});
    } else if (d.undecodable != nullptr) {
      std::string key = d.undecodable->key;
      queue(key, {type, nullptr, std::move(d.undecodable), false});
    }
  }

  // A delete of something neither queued nor known is dropped (nothing to tell anyone).
  void queueDelete(const std::string& key, Delta<T> delta) {
    const bool queued = items_.count(key) != 0;
    const bool known = known_ != nullptr && known_->hasKey(key);
    if (queued || known) {
      queue(key, std::move(delta));
    }
  }

  void queue(const std::string& key, Delta<T> delta) {
    auto [it, inserted] = items_.try_emplace(key);
    Deltas& deltas = it->second;
    deltas.push_back(std::move(delta));
    dedupDeletes(deltas);
    if (inserted) {
      queue_.push_back(key);
      if (onReady_) {
        onReady_();
      }
    }
  }

  // Only the last two deltas are compared; of two deletes one is kept, the one that knows the
  // final state if either does.
  static void dedupDeletes(Deltas& deltas) {
    const size_t n = deltas.size();
    if (n < 2) {
      return;
    }
    auto& a = deltas[n - 2];
    auto& b = deltas[n - 1];
    if (a.type != DeltaType::Deleted || b.type != DeltaType::Deleted) {
      return;
    }
    if (a.finalStateUnknown) {
      a = std::move(b);
    }
    deltas.pop_back();
  }

  Decoder decoder_;
  Transform transform_;
  const Indexer<T>* known_;
  std::function<void()> onReady_;
  std::string name_;
  prometheus::Counter* decodeFailuresCounter_ = nullptr;
  std::unordered_map<std::string, Deltas> items_;
  std::deque<std::string> queue_;
  std::vector<Listed> pendingList_;
  bool populated_ = false;
  bool replacing_ = false;
  size_t initialPopulationCount_ = 0;
  size_t decodeFailures_ = 0;
};

}  // namespace egress::cache
