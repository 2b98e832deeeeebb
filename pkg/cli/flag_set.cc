#include "pkg/cli/flag_set.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <utility>

namespace egress::cli {

void FlagSet::add(const std::string& name, Flag flag) {
  if (!flags_.emplace(name, std::move(flag)).second && definitionError_.empty()) {
    // A wiring mistake in the binary; parse() reports it so the first run catches it.
    definitionError_ = "flag --" + name + " defined twice";
  }
}

void FlagSet::addString(const std::string& name, std::string& dest, const std::string& help) {
  add(name,
      {help, dest.empty() ? "" : "\"" + dest + "\"", false, false, [&dest](const std::string& v) {
         dest = v;
         return std::string();
       }});
}

void FlagSet::addBool(const std::string& name, bool& dest, const std::string& help) {
  add(name, {help, dest ? "true" : "false", true, false, [&dest, name](const std::string& v) {
               if (v == "true" || v == "1") {
                 dest = true;
               } else if (v == "false" || v == "0") {
                 dest = false;
               } else {
                 return "invalid value \"" + v + "\" for flag --" + name + ": want true or false";
               }
               return std::string();
             }});
}

void FlagSet::addInt(const std::string& name, int64_t& dest, const std::string& help) {
  add(name,
      {help, std::to_string(dest), false, false, [&dest, name](const std::string& v) {
         // Decimal, or hexadecimal after 0x (mark masks are written so). Go's flag.Int
         // also takes 0o, 0b and a leading-0 octal; "010" is 10 here, as people mean.
         std::string_view digits = v;
         const bool negative = !digits.empty() && digits.front() == '-';
         if (negative || (!digits.empty() && digits.front() == '+')) {
           digits.remove_prefix(1);
         }
         int base = 10;
         if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
           digits.remove_prefix(2);
           base = 16;
         }
         uint64_t magnitude = 0;
         const auto [end, ec] =
             std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
         const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
         if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
             magnitude > limit) {
           return "invalid value \"" + v + "\" for flag --" + name + ": not an integer";
         }
         dest = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
         return std::string();
       }});
}

void FlagSet::addDouble(const std::string& name, double& dest, const std::string& help) {
  std::string shown = std::to_string(dest);
  shown.erase(shown.find_last_not_of('0') + 1);
  if (!shown.empty() && shown.back() == '.') {
    shown.pop_back();
  }
  add(name, {help, shown, false, false, [&dest, name](const std::string& v) {
               double parsed = 0;
               const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
               if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(parsed)) {
                 return "invalid value \"" + v + "\" for flag --" + name + ": not a number";
               }
               dest = parsed;
               return std::string();
             }});
}

void FlagSet::addDuration(const std::string& name, std::chrono::milliseconds& dest,
                          const std::string& help) {
  add(name, {help, formatDuration(dest), false, false, [&dest, name](const std::string& v) {
               if (!parseDuration(v, dest)) {
                 return "invalid value \"" + v + "\" for flag --" + name +
                        ": not a duration (e.g. 15s, 500ms, 2m)";
               }
               return std::string();
             }});
}

std::string FlagSet::parse(int argc, const char* const* argv) {
  if (!definitionError_.empty()) {
    return definitionError_;
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      args_.insert(args_.end(), argv + i + 1, argv + argc);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      args_.push_back(arg);
      continue;
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string name = body;
    std::string value;
    bool hasValue = false;
    if (const auto eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      hasValue = true;
    }
    auto it = flags_.find(name);
    if (it == flags_.end()) {
      return "unknown flag: --" + name + " (see --help)";
    }
    Flag& flag = it->second;
    if (!hasValue) {
      if (flag.isBool) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return "flag needs an argument: --" + name;
      }
    }
    if (auto err = flag.set(value); !err.empty()) {
      return err;
    }
    flag.changed = true;
  }
  return {};
}

bool FlagSet::changed(const std::string& name) const {
  auto it = flags_.find(name);
  return it != flags_.end() && it->second.changed;
}

std::string FlagSet::usage() const {
  std::string out = "Usage: " + program_ + " [flags]\n\nFlags:\n";
  for (const auto& [name, flag] : flags_) {
    out += "      --" + name + (flag.isBool ? "" : " value") + "\n          " + flag.help;
    if (!flag.defaultValue.empty()) {
      out += " (default " + flag.defaultValue + ")";
    }
    out += "\n";
  }
  return out;
}

