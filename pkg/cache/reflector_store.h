// File: reflector_store.h
//
// What the reflector writes into: the untyped side of the DeltaFIFO. The reflector deals in
// the API's JSON only (so its coroutine code is compiled once, not per object type); the store
// decodes each object into its typed, transformed form.
#pragma once

#include <string>

#include <boost/asio/awaitable.hpp>
#include <rapidjson/document.h>

namespace egress::cache {

class ReflectorStore {
 public:
  virtual ~ReflectorStore() = default;
  // A (paginated or streaming) list starts; anything a failed earlier list left is discarded.
  virtual void startList() = 0;
  virtual void listItem(const rapidjson::Value& object) = 0;
  // The list that started will not finish (a later item or page failed): drop what it staged
  // now, not at the next start, so a failed list of 10,000 objects is not held through the
  // backoff that follows.
  virtual void abortList() = 0;
  // The list is complete at resourceVersion `rv`: Replace the store's content with it. A
  // coroutine, so that replacing 10,000 objects can yield to the io_context on the way.
  virtual boost::asio::awaitable<void> finishList(std::string rv) = 0;
  virtual void addJson(const rapidjson::Value& object) = 0;
  virtual void updateJson(const rapidjson::Value& object) = 0;
  virtual void removeJson(const rapidjson::Value& object) = 0;
  virtual void bookmark(const std::string& rv) { (void)rv; }
  virtual void resync() = 0;
};

}  // namespace egress::cache
