// File: object_list.h
//
// Any `<Kind>List` the API server returns ({"metadata": ListMeta, "items": [...]}), decoded with
// the item type's decoder; an item's error is reported under its index
// ("items[3].metadata.name: expected string").
#pragma once

#include <type_traits>
#include <utility>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/list_meta.h"

namespace egress::meta {

template <class T>
struct ObjectList {
  ListMeta metadata;
  std::vector<T> items;
};

// The item type decoded by `F` (Pod for core::decodePod).
template <class F>
using DecodedItem = std::remove_cvref_t<
    decltype(*std::declval<std::invoke_result_t<F&, const rapidjson::Value&>>())>;

// decodeList(v, core::decodePod) -> Decoded<ObjectList<Pod>>
template <class F, class T = DecodedItem<F>>
Decoded<ObjectList<T>> decodeList(const rapidjson::Value& v, F&& decodeItem) {
  FieldReader r(v);
  ObjectList<T> list;
  r.object("metadata", list.metadata, decodeListMeta);
  r.list("items", list.items, decodeItem);
  return r.finish(std::move(list));
}

}  // namespace egress::meta
