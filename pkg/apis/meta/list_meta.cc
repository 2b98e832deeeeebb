#include "pkg/apis/meta/list_meta.h"

namespace egress::meta {

Decoded<ListMeta> decodeListMeta(const rapidjson::Value& v) {
  FieldReader r(v);
  ListMeta m;
  r.read("resourceVersion", m.resourceVersion);
  r.read("continue", m.continue_);
  r.read("remainingItemCount", m.remainingItemCount);
  return r.finish(std::move(m));
}

}  // namespace egress::meta
