#include "pkg/kube/child_process.h"

#include <algorithm>
#include <cerrno>
#include <memory>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace egress::kube {
namespace {

constexpr auto kUseTuple = net::as_tuple(net::use_awaitable);
// Without a pidfd (kernels before 5.3, some seccomp profiles) the exit is polled: often at
// first, since most plugins answer quickly, then less.
constexpr std::chrono::milliseconds kFirstPoll{2};
constexpr std::chrono::milliseconds kMaxPoll{50};

// Closes on scope exit; the child's ends must be closed in the parent before reading, or EOF
// never comes.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() { reset(-1); }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  FileDescriptor read;
  FileDescriptor write;
};

bool openPipe(Pipe& p) {
  int fds[2];
  // Close-on-exec, so neither end leaks into this or any other child; dup2 onto the child's
  // stdout/stderr clears the flag on the copies it needs.
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return false;
  }
  p.read.reset(fds[0]);
  p.write.reset(fds[1]);
  return ::fcntl(p.read.get(), F_SETFL, O_NONBLOCK) == 0;
}

// The spawn resources, released however the spawn goes.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

void killGroup(pid_t pid) {
  // The child leads its own process group, so helpers it started die with it.
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

struct Spawned {
  pid_t pid = 0;
  int error = 0;  // an errno; pid is 0 then
};

Spawned spawn(const ChildProcessOptions& options, int outFd, int errFd) {
  SpawnSetup setup;
  posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, outFd, 1);
  posix_spawn_file_actions_adddup2(&setup.actions, errFd, 2);
  // Undo whatever signal setup the operator has (blocked SIGTERM for a signal thread, ignored
  // SIGPIPE): the plugin should start like it would from a shell.
  sigset_t all;
  sigset_t none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&setup.attr, &all);
  posix_spawnattr_setsigmask(&setup.attr, &none);
  posix_spawnattr_setpgroup(&setup.attr, 0);
  posix_spawnattr_setflags(&setup.attr,
                           POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  std::vector<char*> argv;
  for (const auto& a : options.argv) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  std::vector<char*> env;
  for (const auto& e : options.env) {
    env.push_back(const_cast<char*>(e.c_str()));
  }
  env.push_back(nullptr);
  pid_t pid = 0;
  const int rc =
      ::posix_spawnp(&pid, argv[0], &setup.actions, &setup.attr, argv.data(), env.data());
  if (rc != 0) {
    return Spawned{0, rc};
  }
  return Spawned{pid, 0};
}

struct OutputPipe {
  OutputPipe(const net::any_io_executor& ex, int fd, size_t limit) : fd(ex, fd), limit(limit) {}
  net::posix::stream_descriptor fd;
  size_t limit;
  std::string data;
  bool overflow = false;
};

// One run, shared by the supervising coroutine, the two pipe readers and the pidfd wait, so
// whichever of them finishes last frees it.
struct Run {
  Run(const net::any_io_executor& ex, pid_t pid, int outFd, int errFd,
      const ChildProcessOptions& options)
      : pid(pid),
        out(ex, outFd, options.maxStdoutBytes),
        err(ex, errFd, options.maxStderrBytes),
        alarm(ex),
        readersDone(ex),
        pidfd(ex) {}
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  ~Run() {
    if (!reaped) {
      // Abandoned mid-run (the io_context is being destroyed): leave no process behind. After
      // SIGKILL the wait is short.
      killGroup(pid);
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }

  const pid_t pid;
  OutputPipe out;
  OutputPipe err;
  net::steady_timer alarm;  // the supervisor sleeps on it; whatever needs a look cancels it
  net::steady_timer readersDone;
  net::posix::stream_descriptor pidfd;  // closed if the kernel has none for us
  bool pidfdWaiting = false;
  bool reaped = false;
  bool exited = false;  // tells the readers to take what is left and stop
  int readers = 2;
  std::optional<int> waitStatus;
};

// Appends what can be read without blocking. False at EOF or on an error, which close it.
bool drain(OutputPipe& p) {
  char buf[16384];
  while (p.fd.is_open()) {
    const ssize_t n = ::read(p.fd.native_handle(), buf, sizeof buf);
    if (n > 0) {
      const size_t room = p.limit > p.data.size() ? p.limit - p.data.size() : 0;
      p.data.append(buf, std::min(room, static_cast<size_t>(n)));
      p.overflow = p.overflow || static_cast<size_t>(n) > room;
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return true;
    }
    boost::system::error_code ignored;
    p.fd.close(ignored);
  }
  return false;
}

// Reads before every wait, so output that arrived before the first wait is not missed (the
// reactor is edge-triggered).
net::awaitable<void> readOutput(std::shared_ptr<Run> run, OutputPipe* pipe) {
  while (drain(*pipe) && !run->exited) {
    if (pipe->overflow && pipe == &run->out) {
      run->alarm.cancel();  // the supervisor kills the child
    }
    co_await pipe->fd.async_wait(net::posix::descriptor_base::wait_read, kUseTuple);
  }
  if (pipe->overflow && pipe == &run->out) {
    run->alarm.cancel();
  }
  if (--run->readers == 0) {
    run->readersDone.cancel();
  }
}

// True once the child is gone: reaped here, or (ECHILD) by someone ignoring SIGCHLD.
bool reap(Run& run) {
  int status = 0;
  pid_t w = 0;
  do {
    w = ::waitpid(run.pid, &status, WNOHANG);
  } while (w < 0 && errno == EINTR);
  if (w == 0) {
    return false;
  }
  run.reaped = true;
  if (w == run.pid) {
    run.waitStatus = status;
  }
  return true;
}

// Started in the same step as the reap() check before it, so an exit in between is an edge the
// reactor still reports.
void watchPidfd(const std::shared_ptr<Run>& run) {
  if (!run->pidfd.is_open() || run->pidfdWaiting) {
    return;
  }
  run->pidfdWaiting = true;
  run->pidfd.async_wait(net::posix::descriptor_base::wait_read,
                        [run](const boost::system::error_code&) {
                          run->pidfdWaiting = false;
                          run->alarm.cancel();
                        });
}

}  // namespace

