#include "pkg/apis/meta/decode.h"

#include <rapidjson/error/en.h>

namespace egress::meta {
namespace {

std::string str(const rapidjson::Value& v) {
  return {v.GetString(), v.GetStringLength()};
}

std::string mapKeyPath(const char* field, const rapidjson::Value& key) {
  std::string path = field;
  path += "[\"";
  path += str(key);
  path += "\"]";
  return path;
}

}  // namespace

std::string DecodeError::toString() const {
  if (path.empty()) {
    return message;
  }
  return path + ": " + message;
}

DecodeError prefixError(std::string_view prefix, DecodeError inner) {
  std::string path(prefix);
  if (!inner.path.empty()) {
    if (inner.path.front() != '[') {
      path += '.';
    }
    path += inner.path;
  }
  inner.path = std::move(path);
  return inner;
}

FieldReader::FieldReader(const rapidjson::Value& v) : obj_(v) {
  if (!v.IsObject() && !v.IsNull()) {
    error_ = DecodeError{"", "expected object"};
  }
}

const rapidjson::Value* FieldReader::find(const char* field) const {
  if (error_ || !obj_.IsObject()) {
    return nullptr;
  }
  auto it = obj_.FindMember(field);
  if (it == obj_.MemberEnd() || it->value.IsNull()) {
    return nullptr;
  }
  return &it->value;
}

void FieldReader::fail(std::string path, std::string message) {
  if (!error_) {
    error_ = DecodeError{std::move(path), std::move(message)};
  }
}

void FieldReader::read(const char* field, std::string& out) {
  std::optional<std::string> v;
  read(field, v);
  if (v) {
    out = std::move(*v);
  }
}

void FieldReader::read(const char* field, std::optional<std::string>& out) {
  const rapidjson::Value* v = find(field);
  if (v == nullptr) {
    return;
  }
  if (!v->IsString()) {
    fail(field, "expected string");
    return;
  }
  out = str(*v);
}

void FieldReader::read(const char* field, int64_t& out) {
  std::optional<int64_t> v;
  read(field, v);
  if (v) {
    out = *v;
  }
}

void FieldReader::read(const char* field, std::optional<int64_t>& out) {
  const rapidjson::Value* v = find(field);
  if (v == nullptr) {
    return;
  }
  // IsInt64 is false for 1.5 and for integers past int64 (which RapidJSON keeps as uint64 or
  // double): encoding/json rejects both for an int64 field, and so do we.
  if (!v->IsInt64()) {
    fail(field, "expected integer");
    return;
  }
  out = v->GetInt64();
}

void FieldReader::read(const char* field, int32_t& out) {
  std::optional<int32_t> v;
  read(field, v);
  if (v) {
    out = *v;
  }
}

void FieldReader::read(const char* field, std::optional<int32_t>& out) {
  const rapidjson::Value* v = find(field);
  if (v == nullptr) {
    return;
  }
  if (!v->IsInt64()) {
    fail(field, "expected integer");
    return;
  }
  if (!v->IsInt()) {
    fail(field, "integer out of range for int32");
    return;
  }
  out = v->GetInt();
}

void FieldReader::read(const char* field, bool& out) {
  std::optional<bool> v;
  read(field, v);
  if (v) {
    out = *v;
  }
}

void FieldReader::read(const char* field, std::optional<bool>& out) {
  const rapidjson::Value* v = find(field);
  if (v == nullptr) {
    return;
  }
  if (!v->IsBool()) {
    fail(field, "expected boolean");
    return;
  }
  out = v->GetBool();
}

void FieldReader::read(const char* field, StringMap& out) {
  const rapidjson::Value* v = find(field);
  if (v == nullptr) {
    return;
  }
  if (!v->IsObject()) {
    fail(field, "expected object");
    return;
  }
  StringMap m;
  m.reserve(v->MemberCount());
  for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
    // A null value decodes as "" in encoding/json; the key is kept.
    if (!it->value.IsString() && !it->value.IsNull()) {
      fail(mapKeyPath(field, it->name), "expected string");
      return;
    }
    m.insert_or_assign(str(it->name), it->value.IsNull() ? std::string() : str(it->value));
  }
  m.shrinkToFit();
  out = std::move(m);
}

void FieldReader::read(const char* field, std::vector<std::string>& out) {
  const rapidjson::Value* v = find(field);
  if (v == nullptr) {
    return;
  }
  if (!v->IsArray()) {
    fail(field, "expected array");
    return;
  }
  std::vector<std::string> items;
  items.reserve(v->Size());
  for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
    const rapidjson::Value& item = (*v)[i];
    if (!item.IsString()) {
      fail(std::string(field) + "[" + std::to_string(i) + "]", "expected string");
      return;
    }
    items.push_back(str(item));
  }
  out = std::move(items);
}

void FieldReader::read(const char* field, Time& out) {
  std::optional<Time> v;
  read(field, v);
  if (v) {
    out = *v;
  }
}

void FieldReader::read(const char* field, std::optional<Time>& out) {
  const rapidjson::Value* v = find(field);
  if (v == nullptr) {
    return;
  }
  if (!v->IsString()) {
    fail(field, "expected string");
    return;
  }
  auto t = parseRfc3339(std::string_view(v->GetString(), v->GetStringLength()));
  if (!t) {
    fail(field, "invalid RFC 3339 time \"" + str(*v) + "\"");
    return;
  }
  out = *t;
}

// Iterative: RapidJSON's default parser recurses once per nesting level, so ~200 KB of "[[[["
// would overflow the stack (found by test/fuzz/decode_fuzz). Every Parse in pkg/ uses it.
std::optional<DecodeError> parseJson(std::string_view json, rapidjson::Document& doc) {
  doc.Parse<rapidjson::kParseIterativeFlag>(json.data(), json.size());
  if (doc.HasParseError()) {
    return DecodeError{"", std::string("invalid JSON at offset ") +
                               std::to_string(doc.GetErrorOffset()) + ": " +
                               rapidjson::GetParseError_En(doc.GetParseError())};
  }
  return std::nullopt;
}

}  // namespace egress::meta
