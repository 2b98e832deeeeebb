// File: child_process.h
//
// A program the e2e test runs as its own process (the operator, a second replica of it): its
// output goes to a log file, it starts with default signal dispositions whatever the test
// process did with SIGTERM/SIGINT, it can be signalled and reaped, and it is SIGKILLed and
// reaped when the object goes, so no test leaves one behind.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace egress::testenv {

class ChildProcess {
 public:
  // Starts argv[0] with `argv`; `extraEnv` entries ("NAME=value") are added to this process's
  // environment. A spawn failure leaves the object not running(), with error() set.
  ChildProcess(const std::vector<std::string>& argv, std::string logFile,
               const std::vector<std::string>& extraEnv = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  const std::string& error() const { return error_; }
  void signal(int sig) const;
  // Waits up to `timeout` for the process to exit; its exit code (128 + signal number when a
  // signal ended it), or nullopt if it still runs.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  std::string log() const;
  const std::string& logFile() const { return logFile_; }

 private:
  std::string logFile_;
  std::string error_;
  pid_t pid_ = -1;
  std::optional<int> exitCode_;
};

// A loopback TCP port nobody listens on right now (bound, read and closed).
int freeLoopbackPort();

// GET http://127.0.0.1:<port><path>, its body; "" if it could not be fetched.
std::string httpGet(int port, const std::string& path);

}  // namespace egress::testenv
