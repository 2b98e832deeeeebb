// File: flag_set.h
//
// Command-line flags the way Kubernetes components take them (`--name=value`, `--name value`,
// `--bool`, `--bool=false`), with typed destinations, defaults shown in --help, and a clear
// error for anything unknown or malformed. No globals: each binary builds its own FlagSet.
//
//   FlagSet flags("egress-operator");
//   int workers = 2;
//   flags.addInt("workers", workers, "Concurrent reconciles per controller.");
//   if (auto err = flags.parse(argc, argv); !err.empty()) { ... exit(2) }
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace egress::cli {

class FlagSet {
 public:
  explicit FlagSet(std::string program) : program_(std::move(program)) {}

  void addString(const std::string& name, std::string& dest, const std::string& help);
  void addBool(const std::string& name, bool& dest, const std::string& help);
  void addInt(const std::string& name, int64_t& dest, const std::string& help);
  // A decimal number ("20", "2.5"); not NaN or infinite.
  void addDouble(const std::string& name, double& dest, const std::string& help);
  // Go-style durations: "300ms", "15s", "2m", "1h30m".
  void addDuration(const std::string& name, std::chrono::milliseconds& dest,
                   const std::string& help);

  // Parses argv[1..]. Returns "" on success, else a message naming the flag. Positional
  // arguments are collected in args(). "--" ends flag parsing.
  std::string parse(int argc, const char* const* argv);

  const std::vector<std::string>& args() const { return args_; }
  // True if the flag was given on the command line.
  bool changed(const std::string& name) const;
  // The usage text: one entry per flag, sorted, with its default.
  std::string usage() const;

 private:
  struct Flag {
    std::string help;
    std::string defaultValue;
    bool isBool = false;
    bool changed = false;
    std::function<std::string(const std::string&)> set;  // returns "" or an error
  };
  void add(const std::string& name, Flag flag);

  std::string program_;
  std::map<std::string, Flag> flags_;
  std::vector<std::string> args_;
  std::string definitionError_;
};

// Parses a Go duration string ("1h2m3.5s", "250ms", "1.5h", "10ns") as time.ParseDuration
// does, to the nearest millisecond (a positive one to at least 1ms); false if malformed,
// signed or beyond Go's range (2562047h47m16.854775807s).
bool parseDuration(const std::string& text, std::chrono::milliseconds& out);
std::string formatDuration(std::chrono::milliseconds d);

}  // namespace egress::cli
