// File: json.h
//
// Reading the JSON bodies the test kubelet writes, in its unit tests: parse (a parse error fails
// the test) and one string field.
#pragma once

#include <string>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

namespace egress::testenv {

inline rapidjson::Document parse(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str());
  EXPECT_FALSE(d.HasParseError()) << json;
  return d;
}

inline std::string str(const rapidjson::Value& v) {
  return v.IsString() ? std::string(v.GetString(), v.GetStringLength()) : "<not a string>";
}

}  // namespace egress::testenv
