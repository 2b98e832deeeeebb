// File: lease.h
//
// coordination.k8s.io/v1 Lease: the leader-election lock. The operator owns its Lease outright
// and replaces it with PUT (resourceVersion guards the race), so unlike other types it is
// encoded whole. Times are MicroTime: written with microseconds, as client-go does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/encode.h"
#include "pkg/apis/meta/object_meta.h"
#include "pkg/apis/meta/time.h"

namespace egress::coordination {

struct LeaseSpec {
  std::optional<std::string> holderIdentity;
  std::optional<int32_t> leaseDurationSeconds;
  std::optional<meta::Time> acquireTime;
  std::optional<meta::Time> renewTime;
  std::optional<int32_t> leaseTransitions;

  bool operator==(const LeaseSpec&) const = default;
};

struct Lease {
  meta::ObjectMeta metadata;
  LeaseSpec spec;

  bool operator==(const Lease&) const = default;
};

meta::Decoded<Lease> decodeLease(const rapidjson::Value& v);

// The spec object; absent fields are omitted.
void encodeLeaseSpec(meta::JsonWriter& w, const LeaseSpec& spec);
// {"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{...},"spec":{...}}. Spec
// fields this model does not know (preferredHolder, strategy) are dropped, which is fine for a
// lock only this operator's replicas write.
void encodeLease(meta::JsonWriter& w, const Lease& lease);

}  // namespace egress::coordination
