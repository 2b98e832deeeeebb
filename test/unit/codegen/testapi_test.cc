// The code generator end to end, on testapi/types.h (every supported type and marker): the
// build generated its codecs, validation, clientset, listers, informers and CRDs with the tool
// and compiled them under -Werror; here each sample object survives decode -> validate ->
// encode -> decode unchanged, and every constraint of the generated CRDs has a matching check in
// the generated validation (a value that breaks it is refused at the same path), so the CRD
// emitter and the validation emitter cannot drift apart.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <yaml-cpp/yaml.h>

#include "hack/codegen/parser.h"
#include "test/unit/codegen/testapi/client/zz_generated.clientset.h"
#include "test/unit/codegen/testapi/client/zz_generated.informers.h"
#include "test/unit/codegen/testapi/client/zz_generated.listers.h"
#include "test/unit/codegen/testapi/zz_generated.codec.h"
#include "test/unit/codegen/testapi/zz_generated.validation.h"

namespace egress::codegentest::v1 {
namespace {

using codegen::TypeRef;
using validation::FieldErrors;

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---- The kinds, each with its sample (samples/*.json) and generated CRD.

struct Kind {
  std::string name;
  std::string plural;
  // Decode, then validate<Kind>Fields; a decode error comes back as the only FieldError, its
  // message prefixed "decode: ".
  std::function<FieldErrors(const rapidjson::Value&)> check;
  // Decode, encode, decode again: "" if both decodes agree and re-encoding is stable, else why.
  std::function<std::string(const rapidjson::Value&)> roundTrip;
};

template <class T>
FieldErrors checkAs(meta::Decoded<T> (*decode)(const rapidjson::Value&),
                    void (*validate)(const T&, const std::string&, FieldErrors&),
                    const rapidjson::Value& v) {
  auto d = decode(v);
  if (!d) {
    return {{d.error().path, "decode: " + d.error().message}};
  }
  FieldErrors errs;
  validate(*d, "", errs);
  return errs;
}

template <class T>
std::string roundTripAs(meta::Decoded<T> (*decode)(const rapidjson::Value&),
                        void (*encode)(meta::JsonWriter&, const T&), const rapidjson::Value& v) {
  auto first = decode(v);
  if (!first) {
    return "decode: " + first.error().toString();
  }
  const std::string json = meta::encodeToString(*first, encode);
  auto second = meta::parseAndDecode(json, decode);
  if (!second) {
    return "decode of " + json + ": " + second.error().toString();
  }
  if (!(*second == *first)) {
    return "the decoded encoding differs: " + json;
  }
  if (meta::encodeToString(*second, encode) != json) {
    return "encoding is not stable: " + json;
  }
  return "";
}

#define EGRESS_TESTAPI_KIND(K, plural)                                                              \
  Kind {                                                                                            \
#K, plural, [](const rapidjson::Value& v) { return checkAs(decode##K, validate##K##Fields, v); }, \
        [](const rapidjson::Value& v) { return roundTripAs(decode##K, encode##K, v); } \
  }

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> kKinds = {
      EGRESS_TESTAPI_KIND(Gateway, "gateways"),
      EGRESS_TESTAPI_KIND(GatewayClass, "gatewayclasses"),
      EGRESS_TESTAPI_KIND(AccessPolicy, "accesspolicies"),
      EGRESS_TESTAPI_KIND(Mouse, "mice"),
  };
  return kKinds;
}

rapidjson::Document sampleOf(const Kind& k) {
  std::string file = k.name;
  std::transform(file.begin(), file.end(), file.begin(), ::tolower);
  rapidjson::Document doc;
  doc.Parse(readFile(std::string(EGRESS_SOURCE_DIR) + "/test/unit/codegen/testapi/samples/" + file +
                     ".json"));
  EXPECT_FALSE(doc.HasParseError()) << file;
  return doc;
}

// The generated CRD's schema; `cel`: the variant with the CEL rules.
YAML::Node schemaOf(const Kind& k, bool cel = false) {
  const std::string path = std::string(EGRESS_TESTAPI_GEN_DIR) + "/manifests/" +
                           (cel ? "cel/" : "") + "codegentest.egressgateway.dev_" + k.plural +
                           ".yaml";
  return YAML::LoadFile(path)["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

const codegen::Package& model() {
  static const codegen::Package kPkg = [] {
    const std::string rel = "test/unit/codegen/testapi/types.h";
    auto r = codegen::parsePackage(readFile(std::string(EGRESS_SOURCE_DIR) + "/" + rel), rel, rel);
    if (auto* err = std::get_if<codegen::ParseError>(&r)) {
      ADD_FAILURE() << err->message;
      return codegen::Package{};
    }
    return std::get<codegen::Package>(r);
  }();
  return kPkg;
}

// ---- Paths into a JSON object, as the errors print them.

struct Step {
  enum class Type { Property, Index, MapKey };
  Type type;
  std::string key;  // Property, MapKey
  size_t index = 0;
};
using Path = std::vector<Step>;

// "spec.lists.names[0]", "spec.maps.labels[tier]" (map keys unquoted, as validate() prints them;
// decode errors quote them, which normalize() undoes).
std::string text(const Path& path) {
  std::string out;
  for (const auto& s : path) {
    if (s.type == Step::Type::Property) {
      out += (out.empty() ? "" : ".") + s.key;
    } else if (s.type == Step::Type::Index) {
      out += "[" + std::to_string(s.index) + "]";
    } else {
      out += "[" + s.key + "]";
    }
  }
  return out;
}

std::string normalize(std::string path) {
  std::erase(path, '"');
  return path;
}

Path child(Path p, Step s) {
  p.push_back(std::move(s));
  return p;
}

rapidjson::Value* find(rapidjson::Value& root, const Path& path) {
  rapidjson::Value* v = &root;
  for (const auto& s : path) {
    if (s.type == Step::Type::Index) {
      if (!v->IsArray() || v->Size() <= s.index) {
        return nullptr;
      }
      v = &(*v)[static_cast<rapidjson::SizeType>(s.index)];
    } else {
      if (!v->IsObject() || !v->HasMember(s.key.c_str())) {
        return nullptr;
      }
      v = &(*v)[s.key.c_str()];
    }
  }
  return v;
}

// ---- The parity walk: the CRD schema and the model side by side over the sample.

class Parity {
 public:
  Parity(const Kind& kind, const rapidjson::Document& sample) : kind_(kind), sample_(sample) {}

  void walkStruct(const codegen::Struct& s, const YAML::Node& schema, const Path& path) {
    visit(schema, path, /*foreign=*/false);
    for (const auto& kv : schema["properties"]) {
      const std::string name = kv.first.as<std::string>();
      // apiVersion and kind are the API server's (the decoders ignore them).
      if (s.field(name) == nullptr && !(path.empty() && (name == "apiVersion" || name == "kind"))) {
        failures_.push_back(text(child(path, {Step::Type::Property, name})) +
                            " is in the CRD but not in " + s.name);
      }
    }
    for (const auto& f : s.fields) {
      const Path p = child(path, {Step::Type::Property, f.jsonName});
      if (!schema["properties"][f.jsonName]) {
        failures_.push_back(text(p) + " is not in the CRD");
        continue;
      }
      walkType(f.type, schema["properties"][f.jsonName], p);
    }
    if (schema["required"]) {
      for (const auto& r : schema["required"]) {
        const std::string name = r.as<std::string>();
        expectRefused(child(path, {Step::Type::Property, name}), "required",
                      [&](rapidjson::Document& d) { find(d, path)->RemoveMember(name.c_str()); },
                      {"Required value"});
      }
    }
  }

