// File: lister.h
//
// Typed read access to an informer's cache (client-go's generated listers): list everything or
// one namespace (through the namespace index), filtered by a label selector, or get one object
// by namespace and name. Results are shared, immutable objects; never modify them.
//
// Objects whose current version does not decode are not among the typed results (get() returns
// null for them); undecodable() lists them, so that a controller that must not act on a
// partial view (allocating addresses, for one) can fail closed while any exists.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pkg/apis/meta/label_selector.h"
#include "pkg/cache/indexer.h"

namespace egress::cache {

template <class T>
class Lister {
 public:
  using Ptr = std::shared_ptr<const T>;

  explicit Lister(const Indexer<T>& indexer) : indexer_(indexer) {}

  // Everything matching `selector`; a null selector lists everything (an empty one does too).
  std::vector<Ptr> list(const meta::LabelSelector* selector = nullptr) const {
    std::vector<Ptr> out;
    indexer_.forEach([&](const Ptr& obj) {
      if (matches(*obj, selector)) {
        out.push_back(obj);
      }
    });
    return out;
  }

  std::vector<Ptr> listInNamespace(const std::string& ns,
                                   const meta::LabelSelector* selector = nullptr) const {
    if (ns.empty()) {
      return list(selector);  // NamespaceAll
    }
    std::vector<Ptr> out;
    if (auto objs = indexer_.byIndex(kNamespaceIndex, ns)) {
      for (auto& obj : *objs) {
        if (matches(*obj, selector)) {
          out.push_back(std::move(obj));
        }
      }
    }
    return out;
  }

  // ns "" for cluster-scoped objects.
  Ptr get(const std::string& ns, const std::string& name) const {
    return indexer_.get(key(ns, name));
  }

  // Every undecodable entry, or those of one namespace ("" = all).
  std::vector<UndecodablePtr> undecodable(const std::string& ns = "") const {
    std::vector<UndecodablePtr> out;
    for (const auto& [key, entry] : indexer_.undecodable()) {
      if (ns.empty() || key.compare(0, ns.size() + 1, ns + "/") == 0) {
        out.push_back(entry);
      }
    }
    return out;
  }
  // The undecodable entry of one object, or null.
  UndecodablePtr undecodable(const std::string& ns, const std::string& name) const {
    return indexer_.undecodable(key(ns, name));
  }

 private:
  static std::string key(const std::string& ns, const std::string& name) {
    return ns.empty() ? name : ns + "/" + name;
  }
  static bool matches(const T& obj, const meta::LabelSelector* selector) {
    return selector == nullptr || selector->matches(obj.metadata.labels);
  }

  const Indexer<T>& indexer_;
};

}  // namespace egress::cache
