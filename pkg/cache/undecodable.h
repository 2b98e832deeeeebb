// File: undecodable.h
//
// An object the API server holds but this process cannot decode (a field of the wrong type, a
// value our model does not know). The informer does not drop it: the cache keeps an explicit
// entry with its key, resourceVersion and the decoder's error, so that listers can report it
// and a controller can fail closed rather than act as if the object did not exist (for the
// operator: a policy whose addresses would otherwise look free).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <rapidjson/document.h>

namespace egress::cache {

struct UndecodableObject {
  std::string key;  // "namespace/name", or "name" when cluster-scoped
  std::string resourceVersion;
  std::string error;  // the decoder's message, with the field path
};
using UndecodablePtr = std::shared_ptr<const UndecodableObject>;

// The entry for `object`, its key and resourceVersion read from the raw metadata; nullopt when
// even metadata.name is not a string (such an object cannot be tracked at all).
std::optional<UndecodableObject> describeUndecodable(const rapidjson::Value& object,
                                                     std::string error);

// metadata.resourceVersion of a raw object, or "".
std::string rawResourceVersion(const rapidjson::Value& object);

}  // namespace egress::cache
