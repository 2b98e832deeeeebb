#include "pkg/leaderelection/kube_lease_lock.h"

#include <utility>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/apis/meta/encode.h"

namespace egress::leaderelection {

const kube::Resource kLeases{"coordination.k8s.io", "v1", "leases", true};

namespace {

std::string toJson(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return {buf.GetString(), buf.GetSize()};
}

// Sets `obj[key] = value` (an object member), adding the member if it is absent.
void setMember(rapidjson::Value& obj, const std::string& key, rapidjson::Value value,
               rapidjson::Document::AllocatorType& alloc) {
  auto it = obj.FindMember(key);
  if (it != obj.MemberEnd()) {
    it->value = value;
    return;
  }
  obj.AddMember(rapidjson::Value(key, alloc), value, alloc);
}

// Sets each of `ours` in `metadata[field]` (an object, created if absent), leaving the other
// keys there as they are: only our own are overwritten (client-go merges labels the same way).
void mergeStrings(rapidjson::Value& metadata, const char* field, const meta::StringMap& ours,
                  rapidjson::Document::AllocatorType& alloc) {
  if (ours.empty()) {
    return;
  }
  auto it = metadata.FindMember(field);
  if (it == metadata.MemberEnd() || !it->value.IsObject()) {
    setMember(metadata, field, rapidjson::Value(rapidjson::kObjectType), alloc);
    it = metadata.FindMember(field);
  }
  for (const auto& [key, value] : ours) {
    setMember(it->value, key, rapidjson::Value(value, alloc), alloc);
  }
}

}  // namespace

coordination::LeaseSpec leaseSpecFromRecord(const LeaderElectionRecord& record) {
  coordination::LeaseSpec spec;
  spec.holderIdentity = record.holderIdentity;
  spec.leaseDurationSeconds = record.leaseDurationSeconds;
  // A zero time is what Go's zero metav1.MicroTime is: written as null, i.e. left out.
  if (record.acquireTime != meta::Time{}) {
    spec.acquireTime = record.acquireTime;
  }
  if (record.renewTime != meta::Time{}) {
    spec.renewTime = record.renewTime;
  }
  spec.leaseTransitions = record.leaderTransitions;
  return spec;
}

LeaderElectionRecord recordFromLeaseSpec(const coordination::LeaseSpec& spec) {
  LeaderElectionRecord r;
  r.holderIdentity = spec.holderIdentity.value_or("");
  r.leaseDurationSeconds = spec.leaseDurationSeconds.value_or(0);
  r.acquireTime = spec.acquireTime.value_or(meta::Time{});
  r.renewTime = spec.renewTime.value_or(meta::Time{});
  r.leaderTransitions = spec.leaseTransitions.value_or(0);
  return r;
}

KubeLeaseLock::KubeLeaseLock(kube::RestClient& client, std::string ns, std::string name,
                             std::string identity, meta::StringMap labels)
    : client_(&client),
      namespace_(std::move(ns)),
      name_(std::move(name)),
      identity_(std::move(identity)),
      labels_(std::move(labels)) {}

KubeLeaseLock::~KubeLeaseLock() = default;

void KubeLeaseLock::setAnnotation(const std::string& key, std::string value) {
  annotations_[key] = std::move(value);
}

kube::Result<LockSnapshot> KubeLeaseLock::remember(rapidjson::Document doc) {
  auto lease = coordination::decodeLease(doc);
  if (!lease) {
    return kube::Error::decode("lease " + describe() + ": " + lease.error().toString());
  }
  LockSnapshot snapshot{recordFromLeaseSpec(lease->spec), lease->metadata.resourceVersion};
  lease_ = std::make_unique<rapidjson::Document>(std::move(doc));
  return snapshot;
}

net::awaitable<kube::Result<LockSnapshot>> KubeLeaseLock::get() {
  // Every argument named: g++ 12 destroys default-argument temporaries of a co_await call twice.
  std::string subresource;
  auto doc = co_await client_->get(kLeases, namespace_, name_, subresource);
  if (!doc) {
    co_return doc.error();
  }
  co_return remember(std::move(*doc));
}

net::awaitable<kube::Result<Ok>> KubeLeaseLock::create(LeaderElectionRecord record) {
  coordination::Lease lease;
  lease.metadata.name = name_;
  lease.metadata.namespace_ = namespace_;
  lease.metadata.labels = labels_;
  lease.metadata.annotations = annotations_;
  lease.spec = leaseSpecFromRecord(record);
  std::string body = meta::encodeToString(lease, coordination::encodeLease);
  kube::WriteOptions options;
  auto created = co_await client_->create(kLeases, namespace_, std::move(body), options);
  if (!created) {
    co_return created.error();
  }
  auto snapshot = remember(std::move(*created));
  if (!snapshot) {
    co_return snapshot.error();
  }
  co_return Ok{};
}

net::awaitable<kube::Result<Ok>> KubeLeaseLock::update(LeaderElectionRecord record) {
  if (!lease_) {
    co_return kube::Error::config("lease " + describe() +
                                  " not initialized, call get or create first");
  }
  // Written on a copy, so a failed PUT leaves the last version the server confirmed.
  rapidjson::Document doc;
  doc.CopyFrom(*lease_, doc.GetAllocator());
  auto& alloc = doc.GetAllocator();

  rapidjson::Document spec;
  std::string specJson =
      meta::encodeToString(leaseSpecFromRecord(record), coordination::encodeLeaseSpec);
  spec.Parse<rapidjson::kParseIterativeFlag>(specJson.data(), specJson.size());
  rapidjson::Value specValue;
  specValue.CopyFrom(spec, alloc);
  setMember(doc, "spec", std::move(specValue), alloc);

  if (!labels_.empty() || !annotations_.empty()) {
    auto metadata = doc.FindMember("metadata");
    if (metadata == doc.MemberEnd() || !metadata->value.IsObject()) {
      co_return kube::Error::decode("lease " + describe() + ": metadata is not an object");
    }
    mergeStrings(metadata->value, "labels", labels_, alloc);
    mergeStrings(metadata->value, "annotations", annotations_, alloc);
  }

  std::string body = toJson(doc);
  kube::WriteOptions options;
  std::string subresource;
  auto updated =
      co_await client_->update(kLeases, namespace_, name_, std::move(body), options, subresource);
  if (!updated) {
    co_return updated.error();
  }
  auto snapshot = remember(std::move(*updated));
  if (!snapshot) {
    co_return snapshot.error();
  }
  co_return Ok{};
}

}  // namespace egress::leaderelection
