// File: lease_lock.h
//
// The lock a LeaderElector contends for, as an interface: client-go's resourcelock.Interface
// reduced to its Lease form. It is the seam the elector's unit tests replace with an in-memory
// fake (conflicts, errors, another holder), while KubeLeaseLock (kube_lease_lock.h) is the real
// coordination.k8s.io/v1 Lease. Like client-go's LeaseLock, an implementation remembers the
// object of its last get/create/update, and update() writes over exactly that version: a write
// that lost a race fails with Conflict (optimistic concurrency through resourceVersion).
#pragma once

#include <cstdint>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "pkg/apis/meta/time.h"
#include "pkg/base/result.h"
#include "pkg/kube/errors.h"

namespace egress::leaderelection {

namespace net = boost::asio;

// client-go's resourcelock.LeaderElectionRecord: what the lock stores, whatever its kind.
struct LeaderElectionRecord {
  std::string holderIdentity;  // "" = nobody (a released lease)
  int32_t leaseDurationSeconds = 0;
  meta::Time acquireTime{};
  meta::Time renewTime{};
  int32_t leaderTransitions = 0;

  bool operator==(const LeaderElectionRecord&) const = default;
};

// What get() saw: the record and the version of the object it came from.
struct LockSnapshot {
  LeaderElectionRecord record;
  std::string resourceVersion;
};

class LeaseLock {
 public:
  virtual ~LeaseLock() = default;

  // Reads the lock; a missing lock is an error with isNotFound().
  virtual net::awaitable<kube::Result<LockSnapshot>> get() = 0;
  // Creates the lock holding `record`; isAlreadyExists() if someone was faster.
  virtual net::awaitable<kube::Result<Ok>> create(LeaderElectionRecord record) = 0;
  // Replaces the record of the version last read or written; isConflict() if the lock changed
  // since. Fails if there was no successful get() or create() before.
  virtual net::awaitable<kube::Result<Ok>> update(LeaderElectionRecord record) = 0;

  // Who this candidate is (written as holderIdentity).
  virtual const std::string& identity() const = 0;
  // "namespace/name", for logs.
  virtual std::string describe() const = 0;
};

}  // namespace egress::leaderelection
