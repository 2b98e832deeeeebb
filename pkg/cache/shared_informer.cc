#include "pkg/cache/shared_informer.h"

namespace egress::cache {

std::chrono::milliseconds determineResyncPeriod(std::chrono::milliseconds desired,
                                                std::chrono::milliseconds check) {
  if (desired.count() == 0) {
    return desired;
  }
  if (check.count() == 0) {
    spdlog::warn(
        "informer: a handler's resync period of {}ms is ignored: the informer never "
        "resyncs (its default resync period is 0)",
        desired.count());
    return std::chrono::milliseconds(0);
  }
  return desired < check ? check : desired;
}

}  // namespace egress::cache