  std::vector<std::string> failures() const { return failures_; }
  int checks() const { return checks_; }

 private:
  void walkType(const TypeRef& t, const YAML::Node& schema, const Path& path) {
    rapidjson::Document copy;
    copy.CopyFrom(sample_, copy.GetAllocator());
    rapidjson::Value* v = find(copy, path);
    if (v == nullptr) {
      failures_.push_back("the sample has no " + text(path) + ": add it so its checks are tested");
      return;
    }
    switch (t.base().kind) {
      case TypeRef::Kind::Struct:
        walkStruct(*model().find(t.base().name), schema, path);
        return;
      case TypeRef::Kind::Vector:
        visit(schema, path, false);
        if (v->Empty()) {
          failures_.push_back("the sample's " + text(path) + " is empty");
          return;
        }
        walkType(*t.base().elem, schema["items"], child(path, {Step::Type::Index, "", 0}));
        return;
      case TypeRef::Kind::StringMap:
      case TypeRef::Kind::QuantityMap:
        visit(schema, path, false);
        if (v->MemberCount() == 0) {
          failures_.push_back("the sample's " + text(path) + " is empty");
          return;
        }
        visit(schema["additionalProperties"],
              child(path, {Step::Type::MapKey, v->MemberBegin()->name.GetString()}), false);
        return;
      case TypeRef::Kind::ObjectMeta:
      case TypeRef::Kind::LabelSelector:
      case TypeRef::Kind::Condition:
        // Fixed schemas of pkg/apis/meta types, checked by their own decoders and tests; only
        // the field's type is this package's.
        visit(schema, path, true);
        return;
      default:
        visit(schema, path, false);
        return;
    }
  }

