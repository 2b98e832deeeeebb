#include "pkg/cli/flag_set.h"

#include <cctype>
#include <charconv>
#include <cmath>

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
  add(name, {help, std::to_string(dest), false, false, [&dest, name](const std::string& v) {
               int64_t parsed = 0;
               const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
               if (ec != std::errc() || end != v.data() + v.size()) {
                 return "invalid value \"" + v + "\" for flag --" + name + ": not an integer";
               }
               dest = parsed;
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
  if (text == "0") {
    out = std::chrono::milliseconds(0);
    return true;
  }
  double totalMs = 0;
  size_t i = 0;
  if (text.empty()) {
    return false;
  }
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[j])) != 0 || text[j] == '.')) {
      ++j;
    }
    if (j == i) {
      return false;
    }
    double number = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + j, number);
    if (ec != std::errc() || end != text.data() + j) {
      return false;
    }
    size_t k = j;
    while (k < text.size() && std::isalpha(static_cast<unsigned char>(text[k])) != 0) {
      ++k;
    }
    const std::string unit = text.substr(j, k - j);
    double scale = 0;
    if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m") {
      scale = 60'000;
    } else if (unit == "h") {
      scale = 3'600'000;
    } else {
      return false;
    }
    totalMs += number * scale;
    i = k;
  }
  out = std::chrono::milliseconds(static_cast<int64_t>(std::llround(totalMs)));
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
