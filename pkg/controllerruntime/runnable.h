// File: runnable.h
//
// The seam between the Manager and what it runs (controllers): the four moments of a
// controller's life, in the order the Manager calls them.
//   1. setUp(factory): before the informers start. Ask the shared factory for the informers the
//      controller needs and add its event handlers (they may enqueue keys from then on; nothing is
//      reconciled yet).
//   2. start(): after every cache has synced and, with leader election, after the lease is won.
//      The controller's start hook (the operator rebuilds its IP ledger from the synced caches
//      here). An error (a message for the log) stops the Manager, which exits non-zero.
//   3. run(): the workers, until stop(). Returns once no reconcile runs any more.
//   4. stop(): take no new keys (the queue shuts down); reconciles that run finish; run() then
//      returns. Idempotent; may be called before run() (run() then returns at once).
// All on the io_context's thread.
#pragma once

#include <string>

#include <boost/asio/awaitable.hpp>

#include "pkg/base/result.h"

namespace egress::cache {
class SharedInformerFactory;
}

namespace egress::controllerruntime {

namespace net = boost::asio;

class Runnable {
 public:
  virtual ~Runnable() = default;
  virtual const std::string& name() const = 0;
  virtual Result<Ok, std::string> setUp(cache::SharedInformerFactory& factory) = 0;
  virtual net::awaitable<Result<Ok, std::string>> start() = 0;
  virtual net::awaitable<void> run() = 0;
  virtual void stop() = 0;
};

}  // namespace egress::controllerruntime
