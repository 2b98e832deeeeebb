// File: typed_client.h
//
// The typed client that generated clientsets hand out per kind (client-gen's typed clients):
// get, list, watch, create, update, updateStatus, patch, apply and remove of one resource in one
// namespace, with objects decoded into and encoded from the API types. It is a thin layer over
// kube::RestClient; ApiType<T> (specialised by the generated code) names the resource and the
// codec of T.
//
//   auto policies = clientset.networkingV1alpha1().egressGatewayPolicies("team-a");
//   auto got = co_await policies.get("billing");
//   if (!got) { ... got.error().isNotFound() ... }
//
// Keep a typed client in a named variable: it is a small value (a client reference and a
// namespace), and g++ 12 mishandles temporaries that live across a co_await. The coroutines do
// not use `this`: each copies what it needs, so the typed client may go away while one runs.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/encode.h"
#include "pkg/apis/meta/object_list.h"
#include "pkg/kube/errors.h"
#include "pkg/kube/rest_client.h"

namespace egress::client {

namespace net = boost::asio;

// Specialised for each API type by the generated code:
//   static kube::Resource resource();
//   static meta::Decoded<T> decode(const rapidjson::Value&);
//   static void encode(meta::JsonWriter&, const T&);
template <class T>
struct ApiType;

// A decoded API object, or the error as a kube::Error (reason "Decode" for a body that does not
// match the type, naming the field).
template <class T>
kube::Result<T> decodeAs(const kube::Result<rapidjson::Document>& doc) {
  if (!doc) {
    return doc.error();
  }
  auto decoded = ApiType<T>::decode(*doc);
  if (!decoded) {
    return kube::Error::decode(decoded.error().toString());
  }
  return std::move(*decoded);
}

template <class T>
kube::Result<meta::ObjectList<T>> decodeListAs(const kube::Result<rapidjson::Document>& doc) {
  if (!doc) {
    return doc.error();
  }
  auto decoded = meta::decodeList(*doc, ApiType<T>::decode);
  if (!decoded) {
    return kube::Error::decode(decoded.error().toString());
  }
  return std::move(*decoded);
}

template <class T>
std::string encodeJson(const T& obj) {
  return meta::encodeToString(obj, ApiType<T>::encode);
}

template <class T>
class TypedClient {
 public:
  // `ns` is "" for cluster-scoped kinds (and for list/watch across all namespaces).
  TypedClient(kube::RestClient& client, std::string ns) : client_(&client), ns_(std::move(ns)) {}

  const std::string& ns() const { return ns_; }

  net::awaitable<kube::Result<T>> get(std::string name) const {
    return getIn(*client_, ns_, std::move(name));
  }
  // One page (follow metadata.continue for more, as with client-go).
  net::awaitable<kube::Result<meta::ObjectList<T>>> list(kube::ListOptions opts) const {
    return listIn(*client_, ns_, std::move(opts));
  }
  // Events carry raw objects: decode them with ApiType<T>::decode (or use an informer).
  net::awaitable<kube::Result<std::unique_ptr<kube::WatchStream>>> watch(
      const kube::ListOptions& opts) const {
    return client_->watch(ApiType<T>::resource(), ns_, opts);
  }
  net::awaitable<kube::Result<T>> create(T obj, kube::WriteOptions opts) const {
    return createIn(*client_, ns_, encodeJson(obj), std::move(opts));
  }
  // PUT of the whole object: only for kinds this program owns entirely; the resourceVersion in
  // obj.metadata makes it a compare-and-swap (Conflict when stale).
  net::awaitable<kube::Result<T>> update(T obj, kube::WriteOptions opts) const {
    std::string name = obj.metadata.name;
    return updateIn(*client_, ns_, std::move(name), encodeJson(obj), std::move(opts),
                    std::string());
  }
  net::awaitable<kube::Result<T>> updateStatus(T obj, kube::WriteOptions opts) const {
    std::string name = obj.metadata.name;
    return updateIn(*client_, ns_, std::move(name), encodeJson(obj), std::move(opts), "status");
  }
  net::awaitable<kube::Result<T>> patch(std::string name, kube::PatchType type, std::string body,
                                        kube::WriteOptions opts, std::string subresource) const {
    return patchIn(*client_, ns_, std::move(name), type, std::move(body), std::move(opts),
                   std::move(subresource));
  }
  // Server-side apply of `body`, the fields this manager owns (an apply configuration: JSON with
  // apiVersion, kind, metadata.name and only the owned fields). opts.fieldManager is required.
  net::awaitable<kube::Result<T>> apply(std::string name, std::string body, kube::WriteOptions opts,
                                        std::string subresource) const {
    return applyIn(*client_, ns_, std::move(name), std::move(body), std::move(opts),
                   std::move(subresource));
  }
  net::awaitable<kube::Result<Ok>> remove(std::string name, kube::DeleteOptions opts) const {
    return removeIn(*client_, ns_, std::move(name), std::move(opts));
  }

