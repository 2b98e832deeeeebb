// File: list_meta.h
//
// metav1.ListMeta: the resourceVersion a list was served at (where the informer's watch
// resumes), the continue token of a paginated list, and the server's estimate of what remains.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"

namespace egress::meta {

struct ListMeta {
  std::string resourceVersion;
  std::string continue_;  // trailing underscore: `continue` is a keyword
  std::optional<int64_t> remainingItemCount;

  bool operator==(const ListMeta&) const = default;
};

Decoded<ListMeta> decodeListMeta(const rapidjson::Value& v);

}  // namespace egress::meta
