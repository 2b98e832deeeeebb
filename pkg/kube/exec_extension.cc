#include "pkg/kube/exec_extension.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace egress::kube {
namespace {

constexpr int kMaxExtensionDepth = 64;

bool isJsonNumber(const std::string& s) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      ++i;
    }
    return i > start;
  };
  if (i < s.size() && s[i] == '-') {
    ++i;
  }
  if (i < s.size() && s[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) {
      return false;
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      ++i;
    }
    if (!digits()) {
      return false;
    }
  }
  return i == s.size();
}

// The exec extension is arbitrary YAML handed to the plugin as JSON (spec.cluster.config).
// Plain scalars get YAML's core-schema types; quoted ones stay strings.
bool writeYamlAsJson(const YAML::Node& node, rapidjson::Writer<rapidjson::StringBuffer>& w,
                     int depth) {
  if (depth > kMaxExtensionDepth) {
    return false;
  }
  switch (node.Type()) {
    case YAML::NodeType::Map:
      w.StartObject();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return false;
        }
        w.Key(kv.first.Scalar().data(), static_cast<rapidjson::SizeType>(kv.first.Scalar().size()));
        if (!writeYamlAsJson(kv.second, w, depth + 1)) {
          return false;
        }
      }
      w.EndObject();
      return true;
    case YAML::NodeType::Sequence:
      w.StartArray();
      for (const auto& item : node) {
        if (!writeYamlAsJson(item, w, depth + 1)) {
          return false;
        }
      }
      w.EndArray();
      return true;
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "?") {
        if (s == "true" || s == "True" || s == "TRUE") {
          w.Bool(true);
          return true;
        }
        if (s == "false" || s == "False" || s == "FALSE") {
          w.Bool(false);
          return true;
        }
        if (s == "null" || s == "Null" || s == "NULL" || s == "~") {
          w.Null();
          return true;
        }
        if (isJsonNumber(s)) {
          w.RawValue(s.data(), s.size(), rapidjson::kNumberType);
          return true;
        }
      }
      w.String(s);
      return true;
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      w.Null();
      return true;
  }
  return false;
}

// Turns one file's YAML into entries, checking types and decoding as it goes. Entries are only

}  // namespace

std::optional<std::string> execExtensionToJson(const YAML::Node& extension) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  if (!writeYamlAsJson(extension, w, 0)) {
    return std::nullopt;
  }
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace egress::kube
