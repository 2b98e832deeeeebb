#include "pkg/apis/validation/field_error.h"

namespace egress::validation {

std::string FieldError::toString() const {
  return path.empty() ? message : path + ": " + message;
}

std::string join(const FieldErrors& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) {
      out += "; ";
    }
    out += e.toString();
  }
  return out;
}

}  // namespace egress::validation
