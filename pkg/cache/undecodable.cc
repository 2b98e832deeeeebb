#include "pkg/cache/undecodable.h"

namespace egress::cache {
namespace {

const rapidjson::Value* member(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) {
    return nullptr;
  }
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

std::string stringMember(const rapidjson::Value* v, const char* name) {
  const rapidjson::Value* m = v == nullptr ? nullptr : member(*v, name);
  return m != nullptr && m->IsString() ? std::string(m->GetString(), m->GetStringLength()) : "";
}

}  // namespace

std::string rawResourceVersion(const rapidjson::Value& object) {
  return stringMember(member(object, "metadata"), "resourceVersion");
}

std::optional<UndecodableObject> describeUndecodable(const rapidjson::Value& object,
                                                     std::string error) {
  const rapidjson::Value* meta = member(object, "metadata");
  const std::string name = stringMember(meta, "name");
  if (name.empty()) {
    return std::nullopt;
  }
  const std::string ns = stringMember(meta, "namespace");
  UndecodableObject out;
  out.key = ns.empty() ? name : ns + "/" + name;
  out.resourceVersion = stringMember(meta, "resourceVersion");
  out.error = std::move(error);
  return out;
}

}  // namespace egress::cache
