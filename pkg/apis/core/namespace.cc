#include "pkg/apis/core/namespace.h"

namespace egress::core {

meta::Decoded<Namespace> decodeNamespace(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  Namespace ns;
  r.object("metadata", ns.metadata, meta::decodeObjectMeta);
  r.nested("status", [&](meta::FieldReader& status) { status.read("phase", ns.phase); });
  return r.finish(std::move(ns));
}

}  // namespace egress::core
