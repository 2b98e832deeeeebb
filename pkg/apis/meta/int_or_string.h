// File: int_or_string.h
//
// intstr.IntOrString: a field that is either an int32 or a string, in practice a count or a
// percentage ("25%") as in a PDB's minAvailable or a rollout's maxSurge.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/encode.h"
#include "pkg/base/result.h"

namespace egress::meta {

class IntOrString {
 public:
  IntOrString() : value_(int32_t{0}) {}
  static IntOrString fromInt(int32_t v) { return IntOrString(v); }
  static IntOrString fromString(std::string v) { return IntOrString(std::move(v)); }

  bool isInt() const { return std::holds_alternative<int32_t>(value_); }
  bool isString() const { return !isInt(); }
  int32_t intValue() const { return std::get<int32_t>(value_); }
  const std::string& stringValue() const { return std::get<std::string>(value_); }

  // intstr.GetScaledValueFromIntOrPercent: an int as is; "N%" of `total`, rounded up or down.
  // Any other string is an error.
  egress::Result<int32_t, std::string> scaledValue(int32_t total, bool roundUp) const;

  bool operator==(const IntOrString&) const = default;

 private:
  explicit IntOrString(int32_t v) : value_(v) {}
  explicit IntOrString(std::string v) : value_(std::move(v)) {}

  std::variant<int32_t, std::string> value_;
};

Decoded<IntOrString> decodeIntOrString(const rapidjson::Value& v);
void encodeIntOrString(JsonWriter& w, const IntOrString& v);

}  // namespace egress::meta
