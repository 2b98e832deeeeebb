// Component tests of KubeLeaseLock against the in-process API server of test/unit/kube: the
// requests it makes on coordination.k8s.io/v1 leases (as client-go's LeaseLock makes them), that
// update PUTs back the object it read with only the spec replaced, and how API errors come back.
#include "pkg/leaderelection/kube_lease_lock.h"

#include <functional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/apis/meta/time.h"
#include "test/testutil/run_sync.h"
#include "test/unit/kube/fake_api_client.h"
#include "test/unit/kube/fake_api_server.h"

namespace egress::leaderelection {
namespace {

using kube::testing::FakeApiServer;
using kube::testing::FakeRequest;
using kube::testing::FakeResponse;
using ::testing::HasSubstr;
using testutil::runSync;

constexpr char kLeasePath[] = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/op";

// A Lease as a server returns it, with what our typed model does not know: managedFields, an
// unknown metadata field, and the feature-gated spec.strategy.
std::string leaseJson(const std::string& rv) {
  return R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"op",)"
         R"("namespace":"ns","uid":"u-1","resourceVersion":")" +
         rv +
         R"(","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"team":"net"},)"
         R"("annotations":{"note":"keep me"},"ownerReferences":[{"apiVersion":"v1",)"
         R"("kind":"ConfigMap","name":"owner","uid":"o-1"}],"managedFields":[{"manager":)"
         R"("kubectl","operation":"Update"}],"futureField":{"x":1}},"spec":{"holderIdentity":)"
         R"("a","leaseDurationSeconds":15,"acquireTime":"2026-11-30T03:27:13.123456Z",)"
         R"("renewTime":"2026-11-30T03:29:41.000042Z","leaseTransitions":4,)"
         R"("strategy":"OldestEmulationVersion"}})";
}

std::string statusJson(int code, const std::string& reason) {
  return R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"fake","reason":")" +
         reason + R"(","code":)" + std::to_string(code) + "}";
}

std::string toJson(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return buf.GetString();
}

// The body with metadata.resourceVersion set to `rv`: what the server stores and returns.
std::string withResourceVersion(const std::string& body, const std::string& rv) {
  rapidjson::Document d;
  d.Parse(body.c_str());
  auto& metadata = d["metadata"];
  auto it = metadata.FindMember("resourceVersion");
  if (it != metadata.MemberEnd()) {
    it->value.SetString(rv, d.GetAllocator());
  } else {
    metadata.AddMember("resourceVersion", rapidjson::Value(rv, d.GetAllocator()), d.GetAllocator());
  }
  return toJson(d);
}

meta::Time at(const char* rfc3339) {
  return *meta::parseRfc3339(rfc3339);
}

class KubeLeaseLockTest : public ::testing::Test {
 protected:
  std::unique_ptr<kube::RestClient> client(const FakeApiServer& server) {
    auto c = kube::testing::clientFor(ioc_.get_executor(), server);
    EXPECT_TRUE(c) << (c ? "" : c.error().message());
    return std::move(*c);
  }

  net::io_context ioc_;
};

