// File: event.h
//
// core/v1 Event: the operator records what it did and why to the objects involved (visible in
// `kubectl describe`), and reads them back to aggregate repeats (count, lastTimestamp) the way
// client-go's recorder does. The encoder writes a complete object for POST and PUT.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <rapidjson/document.h>

#include "pkg/apis/core/object_reference.h"
#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/encode.h"
#include "pkg/apis/meta/object_meta.h"
#include "pkg/apis/meta/time.h"

namespace egress::core {

inline constexpr std::string_view kEventTypeNormal = "Normal";
inline constexpr std::string_view kEventTypeWarning = "Warning";

struct Event {
  meta::ObjectMeta metadata;
  ObjectReference involvedObject;
  std::string reason;
  std::string message;
  std::string type;  // kEventTypeNormal or kEventTypeWarning
  int32_t count = 0;
  // Absent on events created through events.k8s.io/v1, which set eventTime instead.
  std::optional<meta::Time> firstTimestamp;
  std::optional<meta::Time> lastTimestamp;
  std::string sourceComponent;     // source.component
  std::string reportingComponent;  // the reporting controller (its JSON name is historical)
  std::string reportingInstance;   // which replica of it: a pod or host name

  bool operator==(const Event&) const = default;
};

meta::Decoded<Event> decodeEvent(const rapidjson::Value& v);

// {"apiVersion":"v1","kind":"Event","metadata":{...},...}; empty fields omitted.
void encodeEvent(meta::JsonWriter& w, const Event& e);

}  // namespace egress::core
