// File: fake_lease_lock.h
//
// An in-memory LeaseLock for the elector's unit tests. FakeLeaseStore is the "API server" of one
// lease, shared by any number of FakeLeaseLocks (one per candidate), with resourceVersion-based
// optimistic concurrency. A test can play another holder (setRecord), touch the object without
// changing the record, queue errors for the next calls, make calls throw or hang until released,
// and read the log of calls with the fake time each was made at.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "pkg/base/clock.h"
#include "pkg/base/notifier.h"
#include "pkg/leaderelection/lease_lock.h"

namespace egress::leaderelection::testing {

// API errors as the server would send them.
kube::Error notFound();
kube::Error conflict();
kube::Error alreadyExists();
kube::Error serverError();

struct LockCall {
  std::string verb;  // "get", "create", "update"
  std::string identity;
  Clock::TimePoint at;
};

class FakeLeaseStore {
 public:
  FakeLeaseStore(const net::any_io_executor& executor, const Clock& clock);

  // Another writer: replaces the record and bumps the resourceVersion.
  void setRecord(LeaderElectionRecord record);
  // A write that leaves the record alone (a label change): only the resourceVersion moves.
  void touch() { ++resourceVersion_; }
  const std::optional<LeaderElectionRecord>& record() const { return record_; }
  int64_t resourceVersion() const { return resourceVersion_; }

  // Errors returned by the next calls of each verb, in order (the call is not performed).
  std::deque<kube::Error> getErrors;
  std::deque<kube::Error> createErrors;
  std::deque<kube::Error> updateErrors;
  // The next this many calls of each verb throw std::runtime_error (a bug, bad_alloc) instead of
  // returning; checked before the errors above.
  int getThrows = 0;
  int createThrows = 0;
  int updateThrows = 0;
  // While set, calls of that verb wait until releaseHung() (and then proceed normally).
  bool hangGets = false;
  bool hangUpdates = false;
  void releaseHung();

  const std::vector<LockCall>& calls() const { return calls_; }
  size_t count(const std::string& verb, const std::string& identity = "") const;

 private:
  friend class FakeLeaseLock;

  const Clock* clock_;
  std::optional<LeaderElectionRecord> record_;
  int64_t resourceVersion_ = 0;
  std::vector<LockCall> calls_;
  Notifier gate_;  // notified by releaseHung()
};

class FakeLeaseLock : public LeaseLock {
 public:
  FakeLeaseLock(FakeLeaseStore& store, std::string identity)
      : store_(&store), identity_(std::move(identity)) {}

  net::awaitable<kube::Result<LockSnapshot>> get() override;
  net::awaitable<kube::Result<Ok>> create(LeaderElectionRecord record) override;
  net::awaitable<kube::Result<Ok>> update(LeaderElectionRecord record) override;
  const std::string& identity() const override { return identity_; }
  std::string describe() const override { return "fake/lease"; }

 private:
  // False when the wait was cancelled.
  net::awaitable<bool> waitWhileHung(const bool* hang);

  FakeLeaseStore* store_;
  std::string identity_;
  std::optional<int64_t> knownVersion_;  // of the last get/create/update
};

}  // namespace egress::leaderelection::testing
