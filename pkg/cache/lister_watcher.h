// File: lister_watcher.h
//
// The reflector's view of the API (client-go's ListerWatcher): list one page and open a watch,
// for one resource, namespace and selector. The real one (RestListerWatcher) goes through the
// REST client; tests script a fake one to inject 410s, 429s, refused connections and clean watch
// ends. The reflector cancels a call in flight through Asio per-operation cancellation (the
// cancellation slot of the coroutine that runs it): an implementation should then complete
// promptly with a Cancelled error.
#pragma once

#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "pkg/kube/rest_client.h"

namespace egress::cache {

namespace net = boost::asio;

class ListerWatcher {
 public:
  virtual ~ListerWatcher() = default;
  // One page, decoded item by item as the reflector takes its items (list_page.h).
  virtual net::awaitable<kube::Result<kube::ListPage>> list(kube::ListOptions options) = 0;
  virtual net::awaitable<kube::Result<std::unique_ptr<kube::Watch>>> watch(
      kube::ListOptions options) = 0;
  // "pods" etc., for logs.
  virtual std::string describe() const = 0;
};

}  // namespace egress::cache
