#include "pkg/apis/meta/int_or_string.h"

#include <charconv>

namespace egress::meta {

egress::Result<int32_t, std::string> IntOrString::scaledValue(int32_t total, bool roundUp) const {
  if (isInt()) {
    return intValue();
  }
  const std::string& s = stringValue();
  int32_t percent = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, percent);
  if (s.size() < 2 || s.back() != '%' || ec != std::errc() || ptr != end - 1) {
    return egress::unexpected(
        "invalid value for IntOrString: invalid type: string is not a "
        "percentage: \"" +
        s + "\"");
  }
  const int64_t scaled = static_cast<int64_t>(percent) * total;
  // Integer ceil/floor of scaled/100 (both operands may be negative in principle).
  int64_t q = scaled / 100;
  if (scaled % 100 != 0) {
    if (roundUp && scaled > 0) {
      ++q;
    } else if (!roundUp && scaled < 0) {
      --q;
    }
  }
  return static_cast<int32_t>(q);
}

Decoded<IntOrString> decodeIntOrString(const rapidjson::Value& v) {
  if (v.IsString()) {
    return IntOrString::fromString({v.GetString(), v.GetStringLength()});
  }
  if (v.IsInt()) {
    return IntOrString::fromInt(v.GetInt());
  }
  return DecodeError{"", "expected integer or string"};
}

void encodeIntOrString(JsonWriter& w, const IntOrString& v) {
  if (v.isInt()) {
    w.Int(v.intValue());
  } else {
    writeString(w, v.stringValue());
  }
}

}  // namespace egress::meta