// The record is read from spec (MicroTimes included), and update PUTs the object it read,
// resourceVersion and every metadata field included, with the spec replaced.
TEST_F(KubeLeaseLockTest, UpdatePutsBackTheObjectItReadWithOnlyTheSpecReplaced) {
  int rv = 41;
  FakeApiServer server(ioc_, [&](const FakeRequest& req) {
    FakeResponse r;
    if (req.method == "GET") {
      r.body = leaseJson(std::to_string(rv));
    } else {
      r.body = withResourceVersion(req.body, std::to_string(++rv));
    }
    return r;
  });
  auto c = client(server);
  KubeLeaseLock lock(*c, "ns", "op", "b");
  EXPECT_EQ(lock.describe(), "ns/op");
  EXPECT_EQ(lock.identity(), "b");

  auto got = runSync(ioc_, lock.get());
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->resourceVersion, "41");
  EXPECT_EQ(got->record.holderIdentity, "a");
  EXPECT_EQ(got->record.leaseDurationSeconds, 15);
  EXPECT_EQ(got->record.acquireTime, at("2026-11-30T03:27:13.123456Z"));
  EXPECT_EQ(got->record.renewTime, at("2026-11-30T03:29:41.000042Z"));
  EXPECT_EQ(got->record.leaderTransitions, 4);

  LeaderElectionRecord mine{"b", 15, at("2026-12-01T10:00:00.5Z"),
                            at("2026-12-01T10:00:02.000001Z"), 5};
  auto updated = runSync(ioc_, lock.update(mine));
  ASSERT_TRUE(updated) << updated.error().message();

  ASSERT_EQ(server.requests().size(), 2u);
  const auto& put = server.requests()[1];
  EXPECT_EQ(put.method, "PUT");
  EXPECT_EQ(put.target, kLeasePath);
  rapidjson::Document sent;
  sent.Parse(put.body.c_str());
  ASSERT_FALSE(sent.HasParseError()) << put.body;
  rapidjson::Document original;
  original.Parse(leaseJson("41").c_str());
  EXPECT_EQ(toJson(sent["metadata"]), toJson(original["metadata"]));
  EXPECT_STREQ(sent["apiVersion"].GetString(), "coordination.k8s.io/v1");
  EXPECT_STREQ(sent["kind"].GetString(), "Lease");
  // client-go replaces the whole spec (a non-coordinated elector drops strategy).
  EXPECT_EQ(toJson(sent["spec"]),
            R"({"holderIdentity":"b","leaseDurationSeconds":15,)"
            R"("acquireTime":"2026-12-01T10:00:00.500000Z",)"
            R"("renewTime":"2026-12-01T10:00:02.000001Z","leaseTransitions":5})");

  // The next update writes over the version the PUT returned.
  ASSERT_TRUE(runSync(ioc_, lock.update(mine)));
  rapidjson::Document second;
  second.Parse(server.requests()[2].body.c_str());
  EXPECT_STREQ(second["metadata"]["resourceVersion"].GetString(), "42");
}

// A release writes holderIdentity "" explicitly (client-go sends a pointer to "").
TEST_F(KubeLeaseLockTest, ReleasedRecordWritesAnEmptyHolder) {
  FakeApiServer server(ioc_, [&](const FakeRequest& req) {
    FakeResponse r;
    r.body = req.method == "GET" ? leaseJson("7") : withResourceVersion(req.body, "8");
    return r;
  });
  auto c = client(server);
  KubeLeaseLock lock(*c, "ns", "op", "a");
  ASSERT_TRUE(runSync(ioc_, lock.get()));
  LeaderElectionRecord released{"", 1, at("2026-12-01T10:00:00Z"), at("2026-12-01T10:00:00Z"), 4};
  ASSERT_TRUE(runSync(ioc_, lock.update(released)));
  EXPECT_THAT(server.requests()[1].body,
              HasSubstr(R"("spec":{"holderIdentity":"","leaseDurationSeconds":1,)"));
  EXPECT_THAT(server.requests()[1].body, HasSubstr(R"("leaseTransitions":4})"));
}

// A server without the Lease until it is POSTed (`exists` then set): GET answers 404 before,
// the POST resourceVersion 1, every later write 2.
std::function<FakeResponse(const FakeRequest&)> absentUntilCreated(bool& exists) {
  return [&exists](const FakeRequest& req) {
    FakeResponse r;
    if (req.method == "GET" && !exists) {
      r.status = 404;
      r.body = statusJson(404, "NotFound");
    } else if (req.method == "POST") {
      exists = true;
      r.status = 201;
      r.body = withResourceVersion(req.body, "1");
    } else {
      r.body = withResourceVersion(req.body, "2");
    }
    return r;
  };
}

