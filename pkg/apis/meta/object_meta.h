// File: object_meta.h
//
// metav1.ObjectMeta as the operator reads it: identity, versioning, labels and annotations,
// ownership and finalizers. managedFields and the rest are dropped on decode, because these
// structs are what the informer caches hold for every watched object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/encode.h"
#include "pkg/apis/meta/owner_reference.h"
#include "pkg/apis/meta/time.h"

namespace egress::meta {

struct ObjectMeta {
  std::string name;
  std::string namespace_;  // trailing underscore: `namespace` is a keyword
  std::string uid;
  std::string resourceVersion;  // opaque: compare for equality only, never order or parse
  int64_t generation = 0;
  Time creationTimestamp{};
  std::optional<Time> deletionTimestamp;
  StringMap labels;
  StringMap annotations;
  std::vector<OwnerReference> ownerReferences;
  std::vector<std::string> finalizers;

  bool operator==(const ObjectMeta&) const = default;
};

Decoded<ObjectMeta> decodeObjectMeta(const rapidjson::Value& v);

// Writes the client-settable fields (name, namespace, uid, resourceVersion, labels, annotations,
// ownerReferences, finalizers); generation and the timestamps belong to the server.
void encodeObjectMeta(JsonWriter& w, const ObjectMeta& meta);

// The owner reference with controller=true (metav1.GetControllerOf); nullptr if none.
const OwnerReference* controllerOf(const ObjectMeta& meta);

bool hasFinalizer(const ObjectMeta& meta, std::string_view finalizer);

}  // namespace egress::meta
