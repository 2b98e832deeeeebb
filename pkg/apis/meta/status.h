// File: status.h
//
// metav1.Status: what the API server returns with every failed request (and in ERROR watch
// events): HTTP code, machine-readable reason, message, and details such as the invalid
// fields (causes) and retryAfterSeconds. Decoded leniently: an unknown shape yields an empty
// Status rather than an error, because the HTTP code alone is still meaningful.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

namespace egress::meta {

struct StatusCause {
  std::string reason;  // e.g. "FieldValueInvalid"
  std::string message;
  std::string field;  // e.g. "spec.replicas"
};

struct Status {
  std::string status;  // "Success" or "Failure"
  std::string message;
  std::string reason;  // e.g. "NotFound", "AlreadyExists", "Conflict", "Invalid", "Expired"
  int32_t code = 0;
  // details
  std::string name;
  std::string group;
  std::string kind;
  std::string uid;
  std::vector<StatusCause> causes;
  std::optional<int32_t> retryAfterSeconds;
};

// Decodes a Status object (kind "Status"); nullopt if `v` is not an object with kind Status.
std::optional<Status> decodeStatus(const rapidjson::Value& v);
// Parses `body` as JSON and decodes it as a Status; nullopt if it is not one.
std::optional<Status> parseStatus(std::string_view body);

}  // namespace egress::meta
