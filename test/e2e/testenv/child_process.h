// File: child_process.h
//
// A helper process of an e2e test (elector_process, controller_process): started with
// posix_spawn, stdin from /dev/null and stdout and stderr into a log file, with default
// dispositions for SIGTERM and SIGINT and no signal blocked (whatever the test binary and its
// environment did with them), so that the test's kill(2) reaches the child's own handlers.
// The test signals and reaps it; if it still runs when the object goes, it is SIGKILLed and
// reaped.
//
//   ChildProcess p({"/path/to/binary", "--flag=value"}, dir + "/p.log");
//   ASSERT_TRUE(p.error().empty()) << p.error();
//   p.signal(SIGTERM);
//   auto status = p.reap(std::chrono::seconds(30));   // a wait status, if it exited in time
//                                                     // (kube::describeWaitStatus says it)
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace egress::testenv {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with `argv`. On failure, running() is false and error() says why.
  ChildProcess(const std::vector<std::string>& argv, std::string logFile);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  const std::string& error() const { return error_; }
  bool running() const { return pid_ > 0 && !exitStatus_; }
  pid_t pid() const { return pid_; }
  void signal(int sig) const;
  // Waits up to `timeout` for the process to exit; its wait status, if it did (also later).
  std::optional<int> reap(std::chrono::steady_clock::duration timeout);
  // Everything it wrote to stdout and stderr so far.
  std::string log() const;

 private:
  std::string logFile_;
  std::string error_;
  pid_t pid_ = -1;
  std::optional<int> exitStatus_;
};

}  // namespace egress::testenv
