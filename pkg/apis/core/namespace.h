// File: namespace.h
//
// core/v1 Namespace: the operator needs its labels (namespace selectors) and whether it is
// Terminating, when nothing new may be created in it.
#pragma once

#include <string>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/object_meta.h"

namespace egress::core {

struct Namespace {
  meta::ObjectMeta metadata;
  std::string phase;  // status.phase: Active or Terminating

  bool operator==(const Namespace&) const = default;
};

meta::Decoded<Namespace> decodeNamespace(const rapidjson::Value& v);

}  // namespace egress::core