 private:
  static net::awaitable<kube::Result<T>> getIn(kube::RestClient& c, std::string ns,
                                               std::string name) {
    kube::Resource r = ApiType<T>::resource();
    auto doc = co_await c.get(std::move(r), std::move(ns), std::move(name));
    co_return decodeAs<T>(doc);
  }
  static net::awaitable<kube::Result<meta::ObjectList<T>>> listIn(kube::RestClient& c,
                                                                  std::string ns,
                                                                  kube::ListOptions opts) {
    kube::Resource r = ApiType<T>::resource();
    auto doc = co_await c.list(std::move(r), std::move(ns), std::move(opts));
    co_return decodeListAs<T>(doc);
  }
  static net::awaitable<kube::Result<T>> createIn(kube::RestClient& c, std::string ns,
                                                  std::string body, kube::WriteOptions opts) {
    kube::Resource r = ApiType<T>::resource();
    auto doc = co_await c.create(std::move(r), std::move(ns), std::move(body), std::move(opts));
    co_return decodeAs<T>(doc);
  }
  static net::awaitable<kube::Result<T>> updateIn(kube::RestClient& c, std::string ns,
                                                  std::string name, std::string body,
                                                  kube::WriteOptions opts,
                                                  std::string subresource) {
    kube::Resource r = ApiType<T>::resource();
    auto doc = co_await c.update(std::move(r), std::move(ns), std::move(name), std::move(body),
                                 std::move(opts), std::move(subresource));
    co_return decodeAs<T>(doc);
  }
  static net::awaitable<kube::Result<T>> patchIn(kube::RestClient& c, std::string ns,
                                                 std::string name, kube::PatchType type,
                                                 std::string body, kube::WriteOptions opts,
                                                 std::string subresource) {
    kube::Resource r = ApiType<T>::resource();
    auto doc = co_await c.patch(std::move(r), std::move(ns), std::move(name), type, std::move(body),
                                std::move(opts), std::move(subresource));
    co_return decodeAs<T>(doc);
  }
  static net::awaitable<kube::Result<T>> applyIn(kube::RestClient& c, std::string ns,
                                                 std::string name, std::string body,
                                                 kube::WriteOptions opts, std::string subresource) {
    kube::Resource r = ApiType<T>::resource();
    auto doc = co_await c.apply(std::move(r), std::move(ns), std::move(name), std::move(body),
                                std::move(opts), std::move(subresource));
    co_return decodeAs<T>(doc);
  }
  static net::awaitable<kube::Result<Ok>> removeIn(kube::RestClient& c, std::string ns,
                                                   std::string name, kube::DeleteOptions opts) {
    kube::Resource r = ApiType<T>::resource();
    auto doc = co_await c.remove(std::move(r), std::move(ns), std::move(name), std::move(opts));
    if (!doc) {
      co_return doc.error();
    }
    co_return Ok{};
  }

  kube::RestClient* client_;
  std::string ns_;
};

}  // namespace egress::client
