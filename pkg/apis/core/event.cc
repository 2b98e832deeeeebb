#include "pkg/apis/core/event.h"

namespace egress::core {

meta::Decoded<Event> decodeEvent(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  Event e;
  r.object("metadata", e.metadata, meta::decodeObjectMeta);
  r.object("involvedObject", e.involvedObject, decodeObjectReference);
  r.read("reason", e.reason);
  r.read("message", e.message);
  r.read("type", e.type);
  r.read("count", e.count);
  r.read("firstTimestamp", e.firstTimestamp);
  r.read("lastTimestamp", e.lastTimestamp);
  r.nested("source",
           [&](meta::FieldReader& source) { source.read("component", e.sourceComponent); });
  r.read("reportingComponent", e.reportingComponent);
  r.read("reportingInstance", e.reportingInstance);
  return r.finish(std::move(e));
}

void encodeEvent(meta::JsonWriter& w, const Event& e) {
  w.StartObject();
  meta::writeField(w, "apiVersion", "v1");
  meta::writeField(w, "kind", "Event");
  meta::writeKey(w, "metadata");
  meta::encodeObjectMeta(w, e.metadata);
  meta::writeKey(w, "involvedObject");
  encodeObjectReference(w, e.involvedObject);
  meta::writeFieldIfSet(w, "reason", e.reason);
  meta::writeFieldIfSet(w, "message", e.message);
  meta::writeFieldIfSet(w, "type", e.type);
  meta::writeFieldIfSet(w, "count", int64_t{e.count});
  if (e.firstTimestamp) {
    meta::writeTimeField(w, "firstTimestamp", *e.firstTimestamp);
  }
  if (e.lastTimestamp) {
    meta::writeTimeField(w, "lastTimestamp", *e.lastTimestamp);
  }
  if (!e.sourceComponent.empty()) {
    meta::writeKey(w, "source");
    w.StartObject();
    meta::writeField(w, "component", e.sourceComponent);
    w.EndObject();
  }
  meta::writeFieldIfSet(w, "reportingComponent", e.reportingComponent);
  meta::writeFieldIfSet(w, "reportingInstance", e.reportingInstance);
  w.EndObject();
}

}  // namespace egress::core
