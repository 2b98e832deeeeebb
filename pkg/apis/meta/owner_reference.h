// File: owner_reference.h
//
// metav1.OwnerReference: links a dependent (the gateway Deployment, its PDB) to its owner (the
// EgressGateway), so garbage collection deletes it with the owner and the controller is woken by
// changes of what it owns. The operator writes these, hence the encoder.
#pragma once

#include <optional>
#include <string>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/encode.h"

namespace egress::meta {

struct OwnerReference {
  std::string apiVersion;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> blockOwnerDeletion;

  bool operator==(const OwnerReference&) const = default;
};

Decoded<OwnerReference> decodeOwnerReference(const rapidjson::Value& v);
void encodeOwnerReference(JsonWriter& w, const OwnerReference& ref);

}  // namespace egress::meta
