#include "pkg/apis/core/config_map.h"

namespace egress::core {

meta::Decoded<ConfigMap> decodeConfigMap(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  ConfigMap cm;
  r.object("metadata", cm.metadata, meta::decodeObjectMeta);
  r.read("data", cm.data);
  return r.finish(std::move(cm));
}

}  // namespace egress::core
