#include "pkg/apis/core/object_reference.h"

namespace egress::core {

meta::Decoded<ObjectReference> decodeObjectReference(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  ObjectReference ref;
  r.read("kind", ref.kind);
  r.read("namespace", ref.namespace_);
  r.read("name", ref.name);
  r.read("uid", ref.uid);
  r.read("apiVersion", ref.apiVersion);
  r.read("resourceVersion", ref.resourceVersion);
  return r.finish(std::move(ref));
}

void encodeObjectReference(meta::JsonWriter& w, const ObjectReference& ref) {
  w.StartObject();
  meta::writeFieldIfSet(w, "kind", ref.kind);
  meta::writeFieldIfSet(w, "namespace", ref.namespace_);
  meta::writeFieldIfSet(w, "name", ref.name);
  meta::writeFieldIfSet(w, "uid", ref.uid);
  meta::writeFieldIfSet(w, "apiVersion", ref.apiVersion);
  meta::writeFieldIfSet(w, "resourceVersion", ref.resourceVersion);
  w.EndObject();
}

}  // namespace egress::core
