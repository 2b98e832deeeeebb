#include "pkg/apis/coordination/lease.h"

namespace egress::coordination {
namespace {

meta::Decoded<LeaseSpec> decodeLeaseSpec(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  LeaseSpec s;
  r.read("holderIdentity", s.holderIdentity);
  r.read("leaseDurationSeconds", s.leaseDurationSeconds);
  r.read("acquireTime", s.acquireTime);
  r.read("renewTime", s.renewTime);
  r.read("leaseTransitions", s.leaseTransitions);
  return r.finish(std::move(s));
}

}  // namespace

meta::Decoded<Lease> decodeLease(const rapidjson::Value& v) {
  meta::FieldReader r(v);
  Lease l;
  r.object("metadata", l.metadata, meta::decodeObjectMeta);
  r.object("spec", l.spec, decodeLeaseSpec);
  return r.finish(std::move(l));
}

void encodeLeaseSpec(meta::JsonWriter& w, const LeaseSpec& spec) {
  w.StartObject();
  meta::writeFieldIfSet(w, "holderIdentity", spec.holderIdentity);
  meta::writeFieldIfSet(w, "leaseDurationSeconds", spec.leaseDurationSeconds);
  if (spec.acquireTime) {
    meta::writeMicroTimeField(w, "acquireTime", *spec.acquireTime);
  }
  if (spec.renewTime) {
    meta::writeMicroTimeField(w, "renewTime", *spec.renewTime);
  }
  meta::writeFieldIfSet(w, "leaseTransitions", spec.leaseTransitions);
  w.EndObject();
}

void encodeLease(meta::JsonWriter& w, const Lease& lease) {
  w.StartObject();
  meta::writeField(w, "apiVersion", "coordination.k8s.io/v1");
  meta::writeField(w, "kind", "Lease");
  meta::writeKey(w, "metadata");
  meta::encodeObjectMeta(w, lease.metadata);
  meta::writeKey(w, "spec");
  encodeLeaseSpec(w, lease.spec);
  w.EndObject();
}

}  // namespace egress::coordination
