#include "pkg/controller/context.h"

#include "pkg/controller/names.h"

namespace egress::controller {

core::ObjectReference referenceTo(std::string_view kind, const meta::ObjectMeta& meta) {
  core::ObjectReference ref;
  ref.kind = std::string(kind);
  ref.apiVersion = std::string(kApiVersion);
  ref.namespace_ = meta.namespace_;
  ref.name = meta.name;
  ref.uid = meta.uid;
  ref.resourceVersion = meta.resourceVersion;
  return ref;
}

}  // namespace egress::controller
