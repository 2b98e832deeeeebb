// File: rest_lister_watcher.h
//
// The ListerWatcher of a real informer: lists and watches one resource through the REST client,
// restricted to a namespace ("" = all) and label/field selectors. The client must outlive every
// request the reflector started through it (stop the informers and let their coroutines finish,
// or keep the client until the io_context is done).
#pragma once

#include <memory>
#include <string>

#include "pkg/cache/lister_watcher.h"
#include "pkg/kube/rest_client.h"

namespace egress::cache {

class RestListerWatcher : public ListerWatcher {
 public:
  RestListerWatcher(kube::RestClient& client, kube::Resource resource, std::string ns,
                    std::string labelSelector = "", std::string fieldSelector = "");
  net::awaitable<kube::Result<kube::ListPage>> list(kube::ListOptions options) override;
  net::awaitable<kube::Result<std::unique_ptr<kube::Watch>>> watch(
      kube::ListOptions options) override;
  std::string describe() const override;

 private:
  kube::RestClient& client_;
  kube::Resource resource_;
  std::string ns_;
  std::string labelSelector_;
  std::string fieldSelector_;
};

}  // namespace egress::cache
