#include "pkg/apis/meta/status.h"

namespace egress::meta {
namespace {

std::string stringField(const rapidjson::Value& obj, const char* name) {
  auto it = obj.FindMember(name);
  if (it == obj.MemberEnd() || !it->value.IsString()) {
    return {};
  }
  return {it->value.GetString(), it->value.GetStringLength()};
}

}  // namespace

std::optional<Status> decodeStatus(const rapidjson::Value& v) {
  if (!v.IsObject() || stringField(v, "kind") != "Status") {
    return std::nullopt;
  }
  Status s;
  s.status = stringField(v, "status");
  s.message = stringField(v, "message");
  s.reason = stringField(v, "reason");
  if (auto it = v.FindMember("code"); it != v.MemberEnd() && it->value.IsInt()) {
    s.code = it->value.GetInt();
  }
  auto details = v.FindMember("details");
  if (details != v.MemberEnd() && details->value.IsObject()) {
    const auto& d = details->value;
    s.name = stringField(d, "name");
    s.group = stringField(d, "group");
    s.kind = stringField(d, "kind");
    s.uid = stringField(d, "uid");
    if (auto it = d.FindMember("retryAfterSeconds"); it != d.MemberEnd() && it->value.IsInt()) {
      s.retryAfterSeconds = it->value.GetInt();
    }
    if (auto it = d.FindMember("causes"); it != d.MemberEnd() && it->value.IsArray()) {
      for (const auto& c : it->value.GetArray()) {
        if (c.IsObject()) {
          s.causes.push_back(
              {stringField(c, "reason"), stringField(c, "message"), stringField(c, "field")});
        }
      }
    }
  }
  return s;
}

std::optional<Status> parseStatus(std::string_view body) {
  rapidjson::Document d;
  d.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (d.HasParseError()) {
    return std::nullopt;
  }
  return decodeStatus(d);
}

}  // namespace egress::meta
