// File: observed_leases.h
//
// Lease freshness judged as client-go's leader elector judges it: by when *this* process saw a
// Lease's record change (its observedTime, on this process's monotonic clock), never by
// comparing the remote renewTime with the local wall clock. Two clocks 5 s apart would
// otherwise turn into 5 s in which two nodes both believe they may hold an address. A Lease
// seen for the first time counts as renewed at that moment, so a process that starts (or
// restarts its watch) waits a whole duration before it calls anyone's Lease stale: late, never
// early. egw-agent keeps one for its peers' Leases, the operator one for every agent's.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "pkg/apis/coordination/lease.h"
#include "pkg/base/clock.h"

namespace egress::leaderelection {

class ObservedLeases {
 public:
  // Records `lease` under `key` as seen at `now`. Its observed time moves only when the record
  // changed (renewTime, holder or duration): the same Lease seen again, e.g. by a resync or a
  // relist, does not make it fresher.
  void observe(const std::string& key, const coordination::Lease& lease, Clock::TimePoint now);
  void forget(const std::string& key);

  // Renewed, as observed, less than its leaseDurationSeconds before `now`. False for an unknown
  // key and for a Lease without a renewTime or a positive duration.
  bool fresh(const std::string& key, Clock::TimePoint now) const;
  // When it goes stale unless a renewal is observed first; nullopt when it is never fresh.
  std::optional<Clock::TimePoint> expiry(const std::string& key) const;

 private:
  struct Seen {
    coordination::LeaseSpec spec;
    Clock::TimePoint observed;
  };
  std::map<std::string, Seen> seen_;
};

}  // namespace egress::leaderelection
