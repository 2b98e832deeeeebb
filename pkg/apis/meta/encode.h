// File: encode.h
//
// Writing the few objects the operator creates or fully owns (Events, its Lease, owner
// references and conditions it sets) as API JSON. Anything it does not own goes through patch or
// server-side apply instead, because the typed model keeps only the fields we read and a write
// of it would drop the rest. Empty optional fields are omitted, as `omitempty` does in Go.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/time.h"

namespace egress::meta {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void writeKey(JsonWriter& w, std::string_view key);
void writeString(JsonWriter& w, std::string_view value);

void writeField(JsonWriter& w, std::string_view key, std::string_view value);
// Without it a string literal would pick the bool overload (pointer-to-bool is a standard
// conversion, to string_view a user-defined one).
void writeField(JsonWriter& w, std::string_view key, const char* value);
void writeField(JsonWriter& w, std::string_view key, int64_t value);
void writeField(JsonWriter& w, std::string_view key, int32_t value);
void writeField(JsonWriter& w, std::string_view key, bool value);
void writeField(JsonWriter& w, std::string_view key, const StringMap& value);
void writeField(JsonWriter& w, std::string_view key, const std::vector<std::string>& value);
// Whole seconds (metav1.Time).
void writeTimeField(JsonWriter& w, std::string_view key, Time value);
// Microseconds (metav1.MicroTime).
void writeMicroTimeField(JsonWriter& w, std::string_view key, Time value);

// omitempty: nothing is written for "", 0, false, an empty map or list, or nullopt.
void writeFieldIfSet(JsonWriter& w, std::string_view key, std::string_view value);
void writeFieldIfSet(JsonWriter& w, std::string_view key, int64_t value);
void writeFieldIfSet(JsonWriter& w, std::string_view key, const StringMap& value);
void writeFieldIfSet(JsonWriter& w, std::string_view key, const std::vector<std::string>& value);
template <class T>
void writeFieldIfSet(JsonWriter& w, std::string_view key, const std::optional<T>& value) {
  if (value) {
    writeField(w, key, *value);
  }
}

// The JSON text of `value` written by `encode` (e.g. encodeOwnerReference).
template <class T, class F>
std::string encodeToString(const T& value, F&& encode) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  encode(w, value);
  return {buf.GetString(), buf.GetSize()};
}

}  // namespace egress::meta
