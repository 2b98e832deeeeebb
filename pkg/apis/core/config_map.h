// File: config_map.h
//
// core/v1 ConfigMap: string data only (binaryData is not something the operator reads).
#pragma once

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/object_meta.h"

namespace egress::core {

struct ConfigMap {
  meta::ObjectMeta metadata;
  meta::StringMap data;

  bool operator==(const ConfigMap&) const = default;
};

meta::Decoded<ConfigMap> decodeConfigMap(const rapidjson::Value& v);

}  // namespace egress::core