  // Every keyword of one schema node: a violation of each constraint must be refused.
  void visit(const YAML::Node& schema, const Path& path, bool foreign) {
    for (const auto& kv : schema) {
      const std::string key = kv.first.as<std::string>();
      const YAML::Node& value = kv.second;
      if (key == "type") {
        if (!path.empty()) {
          typeCheck(value.as<std::string>(), path);
        }
      } else if (!foreign && !isSkipped(key)) {
        constraint(schema, key, value, path);
      }
    }
  }

  // Keywords that are not constraints of their own: walked by the caller (properties, items,
  // additionalProperties, required), tested with x-kubernetes-list-type (its map keys), filled in
  // by the API server (default), or CEL rules, which each package's validation.cc implements by
  // hand (the test package has none there; that they reach the CRD intact is tested below).
  static bool isSkipped(const std::string& key) {
    static const std::set<std::string> kSkipped = {"description", "properties",
                                                   "items",       "additionalProperties",
                                                   "required",    "x-kubernetes-list-map-keys",
                                                   "default",     "x-kubernetes-validations"};
    return kSkipped.count(key) != 0;
  }

  void typeCheck(const std::string& type, const Path& path) {
    static const std::map<std::string, std::string> kMessages = {{"string", "expected string"},
                                                                 {"integer", "expected integer"},
                                                                 {"boolean", "expected boolean"},
                                                                 {"array", "expected array"},
                                                                 {"object", "expected object"}};
    expectRefused(path, "type " + type,
                  [&](rapidjson::Document& d) {
                    if (type == "string") {
                      find(d, path)->SetInt(12345);
                    } else {
                      find(d, path)->SetString("not-a-" + type, d.GetAllocator());
                    }
                  },
                  {kMessages.at(type)});
  }

