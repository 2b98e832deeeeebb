#include "pkg/kube/errors.h"

namespace egress::kube {

Error::Error(Kind kind, int httpCode, meta::Status status, std::string message)
    : kind_(kind), httpCode_(httpCode), status_(std::move(status)), message_(std::move(message)) {
  if (status_.retryAfterSeconds && *status_.retryAfterSeconds > 0) {
    retryAfter_ = std::chrono::seconds(*status_.retryAfterSeconds);
  }
}

Error Error::api(int httpCode, meta::Status status) {
  std::string message = status.message;
  return Error(Kind::Api, httpCode, std::move(status), std::move(message));
}
Error Error::transport(std::string message, TransportFailure failure) {
  Error err(Kind::Transport, 0, {}, std::move(message));
  err.transportFailure_ = failure;
  return err;
}
Error Error::config(std::string message) {
  return Error(Kind::Config, 0, {}, std::move(message));
}
Error Error::decode(std::string message) {
  return Error(Kind::Decode, 0, {}, std::move(message));
}
Error Error::cancelled() {
  return Error(Kind::Cancelled, 0, {}, "operation cancelled");
}

Error Error::fenced(std::string why) {
  return Error(Kind::Fenced, 0, {}, std::move(why));
}

std::string Error::reason() const {
  if (kind_ != Kind::Api) {
    return {};
  }
  if (!status_.reason.empty()) {
    return status_.reason;
  }
  // apimachinery's reasonForError fallbacks when the body carried no Status.
  switch (httpCode_) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "Unknown";
  }
}

std::string Error::message() const {
  switch (kind_) {
    case Kind::Api: {
      std::string m = reason() + " (" + std::to_string(httpCode_) + ")";
      if (!message_.empty()) {
        m += ": " + message_;
      }
      return m;
    }
    case Kind::Transport:
      return "transport: " + message_;
    case Kind::Config:
      return "config: " + message_;
    case Kind::Decode:
      return "decode: " + message_;
    case Kind::Cancelled:
      return message_;
    case Kind::Fenced:
      return "writes fenced: " + message_;
  }
  return message_;
}

std::optional<std::chrono::seconds> Error::retryAfter() const {
  return retryAfter_;
}

bool Error::isNotFound() const {
  return reason() == "NotFound";
}
bool Error::isAlreadyExists() const {
  return reason() == "AlreadyExists";
}
bool Error::isConflict() const {
  return reason() == "Conflict";
}
bool Error::isInvalid() const {
  return reason() == "Invalid";
}
bool Error::isGone() const {
  return reason() == "Gone" || (kind_ == Kind::Api && httpCode_ == 410);
}
bool Error::isResourceExpired() const {
  return reason() == "Expired";
}
bool Error::isTooManyRequests() const {
  return reason() == "TooManyRequests" || (kind_ == Kind::Api && httpCode_ == 429);
}
bool Error::isForbidden() const {
  return reason() == "Forbidden";
}
bool Error::isUnauthorized() const {
  return reason() == "Unauthorized";
}
bool Error::isTimeout() const {
  return reason() == "Timeout";
}
bool Error::isServerError() const {
  return kind_ == Kind::Api && httpCode_ >= 500;
}
bool Error::isBadRequest() const {
  return reason() == "BadRequest";
}

}  // namespace egress::kube
