#include "pkg/controller/context.h"

#include "pkg/controller/names.h"

namespace egress::controller {

void summaryChanged(Context& ctx) {
  ctx.operatorConfig.addAfter(std::string(kOperatorConfigName), std::chrono::seconds(2));
}

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