  // One keyword of `schema`.
  void constraint(const YAML::Node& schema, const std::string& key, const YAML::Node& value,
                  const Path& path) {
    // A quantity (int-or-string): its pattern is checked by meta::parseQuantity, and its type
    // by the decoder.
    const bool quantity = schema["x-kubernetes-int-or-string"].IsDefined();
    auto setString = [&](const std::string& s) {
      return [s, path](rapidjson::Document& d) { find(d, path)->SetString(s, d.GetAllocator()); };
    };
    auto setInt = [&](int64_t n) {
      return [n, path](rapidjson::Document& d) { find(d, path)->SetInt64(n); };
    };
    if (key == "format") {
      const std::string f = value.as<std::string>();
      if (f == "int32") {
        expectRefused(path, key, setInt(int64_t{1} << 31), {"out of range for int32"});
      } else if (f == "int64") {
        expectRefused(path, key,
                      [&](rapidjson::Document& d) { find(d, path)->SetUint64(uint64_t{1} << 63); },
                      {"expected integer"});
      } else if (f == "cidr") {
        expectRefused(path, key, setString("192.0.2.0/33"), {"is not a CIDR"});
      } else if (f == "ipv4") {
        expectRefused(path, key, setString("2001:db8::1"), {"is not an IPv4 address"});
      } else if (f == "ipv6") {
        expectRefused(path, key, setString("192.0.2.1"), {"is not an IPv6 address"});
      } else {
        failures_.push_back(text(path) + ": no parity check for format " + f);
      }
    } else if (key == "anyOf" && quantity) {
      expectRefused(path, key + " (integer or string)",
                    [&](rapidjson::Document& d) { find(d, path)->SetBool(true); },
                    {"expected integer or string"});
    } else if (key == "x-kubernetes-int-or-string") {
      // A number that is not an integer is neither.
      expectRefused(path, key, [&](rapidjson::Document& d) { find(d, path)->SetDouble(1.5); },
                    {"expected integer or string"});
      expectRefused(path, key, [&](rapidjson::Document& d) { find(d, path)->SetObject(); },
                    {"expected integer or string"});
    } else if (key == "anyOf") {
      expectRefused(path, key, setString("not-an-address"), {"is not an IP address"});
    } else if (key == "enum") {
      expectRefused(path, key, setString("NotInTheEnum"), {"Unsupported value"});
    } else if (key == "minLength") {
      expectRefused(path, key, setString(std::string(value.as<size_t>() - 1, 'a')),
                    {"should be at least"});
    } else if (key == "maxLength") {
      expectRefused(path, key, setString(std::string(value.as<size_t>() + 1, 'a')),
                    {"may not be longer than"});
    } else if (key == "pattern") {
      const std::regex re(value.as<std::string>(), std::regex::ECMAScript);
      std::string bad;
      for (const char* candidate : {"!", "A", "0", "-", "a b", "a!"}) {
        if (bad.empty() && !std::regex_search(candidate, re)) {
          bad = candidate;
        }
      }
      ASSERT_NE(bad, "") << "no string breaks " << value.as<std::string>();
      if (quantity) {
        const std::string message = "quantities must match the regular expression";
        expectRefused(path, key, setString(bad), {message});
        ASSERT_FALSE(std::regex_search("1.5.5", re));
        expectRefused(path, key, setString("1.5.5"), {message});
      } else {
        expectRefused(path, key, setString(bad), {"should match"});
      }
    } else if (key == "minimum") {
      // Not 0, which a plain integer uses for "absent".
      const int64_t below = value.as<int64_t>() - 1;
      expectRefused(path, key, setInt(below == 0 ? -1 : below),
                    {"should be greater than or equal to"});
    } else if (key == "maximum") {
      const int64_t above = value.as<int64_t>() + 1;
      expectRefused(path, key, setInt(above == 0 ? 1 : above), {"should be less than or equal to"});
    } else if (key == "minItems") {
      const auto n = value.as<rapidjson::SizeType>();
      expectRefused(path, key,
                    [&](rapidjson::Document& d) {
                      auto* list = find(d, path);
                      while (list->Size() >= n) {
                        list->PopBack();
                      }
                    },
                    // An empty list is absent: a required one is then missing.
                    {"should have at least", "Required value"});
    } else if (key == "maxItems") {
      const auto n = value.as<rapidjson::SizeType>();
      expectRefused(path, key,
                    [&](rapidjson::Document& d) {
                      auto* list = find(d, path);
                      while (list->Size() <= n) {
                        rapidjson::Value copy((*list)[0], d.GetAllocator());
                        list->PushBack(copy, d.GetAllocator());
                      }
                    },
                    {"must have at most"});
    } else if (key == "x-kubernetes-list-type") {
      const std::string type = value.as<std::string>();
      if (type == "atomic") {
        return;
      }
      rapidjson::SizeType size = 0;
      expectRefused(
          path, key + " " + type,
          [&](rapidjson::Document& d) {
            auto* list = find(d, path);
            rapidjson::Value copy((*list)[0], d.GetAllocator());
            list->PushBack(copy, d.GetAllocator());
            size = list->Size();
          },
          {"Duplicate value"},
          [&] {
            return child(path, {Step::Type::Index, "", size - 1});
          });
    } else {
      failures_.push_back(text(path) + ": no parity check for CRD keyword " + key);
    }
  }

  // The sample with `mutate` applied is refused at `path` (or at the path `where` gives after
  // mutating) with a message containing one of `messages`.
  void expectRefused(const Path& path, const std::string& what,
                     const std::function<void(rapidjson::Document&)>& mutate,
                     const std::vector<std::string>& messages,
                     const std::function<Path()>& where = nullptr) {
    ++checks_;
    rapidjson::Document d;
    d.CopyFrom(sample_, d.GetAllocator());
    mutate(d);
    const std::string want = text(where ? where() : path);
    const FieldErrors errs = kind_.check(d);
    const bool refused = std::any_of(errs.begin(), errs.end(), [&](const auto& e) {
      return normalize(e.path) == want &&
             std::any_of(messages.begin(), messages.end(), [&](const std::string& m) {
               return e.message.find(m) != std::string::npos;
             });
    });
    if (!refused) {
      failures_.push_back(kind_.name + " " + want + " (" + what + "): expected \"" + messages[0] +
                          "\", got: " + validation::join(errs));
    }
  }

