#include "pkg/kube/watch_decoder.h"

#include <cstring>

namespace egress::kube {

const char* toString(WatchEventType type) {
  switch (type) {
    case WatchEventType::Added:
      return "ADDED";
    case WatchEventType::Modified:
      return "MODIFIED";
    case WatchEventType::Deleted:
      return "DELETED";
    case WatchEventType::Bookmark:
      return "BOOKMARK";
    case WatchEventType::Error:
      return "ERROR";
  }
  return "?";
}

const rapidjson::Value& WatchEvent::object() const {
  static const rapidjson::Value kNull;
  auto it = doc.FindMember("object");
  return it == doc.MemberEnd() ? kNull : it->value;
}

Error WatchEvent::toError() const {
  auto status = meta::decodeStatus(object());
  if (!status) {
    return Error::decode("watch ERROR event without a Status object");
  }
  const int code = status->code;
  return Error::api(code, std::move(*status));
}

namespace {

bool isBlank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<Ok> WatchDecoder::decodeLine(std::string_view line, std::vector<WatchEvent>& out) const {
  if (isBlank(line)) {
    return Ok{};
  }
  WatchEvent event;
  event.doc.Parse<rapidjson::kParseIterativeFlag>(line.data(), line.size());
  if (event.doc.HasParseError()) {
    return Error::decode("watch event is not valid JSON (at byte " +
                         std::to_string(event.doc.GetErrorOffset()) + " of " +
                         std::to_string(line.size()) + ")");
  }
  if (!event.doc.IsObject()) {
    return Error::decode("watch event is not a JSON object");
  }
  auto type = event.doc.FindMember("type");
  auto object = event.doc.FindMember("object");
  if (type == event.doc.MemberEnd() || !type->value.IsString()) {
    return Error::decode("watch event without a type");
  }
  if (object == event.doc.MemberEnd() || !object->value.IsObject()) {
    return Error::decode("watch event without an object");
  }
  const char* t = type->value.GetString();
  if (std::strcmp(t, "ADDED") == 0) {
    event.type = WatchEventType::Added;
  } else if (std::strcmp(t, "MODIFIED") == 0) {
    event.type = WatchEventType::Modified;
  } else if (std::strcmp(t, "DELETED") == 0) {
    event.type = WatchEventType::Deleted;
  } else if (std::strcmp(t, "BOOKMARK") == 0) {
    event.type = WatchEventType::Bookmark;
  } else if (std::strcmp(t, "ERROR") == 0) {
    event.type = WatchEventType::Error;
  } else {
    return Error::decode(std::string("unknown watch event type \"") + t + "\"");
  }
  out.push_back(std::move(event));
  return Ok{};
}

Result<Ok> WatchDecoder::feed(std::string_view bytes, std::vector<WatchEvent>& out) {
  while (!bytes.empty()) {
    const auto nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      if (pending_.size() + bytes.size() > maxEventBytes_) {
        return Error::decode("watch event larger than " + std::to_string(maxEventBytes_) +
                             " bytes");
      }
      pending_.append(bytes);
      return Ok{};
    }
    Result<Ok> decoded = Ok{};
    if (pending_.empty()) {
      // The common case: a whole line inside this read, decoded without a copy.
      decoded = decodeLine(bytes.substr(0, nl), out);
    } else {
      pending_.append(bytes.substr(0, nl));
      decoded = decodeLine(pending_, out);
      pending_.clear();
    }
    if (!decoded) {
      return decoded;
    }
    bytes.remove_prefix(nl + 1);
  }
  return Ok{};
}

Result<Ok> WatchDecoder::finish() const {
  if (!isBlank(pending_)) {
    return Error::decode("watch stream ended inside an event (" + std::to_string(pending_.size()) +
                         " bytes)");
  }
  return Ok{};
}

}  // namespace egress::kube
