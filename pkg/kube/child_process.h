// File: child_process.h
//
// Running a short-lived helper program (an exec credential plugin) as a child process awaited on
// the caller's io_context, so the event loop keeps serving watches, workers and lease renewals
// while the program runs: the pipes and the process's exit (a pidfd, or a short poll where
// pidfds are unavailable) are waited for asynchronously, and a program that overstays its
// timeout is killed with its whole process group. Nothing here blocks the thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/awaitable.hpp>

namespace egress::kube {

namespace net = boost::asio;

struct ChildProcessOptions {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH as execvp does
  std::vector<std::string> env;   // the child's whole environment, "NAME=value"
  std::chrono::milliseconds timeout{60000};
  size_t maxStdoutBytes = 4 << 20;   // more is an error (outTooLarge) and kills the child
  size_t maxStderrBytes = 64 << 10;  // more is dropped
};

struct ChildProcessResult {
  std::string out;
  std::string err;
  // From waitpid; nullopt if someone else reaped the child (SIGCHLD set to SIG_IGN).
  std::optional<int> waitStatus;
  bool timedOut = false;
  bool outTooLarge = false;
};

// Runs the program with stdin from /dev/null, in a process group of its own, and collects
// stdout and stderr until it exits. Once it has exited, what is in the pipes is taken without
// waiting for EOF: a daemon it left behind may hold them open. Returns the errno of a failed
// start (ENOENT: not found). Run it on a strand if the io_context has several threads.
net::awaitable<std::variant<ChildProcessResult, int>> runChildProcess(ChildProcessOptions options);

// "exit status 3", "killed by signal 9".
std::string describeWaitStatus(int waitStatus);

}  // namespace egress::kube
