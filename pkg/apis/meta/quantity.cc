#include "pkg/apis/meta/quantity.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace egress::meta {
namespace {

// apimachinery's ErrFormatWrong and ErrSuffix, word for word.
constexpr char kFormatWrong[] =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
constexpr char kBadSuffix[] = "unable to parse quantity's suffix";
constexpr char kTooLarge[] =
    "quantity too large: its magnitude may be at most 2^63-1 (9223372036854775807)";

// The largest magnitude in nanos, (2^63-1) * 10^9: 28 digits.
constexpr unsigned __int128 kMaxNanos =
    static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max()) * 1'000'000'000U;
constexpr size_t kMaxNanosDigits = 28;

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

// The value is mantissa * 10^pow10 * 2^pow2.
struct Suffix {
  int64_t pow10 = 0;
  int pow2 = 0;
};

Result<Suffix, std::string> parseSuffix(std::string_view s) {
  if (s.empty()) {
    return Suffix{};
  }
  static constexpr std::pair<std::string_view, Suffix> kSuffixes[] = {
      {"Ki", {0, 10}}, {"Mi", {0, 20}}, {"Gi", {0, 30}}, {"Ti", {0, 40}}, {"Pi", {0, 50}},
      {"Ei", {0, 60}}, {"n", {-9, 0}},  {"u", {-6, 0}},  {"m", {-3, 0}},  {"k", {3, 0}},
      {"M", {6, 0}},   {"G", {9, 0}},   {"T", {12, 0}},  {"P", {15, 0}},  {"E", {18, 0}},
  };
  for (const auto& [name, suffix] : kSuffixes) {
    if (s == name) {
      return suffix;
    }
  }
  // A decimal exponent: strconv.ParseInt(s[1:], 10, 32) in apimachinery.
  if ((s[0] == 'e' || s[0] == 'E') && s.size() > 1) {
    size_t i = 1;
    const bool negative = s[i] == '-';
    if (s[i] == '+' || s[i] == '-') {
      ++i;
    }
    const bool digits = i < s.size() && std::all_of(s.begin() + static_cast<ptrdiff_t>(i), s.end(),
                                                    [](char c) { return isDigit(c); });
    if (digits) {
      int64_t e = 0;
      for (; i < s.size(); ++i) {
        e = e * 10 + (s[i] - '0');
        if (e > int64_t{1} << 31) {
          return std::string(kBadSuffix);
        }
      }
      e = negative ? -e : e;
      if (e < std::numeric_limits<int32_t>::min() || e > std::numeric_limits<int32_t>::max()) {
        return std::string(kBadSuffix);
      }
      return Suffix{e, 0};
    }
  }
  // apimachinery scans suffix letters, a sign and digits: text that stops short of the end is a
  // malformed quantity, text that is all of those an unknown suffix ("1K", "1e").
  size_t i = 0;
  while (i < s.size() && std::string_view("eEinumkKMGTP").find(s[i]) != std::string_view::npos) {
    ++i;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    ++i;
  }
  while (i < s.size() && isDigit(s[i])) {
    ++i;
  }
  return std::string(i == s.size() ? kBadSuffix : kFormatWrong);
}

}  // namespace

int QuantityValue::sign() const {
  return nanos_ < 0 ? -1 : nanos_ > 0 ? 1 : 0;
}

std::string QuantityValue::toString() const {
  unsigned __int128 magnitude =
      nanos_ < 0 ? -static_cast<unsigned __int128>(nanos_) : static_cast<unsigned __int128>(nanos_);
  std::string digits;
  do {
    digits.push_back(static_cast<char>('0' + static_cast<int>(magnitude % 10)));
    magnitude /= 10;
  } while (magnitude != 0);
  digits.resize(std::max<size_t>(digits.size(), 10), '0');  // at least "0.000000000"
  std::reverse(digits.begin(), digits.end());
  std::string out = digits.substr(0, digits.size() - 9);
  std::string fraction = digits.substr(digits.size() - 9);
  fraction.erase(fraction.find_last_not_of('0') + 1);  // all zeros: npos + 1 == 0
  if (!fraction.empty()) {
    out += '.';
    out += fraction;
  }
  return nanos_ < 0 ? "-" + out : out;
}