bool parseDuration(const std::string& text, std::chrono::milliseconds& out) {
  // Go's time.ParseDuration without the sign (no flag here takes a negative duration): "0", or
  // one or more <number><unit>, the number digits with an optional fraction ("1.5", "1.",
  // ".5"), the unit ns, us (or µs, μs), ms, s, m or h. Summed in whole nanoseconds as Go does,
  // and refused where Go's would overflow (past 2562047h47m16.854775807s).
  if (text == "0") {
    out = std::chrono::milliseconds(0);
    return true;
  }
  if (text.empty()) {
    return false;
  }
  constexpr uint64_t kLimit = uint64_t{1} << 63;
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"ns", 1},          {"us", 1'000},        {"\u00b5s", 1'000},  // µs, the micro sign
      {"\u03bcs", 1'000},                                            // μs, the Greek mu
      {"ms", 1'000'000},  {"s", 1'000'000'000}, {"m", 60'000'000'000}, {"h", 3'600'000'000'000},
  };
  const auto isDigit = [](char c) { return c >= '0' && c <= '9'; };
  std::string_view s = text;
  uint64_t totalNs = 0;
  while (!s.empty()) {
    if (s.front() != '.' && !isDigit(s.front())) {
      return false;
    }
    // The whole part (Go's leadingInt): an overflow is an error.
    size_t i = 0;
    uint64_t whole = 0;
    for (; i < s.size() && isDigit(s[i]); ++i) {
      if (whole > kLimit / 10) {
        return false;
      }
      whole = whole * 10 + static_cast<uint64_t>(s[i] - '0');
      if (whole > kLimit) {
        return false;
      }
    }
    const bool digitsBefore = i > 0;
    // The fraction (Go's leadingFraction): digits past what fits are ignored.
    uint64_t fraction = 0;
    double scale = 1;
    bool digitsAfter = false;
    if (i < s.size() && s[i] == '.') {
      bool full = false;
      for (++i; i < s.size() && isDigit(s[i]); ++i) {
        digitsAfter = true;
        if (full || fraction > (kLimit - 1) / 10) {
          full = true;
          continue;
        }
        fraction = fraction * 10 + static_cast<uint64_t>(s[i] - '0');
        scale *= 10;
      }
    }
    if (!digitsBefore && !digitsAfter) {
      return false;
    }
    // The unit: everything up to the next number.
    size_t j = i;
    while (j < s.size() && s[j] != '.' && !isDigit(s[j])) {
      ++j;
    }
    const std::string_view unit = s.substr(i, j - i);
    s.remove_prefix(j);
    uint64_t perUnit = 0;
    for (const auto& [name, ns] : kUnits) {
      if (unit == name) {
        perUnit = ns;
      }
    }
    if (perUnit == 0 || whole > kLimit / perUnit) {
      return false;
    }
    uint64_t ns = whole * perUnit;
    if (fraction > 0) {
      // As Go: float64 keeps a fraction of an hour accurate to the nanosecond.
      ns += static_cast<uint64_t>(static_cast<double>(fraction) *
                                  (static_cast<double>(perUnit) / scale));
      if (ns > kLimit) {
        return false;
      }
    }
    totalNs += ns;
    if (totalNs > kLimit - 1) {
      return false;
    }
  }
  // To the nearest millisecond, the resolution of every duration here; but never from a
  // positive duration to 0, which the flags read as "off" or refuse ("10ns" is 1ms).
  auto ms = static_cast<int64_t>((totalNs + 500'000) / 1'000'000);
  if (ms == 0 && totalNs > 0) {
    ms = 1;
  }
  out = std::chrono::milliseconds(ms);
  return true;
}

std::string formatDuration(std::chrono::milliseconds d) {
  const int64_t ms = d.count();
  if (ms % 1000 != 0) {
    return std::to_string(ms) + "ms";
  }
  const int64_t s = ms / 1000;
  if (s != 0 && s % 3600 == 0) {
    return std::to_string(s / 3600) + "h";
  }
  if (s != 0 && s % 60 == 0) {
    return std::to_string(s / 60) + "m";
  }
  return std::to_string(s) + "s";
}

}  // namespace egress::cli
