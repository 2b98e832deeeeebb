#include "pkg/apis/apps/daemon_set.h"

namespace egress::apps {

meta::Decoded<DaemonSet> decodeDaemonSet(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  DaemonSet ds;
  r.object("metadata", ds.metadata, meta::decodeObjectMeta);
  return r.finish(std::move(ds));
}

}  // namespace egress::apps