// NotFound on get; create POSTs a new Lease (with the lock's labels) to the collection;
// labels are merged into an existing object's on update, the others kept.
TEST_F(KubeLeaseLockTest, CreatesWhenAbsentAndMergesLabels) {
  bool exists = false;
  FakeApiServer server(ioc_, absentUntilCreated(exists));
  auto c = client(server);
  KubeLeaseLock lock(*c, "ns", "op", "a", {{"app", "egress"}});
  auto got = runSync(ioc_, lock.get());
  ASSERT_FALSE(got);
  EXPECT_TRUE(got.error().isNotFound()) << got.error().message();

  LeaderElectionRecord mine{"a", 15, at("2026-12-01T10:00:00Z"), at("2026-12-01T10:00:00Z"), 0};
  auto created = runSync(ioc_, lock.create(mine));
  ASSERT_TRUE(created) << created.error().message();
  const auto& post = server.requests()[1];
  EXPECT_EQ(post.method, "POST");
  EXPECT_EQ(post.target, "/apis/coordination.k8s.io/v1/namespaces/ns/leases");
  EXPECT_EQ(post.body,
            R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"op",)"
            R"("namespace":"ns","labels":{"app":"egress"}},"spec":{"holderIdentity":"a",)"
            R"("leaseDurationSeconds":15,"acquireTime":"2026-12-01T10:00:00.000000Z",)"
            R"("renewTime":"2026-12-01T10:00:00.000000Z","leaseTransitions":0}})");

  // Update over the created object: resourceVersion 1, our label still set.
  ASSERT_TRUE(runSync(ioc_, lock.update(mine)));
  rapidjson::Document put;
  put.Parse(server.requests()[2].body.c_str());
  EXPECT_STREQ(put["metadata"]["resourceVersion"].GetString(), "1");
  EXPECT_STREQ(put["metadata"]["labels"]["app"].GetString(), "egress");

  // Over an object someone else labelled: their labels stay, ours is (re)set.
  FakeApiServer labelled(ioc_, [&](const FakeRequest& req) {
    FakeResponse r;
    r.body = req.method == "GET" ? leaseJson("9") : withResourceVersion(req.body, "10");
    return r;
  });
  auto c2 = client(labelled);
  KubeLeaseLock merged(*c2, "ns", "op", "b", {{"app", "egress"}});
  ASSERT_TRUE(runSync(ioc_, merged.get()));
  ASSERT_TRUE(runSync(ioc_, merged.update(mine)));
  rapidjson::Document body;
  body.Parse(labelled.requests()[1].body.c_str());
  EXPECT_EQ(toJson(body["metadata"]["labels"]), R"({"team":"net","app":"egress"})");
}

// The owner's annotations (egw-agent's report) are set on create and merged on every update
// like the labels: ours (re)set to the value last given, everyone else's kept, "" written as "".
TEST_F(KubeLeaseLockTest, WritesItsAnnotationsOnCreateAndMergesThemOnUpdate) {
  bool exists = false;
  FakeApiServer server(ioc_, absentUntilCreated(exists));
  auto c = client(server);
  KubeLeaseLock lock(*c, "ns", "op", "a");
  lock.setAnnotation("egressgateway.dev/programmed", "");
  ASSERT_FALSE(runSync(ioc_, lock.get()));
  LeaderElectionRecord mine{"a", 6, at("2026-12-01T10:00:00Z"), at("2026-12-01T10:00:00Z"), 0};
  ASSERT_TRUE(runSync(ioc_, lock.create(mine)));
  rapidjson::Document post;
  post.Parse(server.requests()[1].body.c_str());
  EXPECT_EQ(toJson(post["metadata"]["annotations"]), R"({"egressgateway.dev/programmed":""})");

  lock.setAnnotation("egressgateway.dev/programmed", "192.168.50.200,fd00:50::200");
  ASSERT_TRUE(runSync(ioc_, lock.update(mine)));
  rapidjson::Document put;
  put.Parse(server.requests()[2].body.c_str());
  EXPECT_EQ(toJson(put["metadata"]["annotations"]),
            R"({"egressgateway.dev/programmed":"192.168.50.200,fd00:50::200"})");
  // Kept on every later write, until changed.
  ASSERT_TRUE(runSync(ioc_, lock.update(mine)));
  rapidjson::Document again;
  again.Parse(server.requests()[3].body.c_str());
  EXPECT_EQ(toJson(again["metadata"]["annotations"]),
            R"({"egressgateway.dev/programmed":"192.168.50.200,fd00:50::200"})");

  // Over an object someone else annotated (and with a stale value of ours): theirs stay, ours
  // is replaced.
  FakeApiServer annotated(ioc_, [&](const FakeRequest& req) {
    FakeResponse r;
    if (req.method == "GET") {
      rapidjson::Document d;
      d.Parse(leaseJson("9").c_str());
      d["metadata"]["annotations"].AddMember("egressgateway.dev/programmed", "192.168.50.9",
                                             d.GetAllocator());
      r.body = toJson(d);
    } else {
      r.body = withResourceVersion(req.body, "10");
    }
    return r;
  });
  auto c2 = client(annotated);
  KubeLeaseLock merged(*c2, "ns", "op", "a", {{"app", "egress"}});
  merged.setAnnotation("egressgateway.dev/programmed", "");
  ASSERT_TRUE(runSync(ioc_, merged.get()));
  ASSERT_TRUE(runSync(ioc_, merged.update(mine)));
  rapidjson::Document body;
  body.Parse(annotated.requests()[1].body.c_str());
  EXPECT_EQ(toJson(body["metadata"]["annotations"]),
            R"({"note":"keep me","egressgateway.dev/programmed":""})");
  EXPECT_EQ(toJson(body["metadata"]["labels"]), R"({"team":"net","app":"egress"})");
}

