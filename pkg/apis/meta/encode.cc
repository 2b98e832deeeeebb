#include "pkg/apis/meta/encode.h"

namespace egress::meta {

void writeKey(JsonWriter& w, std::string_view key) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
}

void writeString(JsonWriter& w, std::string_view value) {
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

void writeField(JsonWriter& w, std::string_view key, std::string_view value) {
  writeKey(w, key);
  writeString(w, value);
}

void writeField(JsonWriter& w, std::string_view key, const char* value) {
  writeField(w, key, std::string_view(value));
}

void writeField(JsonWriter& w, std::string_view key, int64_t value) {
  writeKey(w, key);
  w.Int64(value);
}

void writeField(JsonWriter& w, std::string_view key, int32_t value) {
  writeKey(w, key);
  w.Int(value);
}

void writeField(JsonWriter& w, std::string_view key, bool value) {
  writeKey(w, key);
  w.Bool(value);
}

void writeField(JsonWriter& w, std::string_view key, const StringMap& value) {
  writeKey(w, key);
  w.StartObject();
  for (const auto& [k, v] : value) {
    writeField(w, k, v);
  }
  w.EndObject();
}

void writeField(JsonWriter& w, std::string_view key, const std::vector<std::string>& value) {
  writeKey(w, key);
  w.StartArray();
  for (const auto& v : value) {
    writeString(w, v);
  }
  w.EndArray();
}

void writeTimeField(JsonWriter& w, std::string_view key, Time value) {
  writeField(w, key, formatRfc3339(value));
}

void writeMicroTimeField(JsonWriter& w, std::string_view key, Time value) {
  writeField(w, key, formatRfc3339Micro(value));
}

void writeFieldIfSet(JsonWriter& w, std::string_view key, std::string_view value) {
  if (!value.empty()) {
    writeField(w, key, value);
  }
}

void writeFieldIfSet(JsonWriter& w, std::string_view key, int64_t value) {
  if (value != 0) {
    writeField(w, key, value);
  }
}

void writeFieldIfSet(JsonWriter& w, std::string_view key, const StringMap& value) {
  if (!value.empty()) {
    writeField(w, key, value);
  }
}

void writeFieldIfSet(JsonWriter& w, std::string_view key, const std::vector<std::string>& value) {
  if (!value.empty()) {
    writeField(w, key, value);
  }
}

}  // namespace egress::meta
