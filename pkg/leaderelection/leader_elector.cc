#include "pkg/leaderelection/leader_elector.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <optional>
#include <random>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <spdlog/spdlog.h>

#include "pkg/base/notifier.h"
#include "pkg/leaderelection/leader_metrics.h"

namespace egress::leaderelection {
namespace {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;
using std::chrono::seconds;

}  // namespace

Result<Ok, std::string> validateConfig(const LeaderElectionConfig& config) {
  if (config.leaseDuration <= config.renewDeadline) {
    return std::string("leaseDuration must be greater than renewDeadline");
  }
  // As Go computes it: time.Duration(JitterFactor * float64(RetryPeriod)), in nanoseconds.
  const auto jittered = nanoseconds(static_cast<int64_t>(
      kJitterFactor * static_cast<double>(duration_cast<nanoseconds>(config.retryPeriod).count())));
  if (config.renewDeadline <= jittered) {
    return std::string("renewDeadline must be greater than retryPeriod*JitterFactor");
  }
  if (config.leaseDuration.count() < 1) {
    return std::string("leaseDuration must be greater than zero");
  }
  if (config.renewDeadline.count() < 1) {
    return std::string("renewDeadline must be greater than zero");
  }
  if (config.retryPeriod.count() < 1) {
    return std::string("retryPeriod must be greater than zero");
  }
  // Not in client-go (deliberate): the lease carries leaseDurationSeconds, whole seconds
  // truncated, and that is what every other candidate waits. With leaseDuration 4.5s and
  // renewDeadline 4.2s they would wait 4s, less than this leader may keep leading without a
  // renewal; with leaseDuration under 1s they would wait nothing at all.
  if (duration_cast<seconds>(config.leaseDuration) <= config.renewDeadline) {
    return std::string(
        "leaseDuration, written to the lease in whole seconds, must be greater than "
        "renewDeadline");
  }
  if (!config.callbacks.onStartedLeading) {
    return std::string("OnStartedLeading callback must not be nil");
  }
  if (!config.callbacks.onStoppedLeading) {
    return std::string("OnStoppedLeading callback must not be nil");
  }
  if (config.lock == nullptr) {
    return std::string("Lock must not be nil.");
  }
  if (config.lock->identity().empty()) {
    return std::string("Lock identity is empty");
  }
  return Ok{};
}

class LeaderElector::State : public std::enable_shared_from_this<State> {
 public:
  State(Clock& clock, LeaderElectionConfig config, prometheus::Registry* registry);

  static net::awaitable<void> run(std::shared_ptr<State> self);
  void stop();
  void abandon();

  bool isLeader() const { return leading_.load(); }
  const LeaderElectionRecord& observedRecord() const { return observedRecord_; }
  const std::string& identity() const { return config_.lock->identity(); }

 private:
  // A lock request running as a coroutine of its own, so the elector can stop waiting for it at
  // a deadline (a hung request must not keep a leader believing it leads).
  struct Operation {
    enum class Kind { TryAcquireOrRenew, Release };
    explicit Operation(Kind k) : kind(k) {}
    Kind kind;
    bool done = false;
    bool succeeded = false;
    // Bound to the request's coroutine: emitted when its deadline passes (client-go runs a
    // renewal under a RenewDeadline context for the same reason).
    net::cancellation_signal cancel;
  };

  // Everything run() does before it waits for the last request.
  net::awaitable<void> campaign();
  // The start of the attempt that acquired the lease; nullopt after stop().
  net::awaitable<std::optional<Clock::TimePoint>> acquire();
  // How renew() ended: stop() while the lease was still ours (a graceful stop), or the lease was
  // lost (not renewed within renewDeadline, or another holder seen).
  struct RenewEnd {
    bool stopped = false;
    Clock::TimePoint lastRenew{};  // start of the last successful renewal
  };
  // Returns when leadership ends (renew failed for renewDeadline, lost to another holder, stop).
  net::awaitable<RenewEnd> renew(Clock::TimePoint acquiredAt);
  // After a graceful stop: runs onStoppedLeading and keeps renewing the lease until it completed.
  net::awaitable<void> drainHoldingLease(Clock::TimePoint lastRenew);
  struct HookRun;
  static net::awaitable<void> runStoppedHook(std::shared_ptr<State> self,
                                             std::shared_ptr<HookRun> run);
  net::awaitable<void> release();
  net::awaitable<bool> tryAcquireOrRenew();
  net::awaitable<bool> releaseLease(Clock::TimePoint deadline);

