// File: informer_factory.h
//
// SharedInformerFactory: one informer per object type, resource, namespace and label selector,
// however many controllers ask for it, so each watch is opened once and each object cached
// once. Informers made before start() start together; ones made later start at once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <typeindex>
#include <vector>

#include "pkg/cache/lister.h"
#include "pkg/cache/shared_informer.h"

namespace egress::cache {

class SharedInformerFactory {
 public:
  SharedInformerFactory(kube::RestClient& client, Clock& clock, net::any_io_executor executor,
                        std::chrono::milliseconds defaultResync = std::chrono::milliseconds(0))
      : client_(client),
        clock_(clock),
        executor_(std::move(executor)),
        defaultResync_(defaultResync) {}

  template <class T>
  SharedIndexInformer<T>& informerFor(const kube::Resource& resource,
                                      typename SharedIndexInformer<T>::Decoder decoder,
                                      const std::string& ns = "",
                                      const std::string& labelSelector = "",
                                      typename SharedIndexInformer<T>::Transform transform = {}) {
    Key key{std::type_index(typeid(T)),
            resource.group + "/" + resource.version + "/" + resource.resource, ns, labelSelector};
    auto it = informers_.find(key);
    if (it != informers_.end()) {
      return static_cast<SharedIndexInformer<T>&>(*it->second);
    }
    typename SharedIndexInformer<T>::Options options;
    options.name = resource.resource + (ns.empty() ? "" : "/" + ns);
    options.defaultResync = defaultResync_;
    options.transform = std::move(transform);
    auto informer = std::make_unique<SharedIndexInformer<T>>(
        std::make_unique<RestListerWatcher>(client_, resource, ns, labelSelector),
        std::move(decoder), clock_, std::move(options), executor_);
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
  using Key = std::tuple<std::type_index, std::string, std::string, std::string>;

  kube::RestClient& client_;
  Clock& clock_;
  net::any_io_executor executor_;
  std::chrono::milliseconds defaultResync_;
  std::map<Key, std::unique_ptr<InformerBase>> informers_;
  bool started_ = false;
};

}  // namespace egress::cache
