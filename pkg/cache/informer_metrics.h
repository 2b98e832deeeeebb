// File: informer_metrics.h
//
// The informers' Prometheus metrics. informer_decode_failures_total{resource} counts object
// versions the informer could not decode (each is kept in the cache as an undecodable entry);
// a relist that meets the same version again does not count it twice.
#pragma once

#include <string>

namespace prometheus {
class Counter;
class Registry;
}  // namespace prometheus

namespace egress::cache {

// The counter of `resource` in `registry`; null when registry is null (no metrics). The
// registry must outlive the informer that increments the counter.
prometheus::Counter* decodeFailuresCounter(prometheus::Registry* registry,
                                           const std::string& resource);

}  // namespace egress::cache
