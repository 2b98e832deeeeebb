#include "pkg/apis/meta/time.h"

#include <cstdio>

namespace egress::meta {
namespace {

using std::chrono::days;
using std::chrono::floor;
using std::chrono::nanoseconds;
using std::chrono::sys_days;

// Reads exactly `n` digits at `pos`, advancing it; -1 if they are not all digits.
int digits(std::string_view s, size_t& pos, size_t n) {
  if (pos + n > s.size()) {
    return -1;
  }
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (c < '0' || c > '9') {
      return -1;
    }
    v = v * 10 + (c - '0');
  }
  pos += n;
  return v;
}

bool expect(std::string_view s, size_t& pos, char c) {
  if (pos >= s.size() || s[pos] != c) {
    return false;
  }
  ++pos;
  return true;
}

// Civil fields of `t` in UTC, after flooring to `Precision` (floor, not truncation toward zero,
// so instants before 1970 still land on the right second).
struct Civil {
  std::chrono::year_month_day date;
  std::chrono::hh_mm_ss<nanoseconds> time;
};

template <class Precision>
Civil civil(Time t) {
  const auto tp = floor<Precision>(t);
  const auto day = floor<days>(tp);
  return {std::chrono::year_month_day(day),
          std::chrono::hh_mm_ss<nanoseconds>(std::chrono::duration_cast<nanoseconds>(tp - day))};
}

}  // namespace

std::optional<Time> parseRfc3339(std::string_view s) {
  size_t pos = 0;
  const int year = digits(s, pos, 4);
  if (year < 0 || !expect(s, pos, '-')) {
    return std::nullopt;
  }
  const int month = digits(s, pos, 2);
  if (month < 0 || !expect(s, pos, '-')) {
    return std::nullopt;
  }
  const int day = digits(s, pos, 2);
  if (day < 0 || !(expect(s, pos, 'T') || expect(s, pos, 't'))) {
    return std::nullopt;
  }
  const int hour = digits(s, pos, 2);
  if (hour < 0 || !expect(s, pos, ':')) {
    return std::nullopt;
  }
  const int minute = digits(s, pos, 2);
  if (minute < 0 || !expect(s, pos, ':')) {
    return std::nullopt;
  }
  const int second = digits(s, pos, 2);
  if (second < 0 || hour > 23 || minute > 59 || second > 59) {
    return std::nullopt;
  }
  const std::chrono::year_month_day ymd{std::chrono::year(year),
                                        std::chrono::month(static_cast<unsigned>(month)),
                                        std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok()) {
    return std::nullopt;
  }

  int64_t fraction = 0;
  if (expect(s, pos, '.')) {
    size_t n = 0;
    for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, ++n) {
      if (n < 9) {
        fraction = fraction * 10 + (s[pos] - '0');
      }
    }
    if (n == 0) {
      return std::nullopt;
    }
    for (; n < 9; ++n) {
      fraction *= 10;
    }
  }

  std::chrono::minutes offset{0};
  if (expect(s, pos, 'Z') || expect(s, pos, 'z')) {
    // UTC
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const bool negative = s[pos] == '-';
    ++pos;
    const int oh = digits(s, pos, 2);
    if (oh < 0 || oh > 23 || !expect(s, pos, ':')) {
      return std::nullopt;
    }
    const int om = digits(s, pos, 2);
    if (om < 0 || om > 59) {
      return std::nullopt;
    }
    offset = std::chrono::hours(oh) + std::chrono::minutes(om);
    if (negative) {
      offset = -offset;
    }
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) {
    return std::nullopt;
  }

  // In whole seconds first: Time counts int64 nanoseconds, which only spans 1677-2262, and an
  // RFC 3339 year may be anything up to 9999. Out of range is an error, not a wrapped value.
  const std::chrono::sys_seconds secs = sys_days(ymd) + std::chrono::hours(hour) +
                                        std::chrono::minutes(minute) +
                                        std::chrono::seconds(second) - offset;
  if (secs > floor<std::chrono::seconds>(Time::max()) ||
      secs < std::chrono::ceil<std::chrono::seconds>(Time::min())) {
    return std::nullopt;
  }
  const Time whole = std::chrono::time_point_cast<Time::duration>(secs);
  const auto frac = std::chrono::duration_cast<Time::duration>(nanoseconds(fraction));
  if (whole > Time{} && Time::max() - whole < frac) {  // subtracting a negative would overflow
    return std::nullopt;
  }
  return whole + frac;
}

std::string formatRfc3339(Time t) {
  const Civil c = civil<std::chrono::seconds>(t);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(c.date.year()),
                static_cast<unsigned>(c.date.month()), static_cast<unsigned>(c.date.day()),
                static_cast<int>(c.time.hours().count()),
                static_cast<int>(c.time.minutes().count()),
                static_cast<int>(c.time.seconds().count()));
  return buf;
}

std::string formatRfc3339Micro(Time t) {
  const Civil c = civil<std::chrono::microseconds>(t);
  char buf[40];
  std::snprintf(
      buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%06dZ", static_cast<int>(c.date.year()),
      static_cast<unsigned>(c.date.month()), static_cast<unsigned>(c.date.day()),
      static_cast<int>(c.time.hours().count()), static_cast<int>(c.time.minutes().count()),
      static_cast<int>(c.time.seconds().count()),
      static_cast<int>(
          std::chrono::duration_cast<std::chrono::microseconds>(c.time.subseconds()).count()));
  return buf;
}

Time truncateToSeconds(Time t) {
  return floor<std::chrono::seconds>(t);
}

}  // namespace egress::meta
