// File: testing.h
//
// Helpers shared by the pkg/apis tests: the recorded API server responses under
// test/testdata/apis/, a UTC time-point builder, and the one-line form of a decode result's error
// (so a test can compare the full path-qualified message).
#pragma once

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/time.h"

namespace egress::testing {

inline std::string readTestdata(std::string_view name) {
  const std::string path = std::string(EGRESS_TESTDATA_DIR) + "/apis/" + std::string(name);
  std::ifstream in(path);
  if (!in) {
    return "<missing testdata " + path + ">";
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline meta::Time utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0,
                      std::chrono::nanoseconds frac = {}) {
  using namespace std::chrono;
  return time_point_cast<meta::Time::duration>(sys_days(year(y) / month(mo) / day(d)) + hours(h) +
                                               minutes(mi) + seconds(s) + frac);
}

// "" for success, else "path: message".
template <class T>
std::string errorOf(const meta::Decoded<T>& r) {
  return r ? std::string() : r.error().toString();
}

}  // namespace egress::testing
