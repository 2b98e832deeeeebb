// File: eventually.h
//
// Polling for e2e tests that watch a real cluster or process settle: eventually(check, timeout)
// calls `check` every 250 ms until it holds or `timeout` passes (then once more).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace egress::testenv {

inline bool eventually(const std::function<bool()>& check, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (check()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return check();
}

}  // namespace egress::testenv
