// File: informer_base.h
//
// What every informer offers its factory and waitForCacheSync, whatever its object type.
#pragma once

#include <string>

#include <boost/asio/any_io_executor.hpp>

namespace egress::cache {

namespace net = boost::asio;

class InformerBase {
 public:
  virtual ~InformerBase() = default;
  virtual void start(net::any_io_executor executor) = 0;
  // Ends every coroutine of the informer soon, cancelling its LIST or watch request at once.
  virtual void stop() = 0;
  virtual bool hasSynced() const = 0;
  // True once every coroutine the informer started has finished (after stop()).
  virtual bool stopped() const = 0;
  // For logs and messages: "configmaps", "pods/kube-system".
  virtual const std::string& name() const = 0;
};

}  // namespace egress::cache