  const Kind& kind_;
  const rapidjson::Document& sample_;
  std::vector<std::string> failures_;
  int checks_ = 0;
};

TEST(TestApiTest, EverySampleIsValidAndSurvivesARoundTrip) {
  for (const auto& k : kinds()) {
    const auto sample = sampleOf(k);
    EXPECT_EQ(validation::join(k.check(sample)), "") << k.name;
    EXPECT_EQ(k.roundTrip(sample), "") << k.name;
  }
}

// For each constraint in the CRDs, a value that breaks it (and only it, as far
// as the sample allows) is refused by decode + validate at the same path.
TEST(TestApiTest, EveryCrdConstraintIsCheckedByValidate) {
  int checks = 0;
  for (const auto& k : kinds()) {
    const auto sample = sampleOf(k);
    for (bool cel : {false, true}) {
      Parity parity(k, sample);
      const codegen::Struct* root = model().find(k.name);
      ASSERT_NE(root, nullptr) << k.name;
      parity.walkStruct(*root, schemaOf(k, cel), {});
      EXPECT_THAT(parity.failures(), ::testing::IsEmpty()) << k.name << (cel ? " (cel)" : "");
      checks += parity.checks();
    }
  }
  // Not vacuous: every marker of the test package yields checks.
  EXPECT_GE(checks, 100);
  std::printf("%d constraints checked\n", checks);
}

// The quantity pattern in the CRDs (the API server's check) and meta::parseQuantity (ours) over
// every string of up to 4 characters from the quantity alphabet, and some longer ones: the
// parser never accepts what the pattern refuses, and refuses what the pattern accepts only for
// the documented reasons (a fractional exponent, an exponent outside int32 as apimachinery, a
// magnitude above 2^63-1).
TEST(TestApiTest, TheQuantityParserIsNeverLooserThanTheCrdPattern) {
  const YAML::Node schema = schemaOf(kinds()[0]);
  const YAML::Node limits =
      schema["properties"]["spec"]["properties"]["maps"]["properties"]["limits"];
  const std::regex pattern(limits["additionalProperties"]["pattern"].as<std::string>(),
                           std::regex::ECMAScript);
  const std::string alphabet = "019.+-eEKMim ";
  std::vector<std::string> inputs = {
      "1e1.5",  "1E.5",  "9223372036854775808",  "8Ei", "1e19",  "128Mi", "0.5",          "500.1m",
      "+.5e-3", "1.e+2", "18446744073709551616", "1Pi", "1.5.5", "0x1",   "1e9999999999", "1ki"};
  std::vector<std::string> level = {""};
  for (int len = 1; len <= 4; ++len) {
    std::vector<std::string> next;
    for (const auto& prefix : level) {
      for (char c : alphabet) {
        next.push_back(prefix + c);
      }
    }
    inputs.insert(inputs.end(), next.begin(), next.end());
    level = std::move(next);
  }
  int accepted = 0;
  int stricter = 0;
  for (const auto& text : inputs) {
    const bool matches = std::regex_search(text, pattern);
    auto parsed = meta::parseQuantity(text);
    if (parsed) {
      ++accepted;
      EXPECT_TRUE(matches) << "'" << text << "' parses but the CRD refuses it";
    } else if (matches) {
      ++stricter;
      const size_t e = text.find_first_of("eE");
      const bool fractionalExponent =
          e != std::string::npos && text.find('.', e) != std::string::npos;
      const bool hugeExponent = e != std::string::npos && text.size() - e > 10 &&
                                parsed.error().find("suffix") != std::string::npos;
      EXPECT_TRUE(fractionalExponent || hugeExponent ||
                  parsed.error().find("too large") != std::string::npos)
          << "'" << text << "' matches the CRD's pattern but: " << parsed.error();
    }
  }
  EXPECT_GT(accepted, 500);
  std::printf("%zu texts: %d quantities, %d that only the CRD's pattern accepts\n", inputs.size(),
              accepted, stricter);
}

