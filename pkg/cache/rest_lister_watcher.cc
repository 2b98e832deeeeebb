#include "pkg/cache/rest_lister_watcher.h"

namespace egress::cache {

RestListerWatcher::RestListerWatcher(kube::RestClient& client, kube::Resource resource,
                                     std::string ns, std::string labelSelector,
                                     std::string fieldSelector)
    : client_(client),
      resource_(std::move(resource)),
      ns_(std::move(ns)),
      labelSelector_(std::move(labelSelector)),
      fieldSelector_(std::move(fieldSelector)) {}

net::awaitable<kube::Result<kube::ListPage>> RestListerWatcher::list(kube::ListOptions options) {
  options.labelSelector = labelSelector_;
  options.fieldSelector = fieldSelector_;
  co_return co_await client_.listPage(resource_, ns_, std::move(options));
}

net::awaitable<kube::Result<std::unique_ptr<kube::Watch>>> RestListerWatcher::watch(
    kube::ListOptions options) {
  options.labelSelector = labelSelector_;
  options.fieldSelector = fieldSelector_;
  auto w = co_await client_.watch(resource_, ns_, std::move(options));
  if (!w) {
    co_return w.error();
  }
  co_return std::unique_ptr<kube::Watch>(std::move(*w));
}

std::string RestListerWatcher::describe() const {
  return resource_.resource + (ns_.empty() ? "" : " in " + ns_);
}

}  // namespace egress::cache
