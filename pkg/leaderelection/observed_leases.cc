#include "pkg/leaderelection/observed_leases.h"

namespace egress::leaderelection {
namespace {

bool sameRecord(const coordination::LeaseSpec& a, const coordination::LeaseSpec& b) {
  return a.renewTime == b.renewTime && a.holderIdentity == b.holderIdentity &&
         a.leaseDurationSeconds == b.leaseDurationSeconds;
}

}  // namespace

void ObservedLeases::observe(const std::string& key, const coordination::Lease& lease,
                             Clock::TimePoint now) {
  auto it = seen_.find(key);
  if (it != seen_.end() && sameRecord(it->second.spec, lease.spec)) {
    return;
  }
  seen_[key] = Seen{lease.spec, now};
}

void ObservedLeases::forget(const std::string& key) {
  seen_.erase(key);
}

std::optional<Clock::TimePoint> ObservedLeases::expiry(const std::string& key) const {
  auto it = seen_.find(key);
  if (it == seen_.end()) {
    return std::nullopt;
  }
  const auto& spec = it->second.spec;
  if (!spec.renewTime || !spec.leaseDurationSeconds || *spec.leaseDurationSeconds <= 0) {
    return std::nullopt;
  }
  return it->second.observed + std::chrono::seconds(*spec.leaseDurationSeconds);
}

bool ObservedLeases::fresh(const std::string& key, Clock::TimePoint now) const {
  auto until = expiry(key);
  return until && now < *until;
}

}  // namespace egress::leaderelection