TEST(TestApiTest, ValidationMessagesNameTheFieldAndTheRule) {
  auto gw = *decodeGateway(sampleOf(kinds()[0]));
  gw.spec.scalars.name = "A";
  gw.spec.scalars.small = 9;
  gw.spec.lists.percents = {5, 5};
  gw.spec.lists.ports.push_back({"TCP", 80, ""});
  gw.spec.maps.switches = meta::StringMap{{"x", "maybe"}};
  gw.spec.maps.addresses["bad"] = "::g";
  FieldErrors errs;
  validateGatewayFields(gw, "", errs);
  EXPECT_THAT(
      errs,
      ::testing::ElementsAre(
          validation::FieldError{"spec.scalars.name", "should be at least 2 chars long"},
          validation::FieldError{"spec.scalars.name", "\"A\" should match '^[a-z]+$'"},
          validation::FieldError{"spec.scalars.small", "9 should be less than or equal to 5"},
          validation::FieldError{"spec.lists.percents[1]", "Duplicate value: 5"},
          validation::FieldError{"spec.lists.ports[2]",
                                 "Duplicate value: {\"protocol\":\"TCP\",\"port\":80}"},
          validation::FieldError{"spec.maps.switches[x]",
                                 "Unsupported value: \"maybe\": supported values: \"on\", \"off\""},
          validation::FieldError{"spec.maps.addresses[bad]", "\"::g\" is not an IP address"}));
}

// A plain integer's 0 is "absent", as a plain string's "" is: encoding omits it, so its bounds
// apply only when it is set (a std::optional or +required field keeps 0 apart).
TEST(TestApiTest, AnUnsetPlainIntegerIsNotCheckedAgainstItsBounds) {
  auto mouse = meta::parseAndDecode(R"({"metadata":{"name":"m"}})", decodeMouse);
  ASSERT_TRUE(mouse);
  FieldErrors errs;
  validateMouseFields(*mouse, "", errs);
  EXPECT_THAT(errs, ::testing::IsEmpty());
  EXPECT_EQ(
      meta::encodeToString(*mouse, encodeMouse),
      R"({"apiVersion":"codegentest.egressgateway.dev/v1","kind":"Mouse","metadata":{"name":"m"}})");
  mouse->whiskers = -1;
  validateMouseFields(*mouse, "", errs);
  EXPECT_THAT(errs, ::testing::ElementsAre(validation::FieldError{
                        "whiskers", "-1 should be greater than or equal to 1"}));
}

TEST(TestApiTest, NewListAndMapTypesDecodeAndEncode) {
  const std::string json = R"({"protocol":"TCP","port":80})";
  auto port = meta::parseAndDecode(json, decodePort);
  ASSERT_TRUE(port);
  EXPECT_EQ(meta::encodeToString(*port, encodePort), json);

  auto lists = meta::parseAndDecode(R"({"names":["ab"],"percents":[1,2],"offsets":[-1,9000000000],
                                       "switches":[true,false]})",
                                    decodeLists);
  ASSERT_TRUE(lists) << lists.error().toString();
  EXPECT_THAT(lists->percents, ::testing::ElementsAre(1, 2));
  EXPECT_THAT(lists->offsets, ::testing::ElementsAre(-1, 9000000000));
  EXPECT_THAT(lists->switches, ::testing::ElementsAre(true, false));
  EXPECT_EQ(
      meta::encodeToString(*lists, encodeLists),
      R"({"names":["ab"],"percents":[1,2],"offsets":[-1,9000000000],"switches":[true,false]})");
  EXPECT_EQ(meta::parseAndDecode(R"({"percents":[1,"2"]})", decodeLists).error().toString(),
            "percents[1]: expected integer");
  EXPECT_EQ(meta::parseAndDecode(R"({"percents":[3000000000]})", decodeLists).error().toString(),
            "percents[0]: integer out of range for int32");
  EXPECT_EQ(meta::parseAndDecode(R"({"switches":[1]})", decodeLists).error().toString(),
            "switches[0]: expected boolean");

  // An optional map keeps "absent" apart from "empty".
  auto absent = meta::parseAndDecode(R"({})", decodeMaps);
  ASSERT_TRUE(absent);
  EXPECT_FALSE(absent->switches.has_value());
  EXPECT_EQ(meta::encodeToString(*absent, encodeMaps), "{}");
  auto empty = meta::parseAndDecode(R"({"switches":{}})", decodeMaps);
  ASSERT_TRUE(empty);
  ASSERT_TRUE(empty->switches.has_value());
  EXPECT_TRUE(empty->switches->empty());
  EXPECT_EQ(meta::encodeToString(*empty, encodeMaps), R"({"switches":{}})");
  EXPECT_EQ(meta::parseAndDecode(R"({"switches":{"a":1}})", decodeMaps).error().toString(),
            "switches[\"a\"]: expected string");
}

