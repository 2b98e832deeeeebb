#include "pkg/controller/pool_sync.h"

#include <chrono>

#include "pkg/apis/networking/v1alpha1/validation.h"

namespace egress::controller {

void syncPoolFromCache(Context& ctx, const std::string& name) {
  if (name.empty()) {
    return;
  }
  auto pool = ctx.cache.pool(name);
  const ipam::PoolSpec* known = ctx.allocator.poolSpec(name);
  if (!pool) {
    if (known != nullptr) {
      ctx.allocator.removePool(name);
    }
    return;
  }
  ipam::PoolSpec spec;
  spec.name = name;
  spec.created = std::chrono::duration_cast<std::chrono::seconds>(
                     pool->metadata.creationTimestamp.time_since_epoch())
                     .count();
  spec.cidrs = pool->spec.cidrs;
  spec.exclude = pool->spec.exclude;
  spec.disabled = pool->spec.disabled;
  if (auto errs = v1alpha1::validate(*pool); !errs.empty()) {
    spec.invalid = validation::join(errs);
  }
  if (known == nullptr || !(*known == spec)) {
    ctx.allocator.setPool(spec);
  }
}

}  // namespace egress::controller
