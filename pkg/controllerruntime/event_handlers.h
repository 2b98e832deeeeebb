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
// Neither filters anything: a resync (an update with the same resourceVersion) reaches the
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

template <class T>
cache::EventHandler<T> enqueueMapped(const Enqueuer& queue, MapFunc<T> map) {
  using Ptr = typename cache::EventHandler<T>::Ptr;
  auto addAll = [queue, map](const T& obj) {
    for (const auto& key : map(obj)) {
      queue.add(key);
    }
  };
  cache::EventHandler<T> handler;
  handler.onAdd = [addAll](const Ptr& obj, bool) { addAll(*obj); };
  handler.onUpdate = [addAll](const Ptr& oldObj, const Ptr& obj) {
    addAll(*oldObj);  // the queue collapses keys both map to
    addAll(*obj);
  };
  handler.onDelete = [addAll](const Ptr& obj, bool) { addAll(*obj); };
  // An undecodable version has no object to map.
  return handler;
}

}  // namespace egress::controllerruntime
