// File: list_page.h
//
// One page of a LIST response, decoded item by item. A 10,000-pod LIST is about 117 MB of JSON
// (3.9 MB gzip-compressed on the wire); decoded whole into one RapidJSON document it took the
// operator's start-up to 376 MiB. ListPage keeps only the body as it arrived (compressed, when
// the server compressed it), decompresses it a chunk at a time and parses one item at a time, so
// a LIST costs its wire size plus one object. client-go decodes a LIST whole; this is where we
// spend less memory than a Go operator does.
//
// RapidJSON 1.1.0 (Debian's) has no resumable parser, so a small scanner walks the list object's
// members: it finds each item's bytes by bracket and string scanning and hands them to RapidJSON,
// which checks them in full. Other members are parsed too, so a malformed body is an error
// whatever part of it is broken.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include <rapidjson/document.h>

#include "pkg/kube/errors.h"

namespace egress::kube {

class ListPage {
 public:
  // `body` is the response body as received; `gzip` when it is still gzip-compressed. An empty
  // body is an empty list. maxBytes bounds the decompressed size.
  ListPage(std::string body, bool gzip, size_t maxBytes = size_t{1} << 30,
           size_t chunkBytes = 64 * 1024);
  // A page from a list already decoded (fakes in tests).
  static ListPage fromDocument(const rapidjson::Value& list);
  ~ListPage();
  ListPage(ListPage&&) noexcept;
  ListPage& operator=(ListPage&&) noexcept;

  // The next item, in the order of the list; nullopt after the last. A Decode error (with the
  // byte offset in the decompressed body) for a body that is not a JSON list object, returned
  // again by every later call.
  Result<std::optional<rapidjson::Document>> next();

  // The list's metadata.resourceVersion and metadata.continue; complete once next() has
  // returned nullopt (the metadata may come after the items).
  const std::string& resourceVersion() const;
  const std::string& continueToken() const;

  // The size of the body the page holds: as it arrived, so compressed when the server
  // compressed it.
  size_t bodyBytes() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace egress::kube
