// File: errors.h
//
// The error of every pkg/kube operation: what failed (the API server said no, the network
// failed, the configuration is wrong, a response could not be decoded, the caller cancelled),
// the HTTP code, and the decoded metav1.Status. Predicates mirror k8s.io/apimachinery's
// apierrors (IsNotFound, IsConflict, IsGone, ...), including their fallbacks from the HTTP code
// when the server sent no Status.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "pkg/apis/meta/status.h"
#include "pkg/base/result.h"

namespace egress::kube {

class Error {
 public:
  enum class Kind {
    Api,        // the server answered with a non-2xx status
    Transport,  // connect, TLS, read or write failed, or a timeout
    Config,     // kubeconfig / in-cluster / credentials problem
    Decode,     // a response body was not what the API promises
    Cancelled,  // the caller cancelled the operation
    Fenced,     // a write refused before it was sent: the client's writes are fenced
  };

  // What kind of transport failure, for retry decisions (client-go's net.IsConnectionReset,
  // IsProbableEOF, IsTimeout, IsConnectionRefused).
  enum class TransportFailure {
    Other,
    ConnectionRefused,
    ConnectionLost,  // reset, EOF or a broken pipe: the peer went away mid-request
    Timeout,
  };

  static Error api(int httpCode, meta::Status status);
  static Error transport(std::string message, TransportFailure failure = TransportFailure::Other);
  static Error config(std::string message);
  static Error decode(std::string message);
  static Error cancelled();
  static Error fenced(std::string why);

  Kind kind() const { return kind_; }
  int httpCode() const { return httpCode_; }
  const meta::Status& status() const { return status_; }
  // The reason as apimachinery computes it: the Status reason, else derived from the code.
  std::string reason() const;
  // One line for logs and conditions: "<reason>: <message>" or the transport/config message.
  std::string message() const;
  // Server-requested delay (Retry-After header or details.retryAfterSeconds), if any.
  std::optional<std::chrono::seconds> retryAfter() const;
  void setRetryAfter(std::chrono::seconds s) { retryAfter_ = s; }

  bool isNotFound() const;
  bool isAlreadyExists() const;
  bool isConflict() const;
  bool isInvalid() const;
  // 410 Gone, or reason Expired (a resourceVersion too old for the watch cache / etcd).
  bool isGone() const;
  bool isResourceExpired() const;
  bool isTooManyRequests() const;
  bool isForbidden() const;
  bool isUnauthorized() const;
  bool isTimeout() const;      // server-side timeout (504 / reason Timeout)
  bool isServerError() const;  // 5xx
  bool isBadRequest() const;
  bool isTransport() const { return kind_ == Kind::Transport; }
  TransportFailure transportFailure() const { return transportFailure_; }
  bool isConnectionRefused() const {
    return transportFailure_ == TransportFailure::ConnectionRefused;
  }
  bool isConnectionLost() const { return transportFailure_ == TransportFailure::ConnectionLost; }
  bool isCancelled() const { return kind_ == Kind::Cancelled; }
  bool isFenced() const { return kind_ == Kind::Fenced; }

 private:
  Error(Kind kind, int httpCode, meta::Status status, std::string message);

  Kind kind_;
  int httpCode_;
  meta::Status status_;
  std::string message_;
  std::optional<std::chrono::seconds> retryAfter_;
  TransportFailure transportFailure_ = TransportFailure::Other;
};

template <typename T>
using Result = egress::Result<T, Error>;

}  // namespace egress::kube
