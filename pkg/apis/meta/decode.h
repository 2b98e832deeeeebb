// File: decode.h
//
// Decoding API JSON into the typed (read-only) object model: DecodeError, which names the
// offending field by its full path ("items[3].metadata.labels[\"app\"]"), and FieldReader, the
// helper every decoder is written with. The rules are encoding/json's as the API server relies
// on them: unknown fields are ignored, absent and null fields keep their default, and a field of
// the wrong JSON type is an error (never silently zeroed, so a schema change surfaces loudly).
//
// RapidJSON 1.1.0 under C++20 recurses forever on `value == 1`: code here only ever asks
// IsX()/GetX(), never compares Values (see test/unit/thirdparty/rapidjson_cxx20_test.cc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/apis/meta/string_map.h"
#include "pkg/apis/meta/time.h"
#include "pkg/base/result.h"

namespace egress::meta {

struct DecodeError {
  std::string path;  // "" for the value being decoded itself
  std::string message;

  // "path: message", or just the message when the path is empty.
  std::string toString() const;
};

template <class T>
using Decoded = egress::Result<T, DecodeError>;

// `inner` (relative to the value at `prefix`) as seen from the enclosing value:
// prefix "items[3]" + path "metadata.name" -> "items[3].metadata.name".
DecodeError prefixError(std::string_view prefix, DecodeError inner);

// Reads the fields of one JSON object, keeping the first error and ignoring every call after it,
// so a decoder is a flat list of read() calls followed by finish():
//
//   FieldReader r(v);
//   OwnerReference o;
//   r.read("apiVersion", o.apiVersion);
//   r.read("controller", o.controller);  // std::optional<bool>: stays nullopt if absent
//   return r.finish(std::move(o));
class FieldReader {
 public:
  // A null `v` reads as an object without fields; any other non-object is an error.
  explicit FieldReader(const rapidjson::Value& v);

  void read(const char* field, std::string& out);
  void read(const char* field, std::optional<std::string>& out);
  void read(const char* field, int64_t& out);
  void read(const char* field, std::optional<int64_t>& out);
  void read(const char* field, int32_t& out);
  void read(const char* field, std::optional<int32_t>& out);
  void read(const char* field, bool& out);
  void read(const char* field, std::optional<bool>& out);
  void read(const char* field, StringMap& out);
  void read(const char* field, std::vector<std::string>& out);
  // metav1.Time or metav1.MicroTime (the parser accepts both).
  void read(const char* field, Time& out);
  void read(const char* field, std::optional<Time>& out);

  // A nested value decoded by `decode` (a function returning Decoded<X>); `out` may be an
  // X or a std::optional<X>, which then stays nullopt when the field is absent.
  template <class T, class F>
  void object(const char* field, T& out, F&& decode) {
    const rapidjson::Value* v = find(field);
    if (v == nullptr) {
      return;
    }
    auto r = decode(*v);
    if (!r) {
      error_ = prefixError(field, std::move(r.error()));
      return;
    }
    out = std::move(*r);
  }

  // A JSON array, each element decoded by `decode`.
  template <class T, class F>
  void list(const char* field, std::vector<T>& out, F&& decode) {
    const rapidjson::Value* v = find(field);
    if (v == nullptr) {
      return;
    }
    if (!v->IsArray()) {
      fail(field, "expected array");
      return;
    }
    std::vector<T> items;
    items.reserve(v->Size());
    for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
      auto r = decode((*v)[i]);
      if (!r) {
        error_ =
            prefixError(std::string(field) + "[" + std::to_string(i) + "]", std::move(r.error()));
        return;
      }
      items.push_back(std::move(*r));
    }
    out = std::move(items);
  }

  // A small nested object with no type of its own (Event's source.component): `readFields` is
  // called with a FieldReader over it; its errors get the "field." prefix.
  template <class F>
  void nested(const char* field, F&& readFields) {
    const rapidjson::Value* v = find(field);
    if (v == nullptr) {
      return;
    }
    FieldReader inner(*v);
    readFields(inner);
    if (inner.error_) {
      error_ = prefixError(field, std::move(*inner.error_));
    }
  }

  bool ok() const { return !error_.has_value(); }

  // `value` if every read succeeded, else the first error.
  template <class T>
  Decoded<T> finish(T value) {
    if (error_) {
      return std::move(*error_);
    }
    return value;
  }

 private:
  // The field's value; nullptr if absent or null, or after an error.
  const rapidjson::Value* find(const char* field) const;
  void fail(std::string path, std::string message);

  const rapidjson::Value& obj_;
  std::optional<DecodeError> error_;
};

// Parses `json` into `doc`; the error names the offset of invalid JSON.
std::optional<DecodeError> parseJson(std::string_view json, rapidjson::Document& doc);

// Parses `json` and decodes it with `decode` (e.g. decodePod).
template <class F>
auto parseAndDecode(std::string_view json, F&& decode)
    -> decltype(decode(std::declval<const rapidjson::Value&>())) {
  rapidjson::Document doc;
  if (auto err = parseJson(json, doc)) {
    return std::move(*err);
  }
  return decode(static_cast<const rapidjson::Value&>(doc));
}

}  // namespace egress::meta
