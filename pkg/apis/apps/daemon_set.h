// File: daemon_set.h
//
// apps/v1 DaemonSet as egw-agent reads it: its identity only. The agent watches the DaemonSet
// that runs it to tell an uninstall (the DaemonSet deleted or being deleted) from a restart or a
// rolling update (it is still there) when it is told to stop: only on an uninstall does it take
// its state out of the kernel.
#pragma once

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/object_meta.h"

namespace egress::apps {

struct DaemonSet {
  meta::ObjectMeta metadata;

  bool operator==(const DaemonSet&) const = default;
};

meta::Decoded<DaemonSet> decodeDaemonSet(const rapidjson::Value& v);

}  // namespace egress::apps
