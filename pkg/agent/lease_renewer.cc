#include "pkg/agent/lease_renewer.h"

#include <spdlog/spdlog.h>

namespace egress::agent {

struct LeaseRenewer::State {
  leaderelection::LeaseLock* lock = nullptr;
  Clock* clock = nullptr;
  Options options;
  std::unique_ptr<Timer> timer;
  bool stopped = false;
  bool running = false;
  // The lock holds the version of our last write: the next renewal is one update, not a get
  // and an update, until a write fails.
  bool haveVersion = false;
  std::optional<bool> lastOk;
  // Monotonic start of the last successful renewal: the earliest the operator can have seen it.
  std::optional<Clock::TimePoint> lastStarted;
  // renewSoon() was called: the next attempt is not to wait for the interval.
  bool soon = false;
  int failures = 0;
};

namespace {

leaderelection::LeaderElectionRecord recordAt(const std::string& identity, meta::Time now,
                                              std::chrono::seconds duration) {
  leaderelection::LeaderElectionRecord r;
  r.holderIdentity = identity;
  r.leaseDurationSeconds = static_cast<int32_t>(duration.count());
  r.acquireTime = now;
  r.renewTime = now;
  return r;
}

net::awaitable<Result<Ok, std::string>> updateOnly(leaderelection::LeaseLock& lock, meta::Time now,
                                                   std::chrono::seconds duration) {
  auto record = recordAt(lock.identity(), now, duration);
  auto updated = co_await lock.update(record);
  if (!updated) {
    co_return unexpected("renew " + lock.describe() + ": " + updated.error().message());
  }
  co_return Ok{};
}

}  // namespace

net::awaitable<Result<Ok, std::string>> renewOnce(leaderelection::LeaseLock& lock, meta::Time now,
                                                  std::chrono::seconds duration) {
  auto record = recordAt(lock.identity(), now, duration);
  auto snapshot = co_await lock.get();
  if (!snapshot) {
    if (!snapshot.error().isNotFound()) {
      co_return unexpected("read " + lock.describe() + ": " + snapshot.error().message());
    }
    auto created = co_await lock.create(record);
    if (!created) {
      co_return unexpected("create " + lock.describe() + ": " + created.error().message());
    }
    co_return Ok{};
  }
  if (snapshot->record.holderIdentity == lock.identity()) {
    record.acquireTime = snapshot->record.acquireTime;
  }
  record.leaderTransitions = snapshot->record.leaderTransitions;
  auto updated = co_await lock.update(record);
  if (!updated) {
    co_return unexpected("renew " + lock.describe() + ": " + updated.error().message());
  }
  co_return Ok{};
}

LeaseRenewer::LeaseRenewer(leaderelection::LeaseLock& lock, Clock& clock, Options options)
    : options_(options), state_(std::make_shared<State>()) {
  state_->lock = &lock;
  state_->clock = &clock;
  state_->options = std::move(options);
  state_->timer = clock.makeTimer();
}

LeaseRenewer::~LeaseRenewer() {
  stop();
}

net::awaitable<Result<Ok, std::string>> LeaseRenewer::start() {
  co_return Ok{};
}

net::awaitable<void> LeaseRenewer::run() {
  if (state_->running || state_->stopped) {
    co_return;
  }
  state_->running = true;
  co_await loop(state_);
}

void LeaseRenewer::stop() {
  state_->stopped = true;
  state_->timer->cancel();
}

net::awaitable<void> LeaseRenewer::loop(std::shared_ptr<State> state) {
  while (!state->stopped) {
    // What is asked for before this attempt starts is in it.
    state->soon = false;
    const Clock::TimePoint started = state->clock->now();
    const meta::Time now = state->clock->wallNow();
    const auto duration = state->options.duration;
    // Two statements, not one conditional with two co_awaits (g++ 12 miscompiles that).
    Result<Ok, std::string> done = Ok{};
    if (state->haveVersion) {
      done = co_await updateOnly(*state->lock, now, duration);
    } else {
      done = co_await renewOnce(*state->lock, now, duration);
    }
    if (state->stopped) {
      break;
    }
    const bool ok = done.ok();
    state->haveVersion = ok;
    if (ok) {
      state->lastStarted = started;
      state->failures = 0;
    } else {
      ++state->failures;
      spdlog::warn("egw-agent: {} (failure {} in a row)", done.error(), state->failures);
    }
    if (state->lastOk != ok) {
      state->lastOk = ok;
      if (state->options.onChange) {
        state->options.onChange();
      }
    }
    // Asked during the attempt: its body may predate the request.
    if (state->soon) {
      continue;
    }
    const auto deadline = state->clock->now() + state->options.renewInterval;
    // Cancelled by stop() (the loop ends) or by renewSoon() (the next attempt starts now).
    co_await state->timer->waitUntil(deadline);
  }
  state->running = false;
}

std::optional<Clock::TimePoint> LeaseRenewer::freshUntil() const {
  if (!state_->lastStarted) {
    return std::nullopt;
  }
  return *state_->lastStarted + options_.duration - kFreshnessMargin;
}

bool LeaseRenewer::fresh(Clock::TimePoint now) const {
  auto until = freshUntil();
  return until && now < *until;
}

void LeaseRenewer::renewSoon() {
  state_->soon = true;
  state_->timer->cancel();
}

bool LeaseRenewer::attempted() const {
  return state_->lastOk.has_value();
}

int LeaseRenewer::consecutiveFailures() const {
  return state_->failures;
}

}  // namespace egress::agent
