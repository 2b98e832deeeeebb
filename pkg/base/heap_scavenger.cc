#include "pkg/base/heap_scavenger.h"

#include <utility>

#include "pkg/base/heap.h"

namespace egress::base {

struct HeapScavenger::State {
  Clock* clock;
  std::chrono::milliseconds period;
  std::function<void()> release;
  std::unique_ptr<Timer> timer;
  bool stopped = false;
  uint64_t rounds = 0;
};

HeapScavenger::HeapScavenger(Clock& clock, std::chrono::milliseconds period,
                             std::function<void()> release)
    : state_(std::make_shared<State>()) {
  state_->clock = &clock;
  state_->period = period;
  state_->release = release ? std::move(release) : [] { releaseFreeHeap(); };
  state_->timer = clock.makeTimer();
}

net::awaitable<void> HeapScavenger::run() {
  return loop(state_);
}

void HeapScavenger::stop() {
  state_->stopped = true;
  state_->timer->cancel();
}

uint64_t HeapScavenger::rounds() const {
  return state_->rounds;
}

net::awaitable<void> HeapScavenger::loop(std::shared_ptr<State> state) {
  while (!state->stopped) {
    const auto deadline = state->clock->now() + state->period;
    const bool due = co_await state->timer->waitUntil(deadline);
    if (!due || state->stopped) {
      break;
    }
    state->release();
    ++state->rounds;
  }
}

}  // namespace egress::base