// Optimistic concurrency: a 409 comes back as isConflict(), and the lock keeps the last version
// the server confirmed (the next update still carries it).
TEST_F(KubeLeaseLockTest, ConflictIsReportedAndTheConfirmedVersionKept) {
  int puts = 0;
  FakeApiServer server(ioc_, [&](const FakeRequest& req) {
    FakeResponse r;
    if (req.method == "GET") {
      r.body = leaseJson("41");
    } else if (++puts == 1) {
      r.status = 409;
      r.body = statusJson(409, "Conflict");
    } else {
      r.body = withResourceVersion(req.body, "50");
    }
    return r;
  });
  auto c = client(server);
  KubeLeaseLock lock(*c, "ns", "op", "b");
  ASSERT_TRUE(runSync(ioc_, lock.get()));
  LeaderElectionRecord mine{"b", 15, at("2026-12-01T10:00:00Z"), at("2026-12-01T10:00:00Z"), 5};
  auto first = runSync(ioc_, lock.update(mine));
  ASSERT_FALSE(first);
  EXPECT_TRUE(first.error().isConflict()) << first.error().message();
  ASSERT_TRUE(runSync(ioc_, lock.update(mine)));
  rapidjson::Document second;
  second.Parse(server.requests()[2].body.c_str());
  EXPECT_STREQ(second["metadata"]["resourceVersion"].GetString(), "41");
}

// client-go: "lease not initialized, call get or create first".
TEST_F(KubeLeaseLockTest, UpdateBeforeGetFails) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) { return FakeResponse{}; });
  auto c = client(server);
  KubeLeaseLock lock(*c, "ns", "op", "a");
  LeaderElectionRecord mine{"a", 15, {}, {}, 0};
  auto r = runSync(ioc_, lock.update(mine));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("not initialized"));
  EXPECT_TRUE(server.requests().empty());
}

// A Lease the typed model cannot read is a decode error, not a crash or a zero record.
TEST_F(KubeLeaseLockTest, UndecodableLeaseIsADecodeError) {
  FakeApiServer server(ioc_, [&](const FakeRequest&) {
    FakeResponse r;
    r.body = R"({"metadata":{"name":"op"},"spec":{"leaseDurationSeconds":"15"}})";
    return r;
  });
  auto c = client(server);
  KubeLeaseLock lock(*c, "ns", "op", "a");
  auto got = runSync(ioc_, lock.get());
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind(), kube::Error::Kind::Decode);
  EXPECT_THAT(got.error().message(), HasSubstr("spec.leaseDurationSeconds"));
}

}  // namespace
}  // namespace egress::leaderelection
