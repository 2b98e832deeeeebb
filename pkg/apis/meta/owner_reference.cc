#include "pkg/apis/meta/owner_reference.h"

namespace egress::meta {

Decoded<OwnerReference> decodeOwnerReference(const rapidjson::Value& v) {
  FieldReader r(v);
  OwnerReference ref;
  r.read("apiVersion", ref.apiVersion);
  r.read("kind", ref.kind);
  r.read("name", ref.name);
  r.read("uid", ref.uid);
  r.read("controller", ref.controller);
  r.read("blockOwnerDeletion", ref.blockOwnerDeletion);
  return r.finish(std::move(ref));
}

void encodeOwnerReference(JsonWriter& w, const OwnerReference& ref) {
  w.StartObject();
  writeField(w, "apiVersion", ref.apiVersion);
  writeField(w, "kind", ref.kind);
  writeField(w, "name", ref.name);
  writeField(w, "uid", ref.uid);
  writeFieldIfSet(w, "controller", ref.controller);
  writeFieldIfSet(w, "blockOwnerDeletion", ref.blockOwnerDeletion);
  w.EndObject();
}

}  // namespace egress::meta
