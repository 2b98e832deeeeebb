// File: field_error.h
//
// A validation problem named by its field path, as apimachinery's field.Error: validators
// collect every problem (not just the first) so a user fixes them all in one round, and the
// controllers turn them into one status condition message.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace egress::validation {

struct FieldError {
  std::string path;  // "spec.egressIP.addresses[2]"
  std::string message;

  // "path: message".
  std::string toString() const;
  bool operator==(const FieldError&) const = default;
};

using FieldErrors = std::vector<FieldError>;

inline std::ostream& operator<<(std::ostream& os, const FieldError& e) {
  return os << e.toString();
}

// Every error's toString(), joined with "; ".
std::string join(const FieldErrors& errors);

}  // namespace egress::validation
