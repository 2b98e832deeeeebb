// File: replica_set.h
//
// apps/v1 ReplicaSet as the operator reads it: its identity and its controller owner reference
// only. A gateway pod is proven to be one of a policy's gateways by owner UIDs, link by link:
// pod -> ReplicaSet (uid) -> the policy's gateway Deployment (uid) -> the policy (uid). Labels
// and names on the way could be written by anyone who may edit the namespace.
#pragma once

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/object_meta.h"

namespace egress::apps {

struct ReplicaSet {
  meta::ObjectMeta metadata;

  bool operator==(const ReplicaSet&) const = default;
};

meta::Decoded<ReplicaSet> decodeReplicaSet(const rapidjson::Value& v);

}  // namespace egress::apps
