// File: object_reference.h
//
// core/v1 ObjectReference: what an Event is about (its involvedObject).
#pragma once

#include <string>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/encode.h"

namespace egress::core {

struct ObjectReference {
  std::string kind;
  std::string namespace_;  // trailing underscore: `namespace` is a keyword
  std::string name;
  std::string uid;
  std::string apiVersion;
  std::string resourceVersion;

  bool operator==(const ObjectReference&) const = default;
};

meta::Decoded<ObjectReference> decodeObjectReference(const rapidjson::Value& v);
void encodeObjectReference(meta::JsonWriter& w, const ObjectReference& ref);

}  // namespace egress::core
