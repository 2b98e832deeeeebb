// File: lister_watcher.h
//
// The reflector's view of the API (client-go's ListerWatcher): list one page and open a watch,
// for one resource, namespace and selector. The real one goes through the REST client; tests
// script a fake one to inject 410s, 429s, refused connections and clean watch ends.
#pragma once

#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <rapidjson/document.h>

#include "pkg/kube/rest_client.h"

namespace egress::cache {

namespace net = boost::asio;

class ListerWatcher {
 public:
  virtual ~ListerWatcher() = default;
  virtual net::awaitable<kube::Result<rapidjson::Document>> list(kube::ListOptions options) = 0;
  virtual net::awaitable<kube::Result<std::unique_ptr<kube::Watch>>> watch(
      kube::ListOptions options) = 0;
  // "pods" etc., for logs.
  virtual std::string describe() const = 0;
};

// Lists and watches one resource through the REST client, restricted to a namespace ("" = all)
// and label/field selectors.
class RestListerWatcher : public ListerWatcher {
 public:
  RestListerWatcher(kube::RestClient& client, kube::Resource resource, std::string ns,
                    std::string labelSelector = "", std::string fieldSelector = "");
  net::awaitable<kube::Result<rapidjson::Document>> list(kube::ListOptions options) override;
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
