// File: fault_proxy.h
//
// A TCP proxy on loopback between a client (the operator) and the API server's port, for the
// fault-tolerance tests: it passes bytes through (TLS stays end to end), or injects a fault the
// test switches on and off while the client runs:
//   - Blackhole: a network partition. New connections are accepted and read, never answered;
//     existing ones stop moving bytes (what is in flight waits in the kernel, as behind a dead
//     link) and move again when the mode changes back, unless a side gave up meanwhile.
//   - Reset: every connection, existing and new, is closed with a TCP RST.
//   - HttpError: the server answers every request with one HTTP status (429 with Retry-After,
//     503, ...). The client talks TLS, so in this mode the proxy terminates TLS itself with a
//     serving certificate the client trusts (the control plane's own apiserver.crt/.key from its
//     run directory); existing pass-through connections are reset when the mode starts, since a
//     TLS stream cannot be answered by a third party, and clients reconnect into the fault.
// Every connection is a thread of its own; the client's few dozen connections make that cheap.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace egress::testenv {

enum class FaultMode { PassThrough, Blackhole, Reset, HttpError };

struct FaultProxyOptions {
  int upstreamPort = 0;  // on 127.0.0.1
  // The HttpError mode's TLS identity (PEM files); empty: that mode answers nothing.
  std::string certFile;
  std::string keyFile;
};

// What the HttpError mode answers.
struct HttpFault {
  int status = 503;
  int retryAfterSeconds = -1;  // < 0: no Retry-After header
};

class FaultProxy {
 public:
  // Listens on 127.0.0.1:0; nullptr and `error` on failure.
  static std::unique_ptr<FaultProxy> start(const FaultProxyOptions& options, std::string& error);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  void setMode(FaultMode mode);
  void setHttpFault(const HttpFault& fault);
  FaultMode mode() const { return mode_.load(); }

  int accepted() const { return accepted_.load(); }
  int resets() const { return resets_.load(); }
  int faultsAnswered() const { return faultsAnswered_.load(); }
  // Connections open right now.
  int open() const;

  // A copy of kubeconfig `from` whose server `server` is replaced by this proxy's URL, at `to`;
  // "" or what went wrong.
  std::string writeKubeconfig(const std::string& from, const std::string& server,
                              const std::string& to) const;

  struct Connection;

 private:
  explicit FaultProxy(FaultProxyOptions options);
  void acceptLoop();
  // Runs `body` on a detached thread the destructor waits for.
  template <typename Body>
  void spawn(Body body);
  void serve(Connection& c);
  void pump(Connection& c);
  void answerHttp(Connection& c);
  void discard(Connection& c);

  FaultProxyOptions options_;
  int listenFd_ = -1;
  int port_ = 0;
  std::atomic<FaultMode> mode_{FaultMode::PassThrough};
  std::atomic<int> httpStatus_{503};
  std::atomic<int> retryAfter_{-1};
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> resets_{0};
  std::atomic<int> faultsAnswered_{0};
  std::atomic<uint64_t> generation_{0};  // bumped when a mode starts that ends old connections
  void* sslContext_ = nullptr;           // SSL_CTX*, only when the TLS identity is set
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  int live_ = 0;  // threads running (the acceptor and one per connection), under mutex_
  std::vector<std::weak_ptr<Connection>> connections_;
};

}  // namespace egress::testenv
