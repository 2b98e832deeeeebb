#include "pkg/apis/meta/object_meta.h"

#include <algorithm>

namespace egress::meta {

Decoded<ObjectMeta> decodeObjectMeta(const rapidjson::Value& v) {
  FieldReader r(v);
  ObjectMeta m;
  r.read("name", m.name);
  r.read("namespace", m.namespace_);
  r.read("uid", m.uid);
  r.read("resourceVersion", m.resourceVersion);
  r.read("generation", m.generation);
  r.read("creationTimestamp", m.creationTimestamp);
  r.read("deletionTimestamp", m.deletionTimestamp);
  r.read("labels", m.labels);
  r.read("annotations", m.annotations);
  r.list("ownerReferences", m.ownerReferences, decodeOwnerReference);
  r.read("finalizers", m.finalizers);
  return r.finish(std::move(m));
}

void encodeObjectMeta(JsonWriter& w, const ObjectMeta& meta) {
  w.StartObject();
  writeFieldIfSet(w, "name", meta.name);
  writeFieldIfSet(w, "namespace", meta.namespace_);
  writeFieldIfSet(w, "uid", meta.uid);
  writeFieldIfSet(w, "resourceVersion", meta.resourceVersion);
  writeFieldIfSet(w, "labels", meta.labels);
  writeFieldIfSet(w, "annotations", meta.annotations);
  if (!meta.ownerReferences.empty()) {
    writeKey(w, "ownerReferences");
    w.StartArray();
    for (const auto& ref : meta.ownerReferences) {
      encodeOwnerReference(w, ref);
    }
    w.EndArray();
  }
  writeFieldIfSet(w, "finalizers", meta.finalizers);
  w.EndObject();
}

const OwnerReference* controllerOf(const ObjectMeta& meta) {
  for (const auto& ref : meta.ownerReferences) {
    if (ref.controller.value_or(false)) {
      return &ref;
    }
  }
  return nullptr;
}

bool hasFinalizer(const ObjectMeta& meta, std::string_view finalizer) {
  return std::find(meta.finalizers.begin(), meta.finalizers.end(), finalizer) !=
         meta.finalizers.end();
}

}  // namespace egress::meta
