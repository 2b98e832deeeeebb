// File: model_api_server.h
//
// An in-memory Kubernetes API server for the operator's model test (operator_model_test.cc).
// It keeps objects of any resource (by plural name) with resourceVersions, uids, generations and
// deletionTimestamps, and answers, through a kube::Transport per operator replica, the verbs the
// operator uses: GET, LIST, POST, PUT (resourceVersion precondition, the status subresource
// apart), merge and strategic merge PATCH (as JSON merge patches; "conditions" lists merged by
// type), server-side apply (as create-or-replace: the operator is the only field manager of what
// it applies), DELETE (pods and objects with finalizers get a deletionTimestamp; preconditions
// honoured). Informers get ListerWatchers over the same store whose watch events arrive after a
// random delay, in order. Faults are injected on the operator's writes: 409 conflicts and 500s
// that change nothing, and replies lost after the write took effect; a partitioned replica's
// requests and watches fail. The simulated rest of the cluster writes straight into the store,
// and its changes are watched like any other.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <rapidjson/document.h>

#include "pkg/base/clock.h"
#include "pkg/cache/informer_factory.h"
#include "pkg/kube/transport.h"

namespace egress::controller::model {

struct Faults {
  double conflict = 0;     // a write answered 409 Conflict, nothing changed
  double serverError = 0;  // a write answered 500, nothing changed
  double lostReply = 0;    // a write that took effect, its reply lost (a transport error)
  std::chrono::milliseconds maxWatchDelay{0};  // each watch event waits up to this, in order
};

// One operator replica's connection to the server.
struct Link {
  bool partitioned = false;  // every request, list and watch fails
};

class ApiServer {
 public:
  ApiServer(net::any_io_executor executor, Clock& clock, std::mt19937_64& random);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  Faults faults;
  // Called with each write the operator makes and its answer (for debugging a failing seed).
  std::function<void(const kube::HttpRequest&, int status, bool lostReply)> onWrite;

  // The store, for the simulated cluster and the invariants. Keys are "namespace/name", or the
  // name of a cluster-scoped object.
  const rapidjson::Value* get(const std::string& resource, const std::string& key) const;
  std::vector<const rapidjson::Value*> list(const std::string& resource) const;
  // Creates the object (uid, resourceVersion, generation and creationTimestamp set here); its
  // uid, or "" when it exists already.
  std::string create(const std::string& resource, rapidjson::Document obj);
  // Replaces the object whole (status included); the generation moves when spec changed.
  void replace(const std::string& resource, rapidjson::Document obj);
  // Deletes the object now, whatever its finalizers or grace period.
  void remove(const std::string& resource, const std::string& key);

  std::unique_ptr<kube::Transport> transport(Link& link);
  cache::SharedInformerFactory::ListerWatcherMaker listerWatchers(Link& link);

  // The store's current resourceVersion: what a read now reflects.
  int64_t resourceVersion() const { return rv_; }

  // Hands every open watch the events that are due.
  void deliver();
  // Ends every open watch of `link` with an error, as a cut connection does.
  void breakWatches(const Link& link);

  // Writes the operator made (through a transport), and how many of them were faulted.
  int writes() const { return writes_; }
  int faulted() const { return faulted_; }

  kube::HttpResponse handle(const kube::HttpRequest& request, bool& lostReply);

  struct Watcher;
  struct Event {
    std::string resource;
    int64_t rv = 0;
    std::string type;  // ADDED, MODIFIED, DELETED
    std::string json;  // the object
  };

 private:
  kube::HttpResponse answer(const kube::HttpRequest& request, bool& lostReply);
  void emit(const std::string& resource, const std::string& type, const rapidjson::Value& obj);
  void queue(Watcher& w, const Event& e);
  bool roll(double p);

  net::any_io_executor executor_;
  Clock& clock_;
  std::mt19937_64& random_;
  int64_t rv_ = 1;
  int64_t uid_ = 0;
  int writes_ = 0;
  int faulted_ = 0;
  std::map<std::string, std::map<std::string, rapidjson::Document>> objects_;
  std::vector<Event> history_;
  std::vector<std::shared_ptr<Watcher>> watchers_;
};

// Object helpers shared with the test.
std::string toJson(const rapidjson::Value& v);
rapidjson::Document parseJson(const std::string& json);
// "namespace/name" or "name".
std::string keyOf(const rapidjson::Value& obj);
// obj[a][b]... or nullptr.
const rapidjson::Value* path(const rapidjson::Value& obj, std::initializer_list<const char*> keys);
std::string stringAt(const rapidjson::Value& obj, std::initializer_list<const char*> keys);
// The strings of the array at obj[a][b]...; none if it is absent or no array.
std::vector<std::string> stringsAt(const rapidjson::Value& obj,
                                   std::initializer_list<const char*> keys);

}  // namespace egress::controller::model
