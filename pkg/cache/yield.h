// File: yield.h
//
// Cooperative yielding for the informer machinery's long loops (decoding a list page, Replace,
// draining the DeltaFIFO, delivering to handlers). Everything runs on one io_context, so a loop
// over 10,000 objects holds up lease renewals, probes and every other informer until it
// yields: these loops give the io_context a turn every kYieldEvery items.
#pragma once

#include <cstddef>

#include <boost/asio/awaitable.hpp>

namespace egress::cache {

namespace net = boost::asio;

inline constexpr size_t kYieldEvery = 256;

// Re-queues the calling coroutine behind whatever else is ready to run on its executor.
net::awaitable<void> yieldNow();

// For a loop's n-th item (counting from 1): yields when n is a multiple of `every`.
inline bool shouldYield(size_t n, size_t every = kYieldEvery) {
  return n % every == 0;
}

}  // namespace egress::cache