  // Starts `kind` and waits until it completes, `deadline` passes or (if `stoppable`) stop();
  // false unless it completed and succeeded. At the deadline the request is cancelled (it ends
  // at once with Cancelled); after stop() it is left to finish on its own, since it may be the
  // one that makes this candidate holder and release() has to know.
  net::awaitable<bool> attempt(Operation::Kind kind, Clock::TimePoint deadline, bool stoppable);
  static net::awaitable<void> runOperation(std::shared_ptr<State> self,
                                           std::shared_ptr<Operation> op,
                                           Clock::TimePoint deadline);
  // Waits for the request left in flight by attempt(), if any.
  net::awaitable<void> waitForInflight();
  // Sleeps until `t`; false if stop() was called.
  net::awaitable<bool> sleepUntil(Clock::TimePoint t);
  // Until something happened (stop, a request completed) or `deadline` (max: none) passed.
  net::awaitable<void> waitForWake(Clock::TimePoint deadline);

  // When the observed lease runs out, by the local clock: observedTime_ + its leaseDuration.
  Clock::TimePoint observedExpiry() const;
  bool isLeaseValid(Clock::TimePoint now) const;
  bool observedSelfAsHolder() const;
  void setObservedRecord(const LeaderElectionRecord& record);
  void maybeReportTransition();
  Clock::Duration candidateWait();

  Clock& clock_;
  LeaderElectionConfig config_;
  LeaderMetrics metrics_;
  net::any_io_executor executor_;
  // Made by run() on its executor: stop(), abandon() and completed requests notify it.
  std::optional<Notifier> wake_;

  LeaderElectionRecord observedRecord_;
  Clock::TimePoint observedTime_{};
  // client-go's observedRawRecord: the record the last get() returned, to notice a change.
  std::optional<LeaderElectionRecord> lastFetched_;
  std::string reportedLeader_;

