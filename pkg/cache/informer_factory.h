// File: informer_factory.h
//
// SharedInformerFactory: one informer per object type, resource, namespace, label selector and
// transform, however many controllers ask for it, so each watch is opened once and each object
// cached once. Informers made before start() start together; ones made later start at once.
//
// The transform is part of the key: two callers that want different transforms get different
// informers, each caching what it asked for, instead of the second silently getting the first
// one's objects. A transform is a plain function, so its address names it.
//
// Destroying the factory stops its informers; their coroutines finish on their own (see
// shared_informer.h), so that is safe while the io_context runs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <typeindex>
#include <vector>

#include "pkg/cache/lister.h"
#include "pkg/cache/rest_lister_watcher.h"
#include "pkg/cache/shared_informer.h"
#include "pkg/cache/wait_for_cache_sync.h"

namespace prometheus {
class Registry;
}

namespace egress::cache {

class SharedInformerFactory {
 public:
  // Makes the ListerWatcher of a new informer.
  using ListerWatcherMaker = std::function<std::unique_ptr<ListerWatcher>(
      const kube::Resource& resource, const std::string& ns, const std::string& labelSelector)>;

  // Informers list and watch through `client`, which must outlive their coroutines. `metrics`
  // (may be null) receives informer_decode_failures_total and must outlive them too.
  SharedInformerFactory(kube::RestClient& client, Clock& clock, net::any_io_executor executor,
                        std::chrono::milliseconds defaultResync = std::chrono::milliseconds(0),
                        prometheus::Registry* metrics = nullptr)
      : SharedInformerFactory(
            [&client](const kube::Resource& resource, const std::string& ns,
                      const std::string& labelSelector) -> std::unique_ptr<ListerWatcher> {
              return std::make_unique<RestListerWatcher>(client, resource, ns, labelSelector);
            },
            clock, std::move(executor), defaultResync, metrics) {}

  // With ListerWatchers of the caller's making (tests).
  SharedInformerFactory(ListerWatcherMaker makeListerWatcher, Clock& clock,
                        net::any_io_executor executor,
                        std::chrono::milliseconds defaultResync = std::chrono::milliseconds(0),
                        prometheus::Registry* metrics = nullptr)
      : makeListerWatcher_(std::move(makeListerWatcher)),
        clock_(clock),
        executor_(std::move(executor)),
        defaultResync_(defaultResync),
        metrics_(metrics) {}

  template <class T>
  SharedIndexInformer<T>& informerFor(
      const kube::Resource& resource, typename SharedIndexInformer<T>::Decoder decoder,
      const std::string& ns = "", const std::string& labelSelector = "",
      typename SharedIndexInformer<T>::Transform transform = nullptr) {
    const std::string gvr = resource.group + "/" + resource.version + "/" + resource.resource;
    Key key{std::type_index(typeid(T)), gvr, ns, labelSelector,
            reinterpret_cast<std::uintptr_t>(transform)};
    auto it = informers_.find(key);
    if (it != informers_.end()) {
      return static_cast<SharedIndexInformer<T>&>(*it->second);
    }
    typename SharedIndexInformer<T>::Options options;
    options.name = resource.resource + (ns.empty() ? "" : "/" + ns);
    options.defaultResync = defaultResync_;
    options.transform = transform;
    options.metrics = metrics_;
    options.resource =
        resource.group.empty() ? resource.resource : resource.resource + "." + resource.group;
    auto informer = std::make_unique<SharedIndexInformer<T>>(
        makeListerWatcher_(resource, ns, labelSelector), std::move(decoder), clock_,
        std::move(options), executor_);
    auto& ref = *informer;
    informers_.emplace(key, std::move(informer));
    if (started_) {
      ref.start(executor_);
    }
    return ref;
  }

  void start() {
    started_ = true;
    for (auto& [key, informer] : informers_) {
      informer->start(executor_);
    }
  }
  void stop() {
    for (auto& [key, informer] : informers_) {
      informer->stop();
    }
  }
  bool stopped() const {
    for (const auto& [key, informer] : informers_) {
      if (!informer->stopped()) {
        return false;
      }
    }
    return true;
  }
  std::vector<const InformerBase*> informers() const {
    std::vector<const InformerBase*> out;
    for (const auto& [key, informer] : informers_) {
      out.push_back(informer.get());
    }
    return out;
  }
  size_t size() const { return informers_.size(); }

 private:
  // Type, group/version/resource, namespace, label selector, transform.
  using Key = std::tuple<std::type_index, std::string, std::string, std::string, std::uintptr_t>;

  ListerWatcherMaker makeListerWatcher_;
  Clock& clock_;
  net::any_io_executor executor_;
  std::chrono::milliseconds defaultResync_;
  prometheus::Registry* metrics_;
  std::map<Key, std::unique_ptr<InformerBase>> informers_;
  bool started_ = false;
};

}  // namespace egress::cache