Result<QuantityValue, std::string> parseQuantity(std::string_view text) {
  size_t pos = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    ++pos;
  }
  const size_t intStart = pos;
  while (pos < text.size() && isDigit(text[pos])) {
    ++pos;
  }
  const std::string_view intPart = text.substr(intStart, pos - intStart);
  std::string_view fracPart;
  if (pos < text.size() && text[pos] == '.') {
    const size_t fracStart = ++pos;
    while (pos < text.size() && isDigit(text[pos])) {
      ++pos;
    }
    fracPart = text.substr(fracStart, pos - fracStart);
  }
  // apimachinery reads "", ".", "+" as 0; the CRD's pattern wants a digit.
  if (intPart.empty() && fracPart.empty()) {
    return std::string(kFormatWrong);
  }
  auto suffix = parseSuffix(text.substr(pos));
  if (!suffix) {
    return suffix.error();
  }

  // The significant digits: value = significand * 10^pow10 (in nanos) * 2^pow2.
  std::string digits(intPart);
  digits += fracPart;
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) {
    return QuantityValue(0);
  }
  const size_t last = digits.find_last_not_of('0');
  const std::string_view significand(digits.data() + first, last - first + 1);
  const int64_t pow10 = suffix->pow10 + 9 - static_cast<int64_t>(fracPart.size()) +
                        static_cast<int64_t>(digits.size() - 1 - last);

  // significand * 2^pow2 in decimal, one digit at a time from the right: the carry stays below
  // 2^pow2 <= 2^60, so every step fits in 64 bits, and the pass is linear in the text.
  const uint64_t factor = uint64_t{1} << suffix->pow2;
  std::string product(significand.size() + 20, '0');
  size_t out = product.size();
  uint64_t carry = 0;
  for (size_t i = significand.size(); i-- > 0;) {
    const uint64_t cur = static_cast<uint64_t>(significand[i] - '0') * factor + carry;
    product[--out] = static_cast<char>('0' + cur % 10);
    carry = cur / 10;
  }
  for (; carry != 0; carry /= 10) {
    product[--out] = static_cast<char>('0' + carry % 10);
  }
  const std::string_view scaled(product.data() + out, product.size() - out);

  // Whole nanos, and digits below a nano round away from zero (inf.RoundUp in apimachinery).
  std::string_view whole = scaled;
  bool roundUp = false;
  if (pow10 < 0) {
    const auto below = static_cast<uint64_t>(-pow10);
    if (below >= scaled.size()) {
      whole = {};
      roundUp = true;  // a non-zero value below one nano
    } else {
      whole = scaled.substr(0, scaled.size() - below);
      roundUp = scaled.substr(whole.size()).find_first_not_of('0') != std::string_view::npos;
    }
  }
  const int64_t zeros = std::max<int64_t>(pow10, 0);
  if (static_cast<int64_t>(whole.size()) + zeros > static_cast<int64_t>(kMaxNanosDigits)) {
    return std::string(kTooLarge);  // at least 10^28 nanos; `whole` has no leading zero
  }
  unsigned __int128 nanos = 0;
  for (const char c : whole) {
    nanos = nanos * 10 + static_cast<unsigned>(c - '0');
  }
  for (int64_t i = 0; i < zeros; ++i) {
    nanos *= 10;
  }
  nanos += roundUp ? 1 : 0;
  if (nanos > kMaxNanos) {
    return std::string(kTooLarge);
  }
  const auto signedNanos = static_cast<__int128>(nanos);
  return QuantityValue(negative ? -signedNanos : signedNanos);
}

Decoded<Quantity> decodeQuantity(const rapidjson::Value& v) {
  if (v.IsString()) {
    return Quantity(std::string(v.GetString(), v.GetStringLength()));
  }
  if (v.IsInt64()) {
    return Quantity(std::to_string(v.GetInt64()));
  }
  if (v.IsUint64()) {
    return Quantity(std::to_string(v.GetUint64()));
  }
  if (v.IsDouble()) {
    const double d = v.GetDouble();
    if (std::isfinite(d) && std::trunc(d) == d) {
      char buf[400];  // DBL_MAX has 309 digits
      const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::fixed);
      if (ec == std::errc()) {
        return Quantity(std::string(buf, end));
      }
    }
  }
  return DecodeError{"", "expected integer or string"};
}

void encodeQuantity(JsonWriter& w, const Quantity& q) {
  writeString(w, q.text());
}

Decoded<QuantityMap> decodeQuantityMap(const rapidjson::Value& v) {
  if (!v.IsObject()) {
    return DecodeError{"", "expected object"};
  }
  QuantityMap out;
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
    if (it->value.IsNull()) {
      continue;
    }
    std::string key(it->name.GetString(), it->name.GetStringLength());
    auto q = decodeQuantity(it->value);
    if (!q) {
      return prefixError("[\"" + key + "\"]", std::move(q.error()));
    }
    out.insert_or_assign(std::move(key), std::move(*q));
  }
  return out;
}

void encodeQuantityMap(JsonWriter& w, const QuantityMap& m) {
  w.StartObject();
  for (const auto& [key, q] : m) {
    writeKey(w, key);
    encodeQuantity(w, q);
  }
  w.EndObject();
}

}  // namespace egress::meta