net::awaitable<std::variant<ChildProcessResult, int>> runChildProcess(ChildProcessOptions options) {
  Pipe out;
  Pipe err;
  if (options.argv.empty()) {
    co_return EINVAL;
  }
  if (!openPipe(out) || !openPipe(err)) {
    co_return errno;
  }
  const auto spawned = spawn(options, out.write.get(), err.write.get());
  if (spawned.error != 0) {
    co_return spawned.error;
  }
  out.write.reset(-1);
  err.write.reset(-1);
  const auto executor = co_await net::this_coro::executor;
  auto run =
      std::make_shared<Run>(executor, spawned.pid, out.read.release(), err.read.release(), options);
  if (const int fd = static_cast<int>(::syscall(SYS_pidfd_open, run->pid, 0)); fd >= 0) {
    boost::system::error_code ec;
    run->pidfd.assign(fd, ec);
    if (ec) {
      ::close(fd);
    }
  }
  net::co_spawn(executor, readOutput(run, &run->out), net::detached);
  net::co_spawn(executor, readOutput(run, &run->err), net::detached);

  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  bool killed = false;
  bool timedOut = false;
  auto poll = kFirstPoll;
  while (!reap(*run)) {
    const auto now = std::chrono::steady_clock::now();
    if (!killed && (now >= deadline || run->out.overflow)) {
      killGroup(run->pid);
      killed = true;
      timedOut = !run->out.overflow;
    }
    watchPidfd(run);
    auto wake = killed ? std::chrono::steady_clock::time_point::max() : deadline;
    if (!run->pidfd.is_open()) {
      wake = std::min(wake, now + poll);
      poll = std::min(poll * 2, kMaxPoll);
    }
    run->alarm.expires_at(wake);
    co_await run->alarm.async_wait(kUseTuple);
  }

  run->exited = true;
  boost::system::error_code ignored;
  run->out.fd.cancel(ignored);
  run->err.fd.cancel(ignored);
  run->pidfd.close(ignored);
  while (run->readers > 0) {
    run->readersDone.expires_at(std::chrono::steady_clock::time_point::max());
    co_await run->readersDone.async_wait(kUseTuple);
  }
  ChildProcessResult result;
  result.out = std::move(run->out.data);
  result.err = std::move(run->err.data);
  result.waitStatus = run->waitStatus;
  result.timedOut = timedOut;
  result.outTooLarge = run->out.overflow;
  run->out.fd.close(ignored);
  run->err.fd.close(ignored);
  co_return result;
}

std::string describeWaitStatus(int waitStatus) {
  if (WIFEXITED(waitStatus)) {
    return "exit status " + std::to_string(WEXITSTATUS(waitStatus));
  }
  if (WIFSIGNALED(waitStatus)) {
    return "killed by signal " + std::to_string(WTERMSIG(waitStatus));
  }
  return "wait status " + std::to_string(waitStatus);
}

}  // namespace egress::kube
