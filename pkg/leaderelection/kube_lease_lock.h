// File: kube_lease_lock.h
//
// The real LeaseLock: a coordination.k8s.io/v1 Lease (namespace + name) read and written with
// the REST client, as client-go's resourcelock.LeaseLock does it. update() PUTs back the very
// object the last get/create/update returned, with only its spec replaced (and our labels and
// annotations merged in), so its resourceVersion guards the race and nothing else a reader or
// another tool put in the object (labels, annotations, ownerReferences, fields this model does
// not know) is lost. The annotations are how a Lease's holder reports something to its readers
// along with each renewal (egw-agent: the egress IPs it has programmed), so its owner may change
// them at any time; the next write carries them.
#pragma once

#include <memory>
#include <string>

#include <rapidjson/document.h>

#include "pkg/apis/coordination/lease.h"
#include "pkg/apis/meta/decode.h"
#include "pkg/kube/rest_client.h"
#include "pkg/leaderelection/lease_lock.h"

namespace egress::leaderelection {

// coordination.k8s.io/v1 leases.
extern const kube::Resource kLeases;

class KubeLeaseLock : public LeaseLock {
 public:
  // `client` must outlive the lock. `labels` are set on create and merged on update (client-go's
  // LeaseLock.Labels).
  KubeLeaseLock(kube::RestClient& client, std::string ns, std::string name, std::string identity,
                meta::StringMap labels = {});
  ~KubeLeaseLock() override;

  net::awaitable<kube::Result<LockSnapshot>> get() override;
  net::awaitable<kube::Result<Ok>> create(LeaderElectionRecord record) override;
  net::awaitable<kube::Result<Ok>> update(LeaderElectionRecord record) override;
  const std::string& identity() const override { return identity_; }
  std::string describe() const override { return namespace_ + "/" + name_; }

  // Sets annotation `key` to `value` on the next create or update (and every one after); only
  // the keys set here are overwritten. "" is written as an empty value, never a removal: a
  // removed key would be one the merge no longer touches, so a stale value could stay.
  void setAnnotation(const std::string& key, std::string value);

 private:
  // Keeps `doc` as the version to write over; its record and resourceVersion, or a decode error.
  kube::Result<LockSnapshot> remember(rapidjson::Document doc);

  kube::RestClient* client_;
  std::string namespace_;
  std::string name_;
  std::string identity_;
  meta::StringMap labels_;
  meta::StringMap annotations_;
  std::unique_ptr<rapidjson::Document> lease_;  // the last object read or written
};

// client-go's LeaderElectionRecordToLeaseSpec (every field set; holderIdentity "" on release)
// and LeaseSpecToLeaderElectionRecord (absent fields read as zero).
coordination::LeaseSpec leaseSpecFromRecord(const LeaderElectionRecord& record);
LeaderElectionRecord recordFromLeaseSpec(const coordination::LeaseSpec& spec);

}  // namespace egress::leaderelection
