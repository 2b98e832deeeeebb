#include "test/unit/leaderelection/fake_lease_lock.h"

#include <stdexcept>

namespace egress::leaderelection::testing {
namespace {

kube::Error apiError(int code, const char* reason) {
  meta::Status status;
  status.status = "Failure";
  status.code = code;
  status.reason = reason;
  status.message = std::string("fake: ") + reason;
  return kube::Error::api(code, status);
}

// Throws when `*pending` > 0, counting it down.
void maybeThrow(int* pending, const char* verb) {
  if (*pending > 0) {
    --*pending;
    throw std::runtime_error(std::string("fake: ") + verb + " threw");
  }
}

}  // namespace

kube::Error notFound() {
  return apiError(404, "NotFound");
}
kube::Error conflict() {
  return apiError(409, "Conflict");
}
kube::Error alreadyExists() {
  return apiError(409, "AlreadyExists");
}
kube::Error serverError() {
  return apiError(500, "InternalError");
}

FakeLeaseStore::FakeLeaseStore(const net::any_io_executor& executor, const Clock& clock)
    : clock_(&clock), gate_(executor) {}

void FakeLeaseStore::setRecord(LeaderElectionRecord record) {
  record_ = std::move(record);
  ++resourceVersion_;
}

void FakeLeaseStore::releaseHung() {
  hangGets = false;
  hangUpdates = false;
  gate_.notify();
}

size_t FakeLeaseStore::count(const std::string& verb, const std::string& identity) const {
  size_t n = 0;
  for (const auto& c : calls_) {
    if (c.verb == verb && (identity.empty() || c.identity == identity)) {
      ++n;
    }
  }
  return n;
}

// Like the REST client, a hung request cancelled through Asio ends at once with Cancelled.
net::awaitable<bool> FakeLeaseLock::waitWhileHung(const bool* hang) {
  while (*hang) {
    const bool woken = co_await store_->gate_.wait();
    if (!woken) {
      co_return false;
    }
  }
  co_return true;
}

net::awaitable<kube::Result<LockSnapshot>> FakeLeaseLock::get() {
  store_->calls_.push_back({"get", identity_, store_->clock_->now()});
  const bool proceed = co_await waitWhileHung(&store_->hangGets);
  if (!proceed) {
    co_return kube::Error::cancelled();
  }
  maybeThrow(&store_->getThrows, "get");
  if (!store_->getErrors.empty()) {
    kube::Error e = store_->getErrors.front();
    store_->getErrors.pop_front();
    co_return e;
  }
  if (!store_->record_) {
    co_return notFound();
  }
  knownVersion_ = store_->resourceVersion_;
  LockSnapshot snapshot{*store_->record_, std::to_string(store_->resourceVersion_)};
  co_return snapshot;
}

net::awaitable<kube::Result<Ok>> FakeLeaseLock::create(LeaderElectionRecord record) {
  store_->calls_.push_back({"create", identity_, store_->clock_->now()});
  maybeThrow(&store_->createThrows, "create");
  if (!store_->createErrors.empty()) {
    kube::Error e = store_->createErrors.front();
    store_->createErrors.pop_front();
    co_return e;
  }
  if (store_->record_) {
    co_return alreadyExists();
  }
  store_->setRecord(std::move(record));
  knownVersion_ = store_->resourceVersion_;
  co_return Ok{};
}

net::awaitable<kube::Result<Ok>> FakeLeaseLock::update(LeaderElectionRecord record) {
  store_->calls_.push_back({"update", identity_, store_->clock_->now()});
  const bool proceed = co_await waitWhileHung(&store_->hangUpdates);
  if (!proceed) {
    co_return kube::Error::cancelled();
  }
  maybeThrow(&store_->updateThrows, "update");
  if (!store_->updateErrors.empty()) {
    kube::Error e = store_->updateErrors.front();
    store_->updateErrors.pop_front();
    co_return e;
  }
  if (!knownVersion_) {
    co_return kube::Error::config("lease not initialized, call get or create first");
  }
  if (!store_->record_) {
    co_return notFound();
  }
  if (*knownVersion_ != store_->resourceVersion_) {
    co_return conflict();
  }
  store_->setRecord(std::move(record));
  knownVersion_ = store_->resourceVersion_;
  co_return Ok{};
}

}  // namespace egress::leaderelection::testing
