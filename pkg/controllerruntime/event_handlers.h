// File: event_handlers.h
//
// Informer event handlers that map events to reconcile keys, as controller-runtime's handler
// package does:
//   enqueueForObject<T>(q)        every add, update (resyncs included), delete and undecodable
//                                 version of an object queues the object's own key
//                                 (EnqueueRequestForObject);
//   enqueueMapped<T>(q, map)      queues the keys `map` returns for the object, possibly of
//                                 another kind (EnqueueRequestsFromMapFunc); an update queues the
//                                 keys of the old and of the new object, so a pod that moved from
//                                 one policy to another reconciles both.
//   enqueueMapped<T>(q, map, f)   the same, but an update (a new resourceVersion) for which
//                                 f(old, new) is false queues nothing: controller-runtime's
//                                 predicates for what the mapped keys do not read (a pool's
//                                 usage counts, say: every allocation rewrites them, and each
//                                 rewrite would queue every policy of the pool).
// A resync (an update with the same resourceVersion) is never filtered: it reaches the
// reconcile, which is how periodic re-checks happen.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "pkg/cache/indexer.h"
#include "pkg/cache/shared_informer.h"
#include "pkg/controllerruntime/enqueuer.h"

namespace egress::controllerruntime {

template <class T>
cache::EventHandler<T> enqueueForObject(const Enqueuer& queue) {
  using Ptr = typename cache::EventHandler<T>::Ptr;
  cache::EventHandler<T> handler;
  handler.onAdd = [queue](const Ptr& obj, bool) { queue.add(cache::objectKey(obj->metadata)); };
  handler.onUpdate = [queue](const Ptr&, const Ptr& obj) {
    queue.add(cache::objectKey(obj->metadata));
  };
  handler.onDelete = [queue](const Ptr& obj, bool) { queue.add(cache::objectKey(obj->metadata)); };
  // The reconcile sees the undecodable entry in the cache and can fail closed.
  handler.onUndecodable = [queue](const cache::UndecodablePtr& entry) { queue.add(entry->key); };
  return handler;
}

template <class T>
using MapFunc = std::function<std::vector<std::string>(const T& obj)>;

// Whether an update (old, new) can change what the mapped keys' reconciles read.
template <class T>
using UpdateFilter = std::function<bool(const T& oldObj, const T& newObj)>;

template <class T>
cache::EventHandler<T> enqueueMapped(const Enqueuer& queue, MapFunc<T> map,
                                     UpdateFilter<T> updateMatters = {}) {
  using Ptr = typename cache::EventHandler<T>::Ptr;
  auto addAll = [queue, map](const T& obj) {
    for (const auto& key : map(obj)) {
      queue.add(key);
    }
  };
  cache::EventHandler<T> handler;
  handler.onAdd = [addAll](const Ptr& obj, bool) { addAll(*obj); };
  handler.onUpdate = [addAll, updateMatters](const Ptr& oldObj, const Ptr& obj) {
    if (updateMatters && oldObj->metadata.resourceVersion != obj->metadata.resourceVersion &&
        !updateMatters(*oldObj, *obj)) {
      return;
    }
    addAll(*oldObj);  // the queue collapses keys both map to
    addAll(*obj);
  };
  handler.onDelete = [addAll](const Ptr& obj, bool) { addAll(*obj); };
  // An undecodable version has no object to map.
  return handler;
}

}  // namespace egress::controllerruntime
