// File: watch_decoder.h
//
// Incremental decoder of a watch response body: newline-delimited JSON watch events
// ({"type":"ADDED","object":{...}}), fed with whatever byte ranges the network delivers. An
// event may be split anywhere across reads, several may arrive in one read, and one event may
// be many megabytes; each complete line becomes one WatchEvent. No Beast here, so it is unit
// tested byte by byte.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/kube/errors.h"

namespace egress::kube {

enum class WatchEventType { Added, Modified, Deleted, Bookmark, Error };

const char* toString(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::Added;
  // The whole decoded event line; object() is its "object" member.
  rapidjson::Document doc;

  const rapidjson::Value& object() const;
  // For Error events: the Status the server sent (e.g. 410 Gone / Expired) as an Error.
  Error toError() const;
};

class WatchDecoder {
 public:
  explicit WatchDecoder(size_t maxEventBytes = size_t{256} << 20) : maxEventBytes_(maxEventBytes) {}

  // Consumes bytes and appends every event completed by them to `out`.
  Result<Ok> feed(std::string_view bytes, std::vector<WatchEvent>& out);
  // The stream ended: anything but whitespace left over is a truncated event.
  Result<Ok> finish() const;
  // Bytes of an incomplete event held back.
  size_t pending() const { return pending_.size(); }

 private:
  Result<Ok> decodeLine(std::string_view line, std::vector<WatchEvent>& out) const;

  size_t maxEventBytes_;
  std::string pending_;
};

}  // namespace egress::kube
