// The YAML users copy and the objects the API server rejects, read with our decoders and
// validate(): every example in deploy/examples/ decodes and is valid; every object in
// test/testdata/invalid/ (each rejected by the real API server in crd_e2e_test) is refused by
// the decoder or by validate() too, at the field path its `# expect:` line names, so the
// controllers never act on what the schema forbids.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <yaml-cpp/yaml.h>

#include "pkg/apis/networking/v1alpha1/validation.h"
#include "pkg/apis/networking/v1alpha1/zz_generated.codec.h"

namespace egress::networking::v1alpha1 {
namespace {

// YAML as kubectl sends it (sigs.k8s.io/yaml): plain scalars that look like integers, floats
// or booleans are those, quoted ones are strings. (`cpu: 0.5` is a JSON number, which a CRD's
// int-or-string quantity refuses, while `cpu: "0.5"` is a string.)
rapidjson::Value toJson(const YAML::Node& n, rapidjson::Document::AllocatorType& a) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      rapidjson::Value obj(rapidjson::kObjectType);
      for (const auto& kv : n) {
        obj.AddMember(rapidjson::Value(kv.first.as<std::string>().c_str(), a), toJson(kv.second, a),
                      a);
      }
      return obj;
    }
    case YAML::NodeType::Sequence: {
      rapidjson::Value arr(rapidjson::kArrayType);
      for (const auto& item : n) {
        arr.PushBack(toJson(item, a), a);
      }
      return arr;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() != "!") {
        if (s == "true" || s == "false") {
          return rapidjson::Value(s == "true");
        }
        int64_t i = 0;
        try {
          size_t used = 0;
          i = std::stoll(s, &used);
          if (used == s.size()) {
            return rapidjson::Value(i);
          }
        } catch (const std::exception&) {
        }
        // go-yaml's float syntax (yamlStyleFloat).
        static const std::regex kFloat(R"(^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$)");
        if (std::regex_match(s, kFloat)) {
          return rapidjson::Value(std::stod(s));
        }
      }
      return rapidjson::Value(s.c_str(), a);
    }
    default:
      return rapidjson::Value();
  }
}

struct Object {
  std::string file;
  std::string kind;
  rapidjson::Document doc;
};

std::vector<std::unique_ptr<Object>> ourObjects(const std::string& dir) {
  std::vector<std::unique_ptr<Object>> out;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(EGRESS_SOURCE_DIR) + "/" + dir)) {
    if (entry.path().extension() != ".yaml") {
      continue;
    }
    for (const auto& node : YAML::LoadAllFromFile(entry.path().string())) {
      if (!node.IsMap() || !node["apiVersion"] ||
          node["apiVersion"].as<std::string>() != kApiVersion) {
        continue;
      }
      auto o = std::make_unique<Object>();
      o->file = entry.path().filename().string();
      o->kind = node["kind"].as<std::string>();
      rapidjson::Value v = toJson(node, o->doc.GetAllocator());
      static_cast<rapidjson::Value&>(o->doc).Swap(v);
      out.push_back(std::move(o));
    }
  }
  return out;
}

// The decode error (its message prefixed "decode: "), else validate()'s errors.
validation::FieldErrors problemsOf(const Object& o) {
  auto check = [](const auto& decoded) -> validation::FieldErrors {
    if (!decoded) {
      return {{decoded.error().path, "decode: " + decoded.error().message}};
    }
    return validate(*decoded);
  };
  if (o.kind == "IPAMPool") {
    return check(decodeIPAMPool(o.doc));
  }
  if (o.kind == "EgressGatewayPolicy") {
    return check(decodeEgressGatewayPolicy(o.doc));
  }
  if (o.kind == "OperatorConfig") {
    return check(decodeOperatorConfig(o.doc));
  }
  return {{"", "unknown kind " + o.kind}};
}

// The path after `# expect:` in the file's leading comment (the field the API server names), or
// "".
std::string expectedPath(const std::string& dir, const std::string& file) {
  std::ifstream in(std::string(EGRESS_SOURCE_DIR) + "/" + dir + "/" + file);
  const std::string marker = "# expect:";
  for (std::string line; std::getline(in, line) && line.starts_with("#");) {
    if (line.starts_with(marker)) {
      const auto b = line.find_first_not_of(' ', marker.size());
      return b == std::string::npos ? "" : line.substr(b);
    }
  }
  return "";
}

// `path` is `want` or inside it: the 1.20 API server names "spec.cidrs" where we say
// "spec.cidrs[1]".
bool within(const std::string& path, const std::string& want) {
  return path == want ||
         (path.starts_with(want) && (path[want.size()] == '[' || path[want.size()] == '.'));
}

TEST(ExamplesTest, EveryExampleDecodesAndIsValid) {
  const auto objects = ourObjects("deploy/examples");
  EXPECT_GE(objects.size(), 8u);
  std::set<std::string> kinds;
  for (const auto& o : objects) {
    EXPECT_EQ(validation::join(problemsOf(*o)), "") << o->file << " (" << o->kind << ")";
    kinds.insert(o->kind);
  }
  EXPECT_EQ(kinds.size(), 3u) << "an example of every kind";
}

TEST(ExamplesTest, EveryObjectTheApiServerRejectsIsRefusedHereTooAtTheSamePath) {
  const std::string dir = "test/testdata/invalid";
  const auto objects = ourObjects(dir);
  EXPECT_GE(objects.size(), 10u);
  for (const auto& o : objects) {
    const std::string want = expectedPath(dir, o->file);
    ASSERT_NE(want, "") << o->file << " has no `# expect:` line";
    const auto problems = problemsOf(*o);
    EXPECT_NE(problems, validation::FieldErrors{}) << o->file << " is accepted by validate()";
    EXPECT_TRUE(std::any_of(problems.begin(), problems.end(),
                            [&](const auto& p) { return within(p.path, want); }))
        << o->file << " expects a problem at " << want << ", got: " << validation::join(problems);
    std::printf("%-44s -> %s\n", o->file.c_str(), validation::join(problems).c_str());
  }
}

}  // namespace
}  // namespace egress::networking::v1alpha1