TEST(TestApiTest, EmitZeroFieldsAreWrittenWhenZeroAndStayOptionalOnDecode) {
  GatewayStatus status;
  const std::string json = meta::encodeToString(status, encodeGatewayStatus);
  EXPECT_NE(json.find("\"readyReplicas\":0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"degraded\":false"), std::string::npos) << json;
  EXPECT_EQ(json.find("observedGeneration"), std::string::npos) << "omitempty as before: " << json;
  rapidjson::Document empty;
  empty.Parse("{}");
  auto decoded = decodeGatewayStatus(empty);
  ASSERT_TRUE(decoded) << decoded.error().toString();
  EXPECT_EQ(decoded->readyReplicas, 0);
}

TEST(TestApiTest, CrdsCarryDefaultsRulesAndNames) {
  const YAML::Node gw = schemaOf(kinds()[0], true);
  const auto scalars = gw["properties"]["spec"]["properties"]["scalars"];
  EXPECT_EQ(scalars["properties"]["color"]["default"].as<std::string>(), "Red");
  EXPECT_EQ(scalars["properties"]["flag"]["default"].as<bool>(), true);
  EXPECT_EQ(scalars["properties"]["count"]["default"].as<int>(), 3);
  EXPECT_TRUE(
      gw["properties"]["spec"]["properties"]["maps"]["properties"]["addresses"]["default"].IsMap());
  EXPECT_EQ(scalars["x-kubernetes-validations"][0]["rule"].as<std::string>(),
            "!has(self.label) || self.label != 'a,b==c'");
  EXPECT_EQ(scalars["x-kubernetes-validations"][0]["message"].as<std::string>(),
            "label, never \"a,b==c\"");
  const auto ports = gw["properties"]["spec"]["properties"]["lists"]["properties"]["ports"];
  EXPECT_EQ(ports["x-kubernetes-list-map-keys"][0].as<std::string>(), "protocol");
  EXPECT_EQ(ports["x-kubernetes-list-map-keys"][1].as<std::string>(), "port");
  EXPECT_FALSE(schemaOf(
      kinds()[0], false)["properties"]["spec"]["properties"]["scalars"]["x-kubernetes-validations"])
      << "the plain variant has no CEL rules";

  for (const auto& k : kinds()) {
    const YAML::Node crd =
        YAML::LoadFile(std::string(EGRESS_TESTAPI_GEN_DIR) +
                       "/manifests/codegentest.egressgateway.dev_" + k.plural + ".yaml");
    EXPECT_EQ(crd["metadata"]["name"].as<std::string>(),
              k.plural + ".codegentest.egressgateway.dev");
    EXPECT_EQ(crd["spec"]["names"]["plural"].as<std::string>(), k.plural);
  }
  const YAML::Node mouse = YAML::LoadFile(std::string(EGRESS_TESTAPI_GEN_DIR) +
                                          "/manifests/codegentest.egressgateway.dev_mice.yaml");
  EXPECT_EQ(mouse["spec"]["names"]["singular"].as<std::string>(), "mouse");
}

// The clientset, listers and informers compiled; their names follow the resources.
template <class C>
concept NamespacedAccessors = requires(const C& c) {
  c.gateways(std::string());
  c.accessPolicies(std::string());
  c.mice(std::string());
  c.gatewayClasses();
};
static_assert(NamespacedAccessors<client::CodegentestV1Client>);
static_assert(requires(const client::CodegentestV1Informers& i) {
  i.gateways("ns");
  i.gatewayClasses();
  i.mouseLister("ns");
  i.accessPolicyLister();
});

TEST(TestApiTest, ClientResourcesFollowTheMarkers) {
  const auto gw = client::ApiType<Gateway>::resource();
  EXPECT_EQ(gw.group, "codegentest.egressgateway.dev");
  EXPECT_EQ(gw.version, "v1");
  EXPECT_EQ(gw.resource, "gateways");
  EXPECT_TRUE(gw.namespaced);
  EXPECT_EQ(client::ApiType<GatewayClass>::resource().resource, "gatewayclasses");
  EXPECT_FALSE(client::ApiType<GatewayClass>::resource().namespaced);
  EXPECT_EQ(client::ApiType<AccessPolicy>::resource().resource, "accesspolicies");
  EXPECT_EQ(client::ApiType<Mouse>::resource().resource, "mice");
}

}  // namespace
}  // namespace egress::codegentest::v1
