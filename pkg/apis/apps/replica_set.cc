#include "pkg/apis/apps/replica_set.h"

namespace egress::apps {

meta::Decoded<ReplicaSet> decodeReplicaSet(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  ReplicaSet rs;
  r.object("metadata", rs.metadata, meta::decodeObjectMeta);
  return r.finish(std::move(rs));
}

}  // namespace egress::apps
