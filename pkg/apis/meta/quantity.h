// File: quantity.h
//
// resource.Quantity: an amount of a resource as Kubernetes writes it ("500m", "128Mi", "1e3",
// or a JSON integer such as 2). A Quantity holds its text as given (a JSON integer decodes to its
// decimal text and is written back as a string, as apimachinery writes quantities), so decode ->
// encode keeps what the user wrote. value() parses the text into an exact QuantityValue for
// comparisons (a request above its limit), without floating point and without std::regex.
//
// The grammar is apimachinery's ParseQuantity restricted to what the CRD schema's pattern
// (controller-gen's for resource.Quantity) also accepts:
//
//   quantity ::= [+|-] mantissa [suffix]
//   mantissa ::= digits [. [digits]] | . digits
//   suffix   ::= Ki | Mi | Gi | Ti | Pi | Ei          (binary: 2^10 .. 2^60)
//              | n | u | m | k | M | G | T | P | E     (decimal: 10^-9 .. 10^18)
//              | (e|E) [+|-] digits                   (decimal exponent, within int32)
//
// So "1", "0.5", "500m", "1e3", "128Mi", "2Gi", ".5", "+1" and "1." are quantities; "1.5.5",
// "1K", "1e", "1e1.5", "." and " 1" are not. Like Kubernetes, a value with digits below 10^-9
// rounds away from zero to the next nano ("0.1n" is 1n). Unlike Kubernetes, which silently caps
// a quantity at 2^63-1, a larger magnitude is an error: a spec asking for more than 2^63-1 of
// anything is a typo, and capping would change what it says.
#pragma once

#include <compare>
#include <map>
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/encode.h"
#include "pkg/base/result.h"

namespace egress::meta {

// The value of a quantity: an exact count of nano-units (10^-9), at most 2^63-1 units in
// magnitude.
class QuantityValue {
 public:
  QuantityValue() = default;

  // -1, 0 or 1.
  int sign() const;
  // A whole number of units ("2", "1k", "3000m").
  bool isInteger() const { return nanos_ % 1'000'000'000 == 0; }
  // The exact value in plain decimal, no exponent and no trailing zeros: "1536", "-0.5",
  // "0.000000001".
  std::string toString() const;

  bool operator==(const QuantityValue& other) const { return nanos_ == other.nanos_; }
  std::strong_ordering operator<=>(const QuantityValue& other) const {
    return nanos_ < other.nanos_   ? std::strong_ordering::less
           : nanos_ > other.nanos_ ? std::strong_ordering::greater
                                   : std::strong_ordering::equal;
  }

 private:
  friend Result<QuantityValue, std::string> parseQuantity(std::string_view text);
  explicit QuantityValue(__int128 nanos) : nanos_(nanos) {}

  __int128 nanos_ = 0;
};

// The value of `text`, or why it is not a quantity, worded as apimachinery words it
// ("quantities must match the regular expression ...", "unable to parse quantity's suffix"),
// plus "quantity too large ..." for a magnitude above 2^63-1.
Result<QuantityValue, std::string> parseQuantity(std::string_view text);

class Quantity {
 public:
  Quantity() = default;
  // Implicit, so a quantity is written as its text: `limits = {{"cpu", "500m"}}`.
  Quantity(std::string text) : text_(std::move(text)) {}  // NOLINT(google-explicit-constructor)
  Quantity(const char* text) : text_(text) {}             // NOLINT(google-explicit-constructor)

  const std::string& text() const { return text_; }
  // No text: an absent quantity (a plain Quantity field is omitted from JSON when empty).
  bool empty() const { return text_.empty(); }
  // parseQuantity(text()).
  Result<QuantityValue, std::string> value() const { return parseQuantity(text_); }

  // Textual: "1" and "1000m" are different texts of equal values (compare value()s for that).
  bool operator==(const Quantity&) const = default;

 private:
  std::string text_;
};

// Resource name ("cpu", "memory", "example.com/gpu") -> quantity, sorted (deterministic
// encoding), as a container's requests and limits.
using QuantityMap = std::map<std::string, Quantity>;

// A JSON string (as is) or a JSON integer (its decimal text: 1, and also 1.0 or 1e3, which JSON
// parsers and the API server's integer check take as integers); anything else, 0.5 included
// (the CRD's int-or-string schema refuses it), is "expected integer or string".
Decoded<Quantity> decodeQuantity(const rapidjson::Value& v);
void encodeQuantity(JsonWriter& w, const Quantity& q);
// A JSON object of quantities; a null value is absent (the API server prunes it). Errors name
// the key: `["cpu"]: expected integer or string`.
Decoded<QuantityMap> decodeQuantityMap(const rapidjson::Value& v);
void encodeQuantityMap(JsonWriter& w, const QuantityMap& m);

}  // namespace egress::meta