  std::shared_ptr<Operation> inflight_;
  std::atomic<bool> leading_{false};
  bool started_ = false;
  bool stopping_ = false;
  // The elector is gone: no new request, no callback, no clock, no metrics; only wind down.
  bool abandoned_ = false;
};

Result<std::unique_ptr<LeaderElector>, std::string> LeaderElector::create(
    Clock& clock, LeaderElectionConfig config, prometheus::Registry* registry) {
  auto valid = validateConfig(config);
  if (!valid) {
    return valid.error();
  }
  auto state = std::make_shared<State>(clock, std::move(config), registry);
  return std::unique_ptr<LeaderElector>(new LeaderElector(std::move(state)));
}

LeaderElector::LeaderElector(std::shared_ptr<State> state) : state_(std::move(state)) {}

LeaderElector::~LeaderElector() {
  state_->abandon();
}

net::awaitable<void> LeaderElector::run() {
  return State::run(state_);
}

void LeaderElector::stop() {
  state_->stop();
}

bool LeaderElector::isLeader() const {
  return state_->isLeader();
}

const std::string& LeaderElector::getLeader() const {
  return state_->observedRecord().holderIdentity;
}

const LeaderElectionRecord& LeaderElector::observedRecord() const {
  return state_->observedRecord();
}

const std::string& LeaderElector::identity() const {
  return state_->identity();
}

LeaderElector::State::State(Clock& clock, LeaderElectionConfig config,
                            prometheus::Registry* registry)
    : clock_(clock), config_(std::move(config)), metrics_(registry, config_.name) {
  // client-go sets the gauge off when the elector is built, so it exists (as 0) from the start.
  metrics_.leaderOff();
  if (!config_.random) {
    auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
    config_.random = [engine] { return std::uniform_real_distribution<double>(0.0, 1.0)(*engine); };
  }
}

void LeaderElector::State::stop() {
  stopping_ = true;
  if (wake_) {
    wake_->notify();
  }
}

void LeaderElector::State::abandon() {
  abandoned_ = true;
  if (leading_) {
    leading_ = false;
    metrics_.leaderOff();
  }
  stop();
}

net::awaitable<void> LeaderElector::State::run(std::shared_ptr<State> self) {
  if (self->started_) {
    spdlog::error("leader election {}: run() called twice; an elector campaigns once",
                  self->config_.lock->describe());
    co_return;
  }
  self->started_ = true;
  self->executor_ = co_await net::this_coro::executor;
  self->wake_.emplace(self->executor_);
  std::exception_ptr failure;
  try {
    co_await self->campaign();
  } catch (...) {
    failure = std::current_exception();  // from a callback
  }
  co_await self->waitForInflight();
  if (failure) {
    std::rethrow_exception(failure);
  }
}

net::awaitable<void> LeaderElector::State::campaign() {
  std::optional<Clock::TimePoint> acquiredAt = co_await acquire();
  if (abandoned_) {
    co_return;
  }
  if (acquiredAt) {
    leading_ = true;
    metrics_.leaderOn();
    spdlog::info("leader election: {} successfully acquired lease {}", identity(),
                 config_.lock->describe());
    config_.callbacks.onStartedLeading();
    RenewEnd end{.stopped = true, .lastRenew = *acquiredAt};
    if (!stopping_) {
      end = co_await renew(*acquiredAt);
    }
    if (abandoned_) {
      co_return;
    }
    leading_ = false;
    spdlog::info("leader election: {} stopped leading {}", identity(), config_.lock->describe());
    if (end.stopped) {
      co_await drainHoldingLease(end.lastRenew);
      metrics_.leaderOff();
    } else {
      metrics_.leaderOff();
      co_await config_.callbacks.onStoppedLeading();
    }
  } else {
    // client-go defers OnStoppedLeading, so it runs even for a candidate that never led.
    co_await config_.callbacks.onStoppedLeading();
  }
  // client-go calls OnStoppedLeading after release() without waiting for the work to stop. We
  // await it BEFORE releasing (deliberate): it is our only signal to the work the lease guards,
  // and that work must have stopped before a successor can take the lease (what client-go's
  // ReleaseOnCancel documentation demands of the caller).
  if (abandoned_) {
    co_return;
  }
  co_await waitForInflight();
  // client-go releases when renew() returns with ReleaseOnCancel, whatever the reason. A request
  // that completed after we stopped waiting (stop() during acquire) may have made us holder too.
  if (!abandoned_ && config_.releaseOnCancel && observedSelfAsHolder()) {
    co_await release();
  }
}

// client-go's acquire: wait.JitterUntil(tryAcquireOrRenew, RetryPeriod, JitterFactor, sliding):
// the first attempt at once, then one every Jitter(RetryPeriod, 1.2) = RetryPeriod * [1, 2.2)
// after the previous ended. Deliberate difference, for a bounded failover: a candidate sees the
// leader's last renewal only at its next attempt, and judges expiry from then, so client-go's
// upward jitter lets a dead leader go unreplaced for up to leaseDuration + 2 * 2.2 * retryPeriod.
// Ours waits retryPeriod * (1 - 0.2 * random), in (0.8, 1] * retryPeriod: still spread, so
// candidates that start together do not stay in step, but never longer than retryPeriod, and it
// also attempts exactly when the lease it observed expires. A dead leader is so replaced within
// leaseDuration + retryPeriod (plus request latency) of its last renewal, a released lease within
// retryPeriod. Safety does not change: expiry is still judged from when the change was seen.
net::awaitable<std::optional<Clock::TimePoint>> LeaderElector::State::acquire() {
  spdlog::info("leader election: {} attempting to acquire lease {}", identity(),
               config_.lock->describe());
  while (!stopping_) {
    const auto start = clock_.now();
    const bool acquired = co_await attempt(Operation::Kind::TryAcquireOrRenew,
                                           Clock::TimePoint::max(), /*stoppable=*/true);
    if (abandoned_) {
      break;
    }
    maybeReportTransition();
    if (acquired) {
      co_return start;
    }
    const auto now = clock_.now();
    auto next = now + candidateWait();
    const auto expiry = observedExpiry();
    if (expiry > now && expiry < next) {
      next = expiry;
    }
    const bool slept = co_await sleepUntil(next);
    if (!slept) {
      break;
    }
  }
  co_return std::nullopt;
}

// client-go's renew: every RetryPeriod (sliding) a poll that tries at once and then every
// RetryPeriod until it succeeds or RenewDeadline passes. Deliberate differences:
//  - The deadline counts from the start of the last SUCCESSFUL renewal (the earliest moment the
//    write can have landed), not from the start of the poll. client-go's allows up to
//    RetryPeriod + RenewDeadline after it, which with short timings (4s/3s/1s) leaves no margin
//    before the others' LeaseDuration runs out; ours keeps LeaseDuration - RenewDeadline.
//  - A request still in flight at the deadline does not extend it (attempt() stops waiting).
//  - Seeing another holder in the lock ends leadership at once: someone took the lease, and
//    leading on until the deadline would make two leaders.
net::awaitable<LeaderElector::State::RenewEnd> LeaderElector::State::renew(
    Clock::TimePoint acquiredAt) {
  auto lastRenew = acquiredAt;
  auto nextAttempt = clock_.now() + config_.retryPeriod;
  for (;;) {
    const auto deadline = lastRenew + config_.renewDeadline;
    const bool slept = co_await sleepUntil(std::min(nextAttempt, deadline));
    if (!slept) {
      co_return RenewEnd{.stopped = true, .lastRenew = lastRenew};
    }
    if (clock_.now() >= deadline) {
      spdlog::warn("leader election: {} failed to renew lease {}: no renewal for {} ms", identity(),
                   config_.lock->describe(), config_.renewDeadline.count());
      co_return RenewEnd{.stopped = false, .lastRenew = lastRenew};
    }
    const auto start = clock_.now();
    const bool renewed =
        co_await attempt(Operation::Kind::TryAcquireOrRenew, deadline, /*stoppable=*/true);
    if (stopping_) {
      // The renewal left in flight may still land; drainHoldingLease() waits for it first.
      co_return RenewEnd{.stopped = true, .lastRenew = renewed ? start : lastRenew};
    }
    maybeReportTransition();
    if (renewed) {
      lastRenew = start;
      nextAttempt = clock_.now() + config_.retryPeriod;
      continue;
    }
    if (!observedRecord_.holderIdentity.empty() && !observedSelfAsHolder()) {
      spdlog::warn("leader election: {} lost lease {} to {}", identity(), config_.lock->describe(),
                   observedRecord_.holderIdentity);
      co_return RenewEnd{.stopped = false, .lastRenew = lastRenew};
    }
    // PollUntilContextTimeout is not sliding: the next try is RetryPeriod after this one began.
    nextAttempt = start + config_.retryPeriod;
  }
}

// The onStoppedLeading hook of a graceful stop, run beside the renewals that keep the lease while
// it drains the guarded work. Static, holding the state, like runOperation.
struct LeaderElector::State::HookRun {
  bool done = false;
  std::exception_ptr failure;
};

net::awaitable<void> LeaderElector::State::runStoppedHook(std::shared_ptr<State> self,
                                                          std::shared_ptr<HookRun> run) {
  try {
    co_await self->config_.callbacks.onStoppedLeading();
  } catch (...) {
    run->failure = std::current_exception();
  }
  run->done = true;
  self->wake_->notify();
}

// Deliberate difference from client-go, whose renew loop ends as soon as its context is
// cancelled: after a graceful stop() the leader goes on renewing every retryPeriod until
// onStoppedLeading has completed, so the lease cannot expire under work that still writes,
// however long the drain takes (controller-runtime gets the same effect by cancelling the
// leader-election context only after its runnables stopped). If a renewal fails for
// renewDeadline or another holder shows up, the lease is lost: we stop renewing and say so, and
// the hook carries on (it is all we can do; the caller bounds its drain).
net::awaitable<void> LeaderElector::State::drainHoldingLease(Clock::TimePoint lastRenew) {
  auto run = std::make_shared<HookRun>();
  net::co_spawn(executor_, runStoppedHook(shared_from_this(), run), rethrowUnhandled);
  bool holding = true;
  auto nextAttempt = lastRenew + config_.retryPeriod;
  while (!run->done && !abandoned_) {
    if (!holding) {
      co_await waitForWake(Clock::TimePoint::max());
      continue;
    }
    const auto deadline = lastRenew + config_.renewDeadline;
    const auto wakeAt = std::min(nextAttempt, deadline);
    if (clock_.now() < wakeAt) {
      co_await waitForWake(wakeAt);
      continue;  // re-check: the hook may have completed
    }
    if (clock_.now() >= deadline) {
      spdlog::warn(
          "leader election: {} could not renew lease {} while its work drained; the lease "
          "expires under work that still runs",
          identity(), config_.lock->describe());
      holding = false;
      continue;
    }
    co_await waitForInflight();
    const auto start = clock_.now();
    const bool renewed =
        co_await attempt(Operation::Kind::TryAcquireOrRenew, deadline, /*stoppable=*/false);
    if (abandoned_) {
      break;
    }
    maybeReportTransition();
    if (renewed) {
      lastRenew = start;
      nextAttempt = clock_.now() + config_.retryPeriod;
    } else if (!observedRecord_.holderIdentity.empty() && !observedSelfAsHolder()) {
      spdlog::warn("leader election: {} lost lease {} to {} while its work drained", identity(),
                   config_.lock->describe(), observedRecord_.holderIdentity);
      holding = false;
    } else {
      nextAttempt = start + config_.retryPeriod;
    }
  }
  while (!run->done) {
    co_await waitForWake(Clock::TimePoint::max());
  }
  if (run->failure) {
    std::rethrow_exception(run->failure);
  }
}

// client-go's release runs with a timeout of RenewDeadline on a fresh context: so here, and it
// is not cut short by stop() (stop() is what asked for it).
net::awaitable<void> LeaderElector::State::release() {
  const auto deadline = clock_.now() + config_.renewDeadline;
  const bool released = co_await attempt(Operation::Kind::Release, deadline, /*stoppable=*/false);
  if (abandoned_) {
    co_return;
  }
  if (released) {
    spdlog::info("leader election: {} released lease {}", identity(), config_.lock->describe());
  } else {
    spdlog::warn("leader election: {} could not release lease {}", identity(),
                 config_.lock->describe());
  }
  co_await waitForInflight();
}

// After every lock call: if the elector was destroyed meanwhile, the request ends here, touching
// neither the clock nor the metrics nor the callbacks (which may be gone with their owner).
net::awaitable<bool> LeaderElector::State::tryAcquireOrRenew() {
  const auto now = clock_.now();
  const auto wallNow = clock_.wallNow();
  LeaderElectionRecord record;
  record.holderIdentity = identity();
  record.leaseDurationSeconds =
      static_cast<int32_t>(duration_cast<seconds>(config_.leaseDuration).count());
  record.acquireTime = wallNow;
  record.renewTime = wallNow;

  // 1. Fast path: the leader updates optimistically, assuming the version it wrote last is
  // still the current one.
  if (observedSelfAsHolder() && isLeaseValid(now)) {
    record.acquireTime = observedRecord_.acquireTime;
    record.leaderTransitions = observedRecord_.leaderTransitions;
    auto updated = co_await config_.lock->update(record);
    if (abandoned_) {
      co_return false;
    }
    if (updated) {
      setObservedRecord(record);
      co_return true;
    }
    spdlog::warn(
        "leader election: failed to update lock {} optimistically: {}; falling back "
        "to slow path",
        config_.lock->describe(), updated.error().message());
  }

  // 2. Obtain or create the record.
  auto got = co_await config_.lock->get();
  if (abandoned_) {
    co_return false;
  }
  if (!got) {
    if (!got.error().isNotFound()) {
      spdlog::warn("leader election: error retrieving lock {}: {}", config_.lock->describe(),
                   got.error().message());
      co_return false;
    }
    auto created = co_await config_.lock->create(record);
    if (abandoned_) {
      co_return false;
    }
    if (!created) {
      spdlog::warn("leader election: error initially creating lock {}: {}",
                   config_.lock->describe(), created.error().message());
      co_return false;
    }
    setObservedRecord(record);
    co_return true;
  }

  // 3. A record that changed since the last read restarts the expiry clock: observedTime is
  // the LOCAL now; the record's own renewTime is never looked at.
  if (!lastFetched_ || *lastFetched_ != got->record) {
    setObservedRecord(got->record);
    lastFetched_ = got->record;
  }
  // An empty holder (a released lease) may be taken at once.
  if (!got->record.holderIdentity.empty() && isLeaseValid(now) && !observedSelfAsHolder()) {
    spdlog::debug("leader election: lock {} is held by {} and has not yet expired",
                  config_.lock->describe(), got->record.holderIdentity);
    co_return false;
  }

  // 4. Write our record: a renewal keeps acquireTime and the transition count, a takeover
  // counts one more transition.
  if (observedSelfAsHolder()) {
    record.acquireTime = got->record.acquireTime;
    record.leaderTransitions = got->record.leaderTransitions;
    metrics_.slowpathExercised();
  } else {
    record.leaderTransitions = got->record.leaderTransitions + 1;
  }
  auto updated = co_await config_.lock->update(record);
  if (abandoned_) {
    co_return false;
  }
  if (!updated) {
    spdlog::warn("leader election: failed to update lock {}: {}", config_.lock->describe(),
                 updated.error().message());
    co_return false;
  }
  setObservedRecord(record);
  co_return true;
}

// client-go's release, retrying on Conflict until `deadline`. Deliberate difference: whether we
// hold the lease is judged from the record just read, not from the last observed one, so a
// candidate that lost the lease unknowingly never blanks its successor's record.
net::awaitable<bool> LeaderElector::State::releaseLease(Clock::TimePoint deadline) {
  for (;;) {
    auto got = co_await config_.lock->get();
    if (abandoned_) {
      co_return false;
    }
    if (!got) {
      spdlog::warn("leader election: error retrieving lock {} to release it: {}",
                   config_.lock->describe(), got.error().message());
      co_return false;
    }
    if (got->record.holderIdentity != identity()) {
      co_return true;
    }
    const auto wallNow = clock_.wallNow();
    LeaderElectionRecord released;
    released.leaseDurationSeconds = 1;
    released.acquireTime = wallNow;
    released.renewTime = wallNow;
    released.leaderTransitions = got->record.leaderTransitions;
    auto updated = co_await config_.lock->update(released);
    if (abandoned_) {
      co_return false;
    }
    if (updated) {
      setObservedRecord(released);
      co_return true;
    }
    if (!updated.error().isConflict() || clock_.now() >= deadline) {
      spdlog::warn("leader election: failed to release lock {}: {}", config_.lock->describe(),
                   updated.error().message());
      co_return false;
    }
  }
}

net::awaitable<bool> LeaderElector::State::attempt(Operation::Kind kind, Clock::TimePoint deadline,
                                                   bool stoppable) {
  auto op = std::make_shared<Operation>(kind);
  inflight_ = op;
  net::co_spawn(executor_, runOperation(shared_from_this(), op, deadline),
                net::bind_cancellation_slot(op->cancel.slot(), rethrowUnhandled));
  while (!op->done && !abandoned_ && !(stoppable && stopping_) && clock_.now() < deadline) {
    co_await waitForWake(deadline);
  }
  if (!op->done) {
    // Without this a renewal sent into a partition stayed in flight until the link healed (the
    // TCP connection outlives the partition), and with it the deposed leader's process, which
    // waits for it before it ends (docs/reliability.md, case 3).
    if (clock_.now() >= deadline) {
      op->cancel.emit(net::cancellation_type::terminal);
    }
    co_return false;  // run() waits for it before it returns
  }
  inflight_.reset();
  co_return op->succeeded;
}

// Static, holding the state: it may complete after the elector is gone. A request that throws
// (a bug, bad_alloc) is a failed attempt like one that returns an error; an escaping exception
// would otherwise leave `done` unset and run() waiting for ever.
net::awaitable<void> LeaderElector::State::runOperation(std::shared_ptr<State> self,
                                                        std::shared_ptr<Operation> op,
                                                        Clock::TimePoint deadline) {
  bool succeeded = false;
  try {
    if (op->kind == Operation::Kind::Release) {
      succeeded = co_await self->releaseLease(deadline);
    } else {
      succeeded = co_await self->tryAcquireOrRenew();
    }
  } catch (const std::exception& e) {
    spdlog::warn("leader election: request on lock {} failed: {}", self->config_.lock->describe(),
                 e.what());
  } catch (...) {
    spdlog::warn("leader election: request on lock {} failed with an unknown exception",
                 self->config_.lock->describe());
  }
  op->succeeded = succeeded;
  op->done = true;
  self->wake_->notify();
}

net::awaitable<void> LeaderElector::State::waitForInflight() {
  while (inflight_ && !inflight_->done) {
    co_await wake_->wait();
  }
  inflight_.reset();
}

net::awaitable<bool> LeaderElector::State::sleepUntil(Clock::TimePoint t) {
  while (!stopping_ && clock_.now() < t) {
    co_await waitForWake(t);
  }
  co_return !stopping_;
}

net::awaitable<void> LeaderElector::State::waitForWake(Clock::TimePoint deadline) {
  if (deadline == Clock::TimePoint::max()) {
    co_await wake_->wait();
  } else {
    co_await wake_->waitUntil(clock_, deadline, Notifier::Place::Back);
  }
}

// The holder's leaseDurationSeconds (from the record), counted from when WE saw it change.
Clock::TimePoint LeaderElector::State::observedExpiry() const {
  return observedTime_ + seconds(observedRecord_.leaseDurationSeconds);
}

bool LeaderElector::State::isLeaseValid(Clock::TimePoint now) const {
  return observedExpiry() > now;
}

bool LeaderElector::State::observedSelfAsHolder() const {
  return observedRecord_.holderIdentity == identity();
}

void LeaderElector::State::setObservedRecord(const LeaderElectionRecord& record) {
  observedRecord_ = record;
  observedTime_ = clock_.now();
}

// client-go calls OnNewLeader in a goroutine; here it is a plain call (callbacks don't block).
void LeaderElector::State::maybeReportTransition() {
  if (observedRecord_.holderIdentity == reportedLeader_) {
    return;
  }
  reportedLeader_ = observedRecord_.holderIdentity;
  if (config_.callbacks.onNewLeader) {
    config_.callbacks.onNewLeader(reportedLeader_);
  }
}

// wait.Jitter(d, JitterFactor): d + random * 1.2 * d, in [d, 2.2d).
Clock::Duration LeaderElector::State::candidateWait() {
  const double r = config_.random();
  const Clock::Duration d = config_.retryPeriod;
  return d - duration_cast<Clock::Duration>(std::chrono::duration<double, Clock::Duration::period>(
                 r * kCandidateJitter * static_cast<double>(d.count())));
}

}  // namespace egress::leaderelection
