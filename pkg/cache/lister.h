// File: lister.h
//
// Typed read access to an informer's cache (client-go's generated listers): list everything or
// one namespace (through the namespace index), filtered by a label selector, or get one object
// by namespace and name. Results are shared, immutable objects; never modify them.
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
    for (const auto& [key, obj] : indexer_.items()) {
      if (matches(*obj, selector)) {
        out.push_back(obj);
      }
    }
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
    return indexer_.get(ns.empty() ? name : ns + "/" + name);
  }

 private:
  static bool matches(const T& obj, const meta::LabelSelector* selector) {
    return selector == nullptr || selector->matches(obj.metadata.labels);
  }

  const Indexer<T>& indexer_;
};

}  // namespace egress::cache
