#include "pkg/cache/informer_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/registry.h>

namespace egress::cache {

prometheus::Counter* decodeFailuresCounter(prometheus::Registry* registry,
                                           const std::string& resource) {
  if (registry == nullptr) {
    return nullptr;
  }
  return &prometheus::BuildCounter()
              .Name("informer_decode_failures_total")
              .Help(
                  "Object versions an informer could not decode; each is kept in its cache as "
                  "an undecodable entry until a version that decodes replaces it.")
              .Register(*registry)
              .Add({{"resource", resource}});
}

}  // namespace egress::cache
