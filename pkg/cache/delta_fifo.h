// File: delta_fifo.h
//
// client-go's DeltaFIFO: the queue between the reflector and the informer's cache. Every key is
// queued once however many changes (deltas) pile up for it, and pop() hands over all of a key's
// deltas, oldest first. Replace() (a relist) queues Replaced for every listed object and a
// Deleted "final state unknown" tombstone for every known object the list no longer has;
// Resync() queues Sync for known objects without pending deltas. Objects are decoded from the
// API's JSON and transformed (fields the operator does not use dropped) before they are queued.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <rapidjson/document.h>
#include <spdlog/spdlog.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/cache/indexer.h"
#include "pkg/cache/reflector_store.h"

namespace egress::cache {

enum class DeltaType { Added, Updated, Deleted, Replaced, Sync };
const char* toString(DeltaType t);

template <class T>
struct Delta {
  DeltaType type;
  std::shared_ptr<const T> object;  // may be null only for a tombstone of an unknown object
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
  using Transform = std::function<void(T&)>;

  struct Popped {
    std::string key;
    Deltas deltas;
    bool isInInitialList = false;
  };

  // knownObjects: the informer's cache (for deletes and resync); may be null.
  DeltaFifo(Decoder decoder, Transform transform, const Indexer<T>* knownObjects,
            std::function<void()> onReady = nullptr)
      : decoder_(std::move(decoder)),
        transform_(std::move(transform)),
        known_(knownObjects),
        onReady_(std::move(onReady)) {}

  // --- typed operations -----------------------------------------------------------------------
  void add(Ptr obj) {
    populated_ = true;
    std::string key = objectKey(obj->metadata);  // before obj is moved from
    queue(key, {DeltaType::Added, std::move(obj), false});
  }
  void update(Ptr obj) {
    populated_ = true;
    std::string key = objectKey(obj->metadata);
    queue(key, {DeltaType::Updated, std::move(obj), false});
  }
  void remove(Ptr obj) {
    populated_ = true;
    const std::string key = objectKey(obj->metadata);
    // A delete of something neither queued nor known is dropped (nothing to tell anyone).
    const bool queued = items_.count(key) != 0;
    const bool known = known_ != nullptr && known_->contains(key);
    if (!queued && !known) {
      return;
    }
    queue(key, {DeltaType::Deleted, std::move(obj), false});
  }

  void replaceObjects(std::vector<Ptr> list) {
    std::set<std::string> listed;
    for (auto& obj : list) {
      std::string key = objectKey(obj->metadata);
      listed.insert(key);
      queue(key, {DeltaType::Replaced, std::move(obj), false});
    }
    size_t deletions = 0;
    // Queued keys the list no longer has: tombstone with the newest state we have.
    std::vector<std::pair<std::string, Ptr>> gone;
    for (const auto& [key, deltas] : items_) {
      if (listed.count(key) == 0 && !deltas.empty()) {
        gone.emplace_back(key, deltas.back().object);
      }
    }
    // Known objects missing from the list and without queued deltas.
    if (known_ != nullptr) {
      for (const auto& [key, obj] : known_->items()) {
        if (listed.count(key) == 0 && items_.count(key) == 0) {
          gone.emplace_back(key, obj);
        }
      }
    }
    for (auto& [key, obj] : gone) {
      queue(key, {DeltaType::Deleted, std::move(obj), true});
      ++deletions;
    }
    if (!populated_) {
      populated_ = true;
      initialPopulationCount_ = listed.size() + deletions;
    }
  }

  // --- ReflectorStore ---------------------------------------------------------------------------
  void startList() override { pendingList_.clear(); }
  void listItem(const rapidjson::Value& v) override {
    if (auto obj = decode(v)) {
      pendingList_.push_back(std::move(obj));
    }
  }
  void finishList(const std::string& rv) override {
    (void)rv;
    replaceObjects(std::move(pendingList_));
    pendingList_.clear();
  }
  void addJson(const rapidjson::Value& v) override {
    if (auto obj = decode(v)) {
      add(std::move(obj));
    }
  }
  void updateJson(const rapidjson::Value& v) override {
    if (auto obj = decode(v)) {
      update(std::move(obj));
    }
  }
  void removeJson(const rapidjson::Value& v) override {
    if (auto obj = decode(v)) {
      remove(std::move(obj));
    }
  }
  // Sync for every known object without queued deltas; the transform is not re-applied.
  void resync() override {
    if (known_ == nullptr) {
      return;
    }
    for (const auto& [key, obj] : known_->items()) {
      if (items_.count(key) == 0) {
        queue(key, {DeltaType::Sync, obj, false});
      }
    }
  }

  // --- consumer side ----------------------------------------------------------------------------
  std::optional<Popped> pop() {
    if (queue_.empty()) {
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
  // Pop with requeue on processing error: puts the deltas back in front of newer ones.
  void requeue(Popped popped) {
    auto& existing = items_[popped.key];
    if (existing.empty()) {
      queue_.push_front(popped.key);
    }
    existing.insert(existing.begin(), std::make_move_iterator(popped.deltas.begin()),
                    std::make_move_iterator(popped.deltas.end()));
  }

  bool hasSynced() const { return populated_ && initialPopulationCount_ == 0; }
  size_t size() const { return queue_.size(); }
  const Deltas* peek(const std::string& key) const {
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : &it->second;
  }
  size_t decodeFailures() const { return decodeFailures_; }

 private:
  Ptr decode(const rapidjson::Value& v) {
    auto decoded = decoder_(v);
    if (!decoded) {
      // As client-go logs and skips an object of the wrong type, never poisoning the cache.
      ++decodeFailures_;
      spdlog::warn("informer: skipping an object that does not decode: {}",
                   decoded.error().toString());
      return nullptr;
    }
    if (transform_) {
      transform_(*decoded);
    }
    return std::make_shared<const T>(std::move(*decoded));
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
  std::unordered_map<std::string, Deltas> items_;
  std::deque<std::string> queue_;
  std::vector<Ptr> pendingList_;
  bool populated_ = false;
  size_t initialPopulationCount_ = 0;
  size_t decodeFailures_ = 0;
};

}  // namespace egress::cache
