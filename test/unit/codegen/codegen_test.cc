// The code generator (hack/codegen): the strict types.h grammar and its error messages, marker
// arguments, naming, and the emitters' output (valid YAML with the schema the markers ask for,
// deterministic).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "hack/codegen/emit.h"
#include "hack/codegen/parser.h"
#include <sys/wait.h>

namespace egress::codegen {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char* const kHeader = R"(// +groupName=example.dev
// +version=v1
namespace egress::example::v1 {
)";

std::variant<Package, ParseError> parse(const std::string& body) {
  return parsePackage(kHeader + body + "}\n", "types.h", "pkg/apis/example/v1/types.h");
}

std::string errorOf(const std::string& body) {
  auto r = parse(body);
  if (auto* e = std::get_if<ParseError>(&r)) {
    return e->message;
  }
  return "";
}

TEST(CodegenParserTest, ParsesTheRepositoryTypes) {
  std::ifstream in(std::string(EGRESS_SOURCE_DIR) + "/pkg/apis/networking/v1alpha1/types.h");
  std::stringstream text;
  text << in.rdbuf();
  auto r = parsePackage(text.str(), "types.h", "pkg/apis/networking/v1alpha1/types.h");
  ASSERT_TRUE(std::holds_alternative<Package>(r)) << std::get<ParseError>(r).message;
  const auto& pkg = std::get<Package>(r);
  EXPECT_EQ(pkg.group, "networking.egressgateway.dev");
  EXPECT_EQ(pkg.version, "v1alpha1");
  EXPECT_EQ(pkg.cppNamespace, "egress::networking::v1alpha1");
  std::vector<std::string> roots;
  for (const auto* s : pkg.roots()) {
    ASSERT_TRUE(s->resource.has_value()) << s->name;
    const Resource& res = *s->resource;
    roots.push_back(res.plural + (res.namespaced ? "/ns/" : "/cluster/") + res.shortNames.at(0));
  }
  EXPECT_THAT(roots, ElementsAre("ipampools/cluster/ipp", "egressgatewaypolicies/ns/egp",
                                 "egresspolicyslices/cluster/egps", "operatorconfigs/cluster/eoc"));
  const Struct* toleration = pkg.find("Toleration");
  ASSERT_NE(toleration, nullptr);
  EXPECT_EQ(toleration->fields[1].cppName, "operator_");
  EXPECT_EQ(toleration->fields[1].jsonName, "operator");
}

TEST(CodegenParserTest, FieldsTypesDocsAndMarkers) {
  auto r = parse(R"(
struct Inner {
  int64_t n = 0;
};

// Outer doc.
struct Outer {
  // The name.
  // Second line.
  // +required
  // +kubebuilder:validation:MaxLength=5
  std::string name;
  std::optional<int32_t> count;
  std::vector<Inner> inners;
  std::optional<Inner> inner;
  meta::StringMap labels;

  bool operator==(const Outer&) const = default;
};
)");
  ASSERT_TRUE(std::holds_alternative<Package>(r)) << std::get<ParseError>(r).message;
  const auto& outer = *std::get<Package>(r).find("Outer");
  EXPECT_THAT(outer.doc, ElementsAre("Outer doc."));
  ASSERT_EQ(outer.fields.size(), 5u);
  EXPECT_THAT(outer.fields[0].doc, ElementsAre("The name.", "Second line."));
  EXPECT_TRUE(outer.fields[0].required());
  ASSERT_NE(outer.fields[0].marker("MaxLength"), nullptr);
  EXPECT_EQ(outer.fields[0].marker("MaxLength")->value, "5");
  EXPECT_EQ(outer.fields[0].constraints.maxLength, 5);
  EXPECT_EQ(outer.fields[1].type.cpp(), "std::optional<int32_t>");
  EXPECT_EQ(outer.fields[2].type.cpp(), "std::vector<Inner>");
  EXPECT_EQ(outer.fields[3].type.cpp(), "std::optional<Inner>");
  EXPECT_EQ(outer.fields[4].type.cpp(), "meta::StringMap");
  EXPECT_FALSE(outer.fields[1].required());
}

TEST(CodegenParserTest, ErrorsNameTheLineAndTheProblem) {
  EXPECT_EQ(errorOf("struct A {\n  std::list<int> xs;\n};\n"),
            "types.h:5: unknown type 'std::list<int>' (see the grammar in the types.h banner)");
  EXPECT_EQ(errorOf("struct A {\n  // +kubebuilder:validation:Minimun=1\n  int32_t x;\n};\n"),
            "types.h:5: unknown marker +Minimun");
  EXPECT_EQ(errorOf("struct A {\n  Missing m;\n};\n"),
            "types.h:5: unknown type 'Missing' (declare the struct above its use)");
  EXPECT_EQ(errorOf("struct A {\n  int32_t x;\n"),
            "types.h:6: struct A must end with `};`, got: }");
  EXPECT_EQ(errorOf("struct A {\n  // +required\n  std::optional<int32_t> x;\n};\n"),
            "types.h:6: a std::optional field cannot be +required");
  EXPECT_EQ(errorOf("struct A {\n  int32_t x;\n  int64_t x;\n};\n"),
            "types.h:6: field x declared twice");
  EXPECT_EQ(errorOf("struct A {\n  int32_t x\n};\n"),
            "types.h:5: expected `Type name;`, got: int32_t x");
  EXPECT_EQ(errorOf("struct A {\n  void f() {}\n};\n"),
            "types.h:5: expected `Type name;`, got: void f() {}");
  // A reflowed comment would hide a marker mid-line: refused.
  EXPECT_EQ(
      errorOf("struct A {\n  // Doc text +kubebuilder:validation:Minimum=1\n  int32_t x;\n};\n"),
      "types.h:5: marker +kubebuilder:... must start its own `// +` comment line");
  EXPECT_THAT(errorOf("int x;\n"), HasSubstr("types.h:4: expected a comment, `namespace`"));
  auto noGroup = parsePackage("namespace a {\n}\n", "t.h", "t.h");
  EXPECT_EQ(std::get<ParseError>(noGroup).message, "t.h: no +groupName or +version marker");
}

TEST(CodegenModelTest, MarkerArgumentsMayContainCommas) {
  EXPECT_THAT(
      std::get<MarkerArgs>(splitMarkerArgs("rule=self.all(a, a > 0) || x,message=a, b or c")),
      ElementsAre(std::pair<std::string, std::string>{"rule", "self.all(a, a > 0) || x"},
                  std::pair<std::string, std::string>{"message", "a, b or c"}));
  EXPECT_THAT(std::get<MarkerArgs>(splitMarkerArgs("scope=Cluster,shortName=ipp")),
              ElementsAre(std::pair<std::string, std::string>{"scope", "Cluster"},
                          std::pair<std::string, std::string>{"shortName", "ipp"}));
}

TEST(CodegenModelTest, LowerCamelKeepsAcronymsTogether) {
  EXPECT_EQ(lowerCamel("IPAMPool"), "ipamPool");
  EXPECT_EQ(lowerCamel("EgressGatewayPolicy"), "egressGatewayPolicy");
  EXPECT_EQ(lowerCamel("NetworkingV1alpha1"), "networkingV1alpha1");
  EXPECT_EQ(lowerCamel("IP"), "ip");
}

TEST(CodegenModelTest, ResourceMarkersAreChecked) {
  EXPECT_EQ(errorOf(R"(
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:resource:scope=Namespaced
struct Thing {
  meta::ObjectMeta metadata;
};
)"),
            "types.h:7: scope=Namespaced disagrees with +genclient:nonNamespaced");
}

std::string widgetPackage() {
  return R"(
// WidgetSpec says what a widget is.
// +kubebuilder:validation:XValidation:rule=self.size > 0 || !has(self.ip),message=an ip needs a size
struct WidgetSpec {
  // Size, with "quotes" and a colon: here.
  // +kubebuilder:validation:Minimum=0
  // +kubebuilder:validation:Maximum=10
  int32_t size = 0;
  // +kubebuilder:validation:Format=ip
  std::string ip;
  // +kubebuilder:validation:Enum=True;False
  std::string flag;
  // +required
  // +kubebuilder:validation:items:Format=cidr
  std::vector<std::string> cidrs;
};

// Widget is a test kind.
// +genclient
// +kubebuilder:resource:scope=Namespaced,shortName=wd;wdg,categories=test
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=Size,type=integer,JSONPath=.spec.size
// +kubebuilder:printcolumn:name=Wide,type=string,JSONPath=.spec.ip,priority=1
struct Widget {
  meta::ObjectMeta metadata;
  // +required
  WidgetSpec spec;
};
)";
}

TEST(CodegenEmitTest, CrdIsValidYamlWithTheSchemaTheMarkersAskFor) {
  auto r = parse(widgetPackage());
  ASSERT_TRUE(std::holds_alternative<Package>(r)) << std::get<ParseError>(r).message;
  const auto files = emitCrds(std::get<Package>(r), "manifests");
  ASSERT_EQ(files.size(), 2u);
  ASSERT_EQ(files.count("manifests/example.dev_widgets.yaml"), 1u);
  const std::string path = "manifests/cel/example.dev_widgets.yaml";
  ASSERT_EQ(files.count(path), 1u);
  const std::string& text = files.at(path);
  // The variant for any server is the same CRD without the CEL rules.
  YAML::Node plain = YAML::Load(files.at("manifests/example.dev_widgets.yaml"));
  EXPECT_FALSE(plain["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                    ["x-kubernetes-validations"]);
  EXPECT_THAT(files.at("manifests/example.dev_widgets.yaml"), ::testing::Not(HasSubstr("rule:")));
  EXPECT_EQ(plain["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                 ["properties"]["size"]["maximum"]
                     .as<int>(),
            10);
  EXPECT_THAT(text, ::testing::StartsWith("# Code generated by egress-codegen from "
                                          "pkg/apis/example/v1/types.h. DO NOT EDIT.\n"));
  YAML::Node crd = YAML::Load(text);
  EXPECT_EQ(crd["metadata"]["name"].as<std::string>(), "widgets.example.dev");
  EXPECT_EQ(crd["spec"]["scope"].as<std::string>(), "Namespaced");
  EXPECT_EQ(crd["spec"]["names"]["shortNames"][1].as<std::string>(), "wdg");
  EXPECT_EQ(crd["spec"]["names"]["listKind"].as<std::string>(), "WidgetList");
  const auto version = crd["spec"]["versions"][0];
  EXPECT_TRUE(version["subresources"]["status"].IsMap());
  EXPECT_EQ(version["additionalPrinterColumns"][0]["jsonPath"].as<std::string>(), ".spec.size");
  EXPECT_FALSE(version["additionalPrinterColumns"][0]["priority"]);
  EXPECT_EQ(version["additionalPrinterColumns"][1]["priority"].as<int>(), 1);
  const auto root = version["schema"]["openAPIV3Schema"];
  EXPECT_EQ(root["required"][0].as<std::string>(), "spec");
  const auto spec = root["properties"]["spec"];
  EXPECT_EQ(spec["description"].as<std::string>(), "WidgetSpec says what a widget is.");
  EXPECT_EQ(spec["x-kubernetes-validations"][0]["message"].as<std::string>(), "an ip needs a size");
  const auto size = spec["properties"]["size"];
  EXPECT_EQ(size["description"].as<std::string>(), "Size, with \"quotes\" and a colon: here.");
  EXPECT_EQ(size["format"].as<std::string>(), "int32");
  EXPECT_EQ(size["maximum"].as<int>(), 10);
  EXPECT_EQ(spec["properties"]["ip"]["anyOf"][1]["format"].as<std::string>(), "ipv6");
  EXPECT_EQ(spec["properties"]["flag"]["enum"][0].as<std::string>(), "True")
      << "quoted, not the boolean true";
  EXPECT_TRUE(spec["properties"]["flag"]["enum"][0].Tag() == "!");
  EXPECT_EQ(spec["properties"]["cidrs"]["items"]["format"].as<std::string>(), "cidr");
  EXPECT_EQ(spec["required"][0].as<std::string>(), "cidrs");
}

// Every file the tool writes (path relative to `out` -> contents).
Files readTree(const std::filesystem::path& out) {
  Files files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(out)) {
    if (e.is_regular_file()) {
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      files[std::filesystem::relative(e.path(), out).generic_string()] = text.str();
    }
  }
  return files;
}

// Runs egress-codegen as its own process on `input` (relative to the repository) into a fresh
// directory and returns what it wrote.
Files runTool(const std::string& input, const std::string& what) {
  char dir[] = "/tmp/codegen_test.XXXXXX";
  EXPECT_NE(mkdtemp(dir), nullptr);
  const std::string cmd = std::string(EGRESS_CODEGEN_TOOL) + " --input '" + EGRESS_SOURCE_DIR +
                          "/" + input + "' --root '" + EGRESS_SOURCE_DIR + "' --what " + what +
                          " --out '" + dir + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  Files files = readTree(dir);
  std::filesystem::remove_all(dir);
  return files;
}

// Two processes (different heap addresses, a different pid): anything the output takes from
// pointer order, time or the environment shows up as a difference. hack/verify-codegen.sh
// compares a third run with the committed files.
TEST(CodegenEmitTest, OutputIsDeterministicAcrossProcesses) {
  for (const char* input :
       {"pkg/apis/networking/v1alpha1/types.h", "test/unit/codegen/testapi/types.h"}) {
    for (const char* what : {"code", "crd"}) {
      const Files a = runTool(input, what);
      const Files b = runTool(input, what);
      EXPECT_GE(a.size(), 3u) << input << " " << what;
      EXPECT_EQ(a, b) << input << " " << what;
    }
  }
}

// The tool itself: a parse error is one line on stderr naming file:line, exit status 1, and
// nothing written.
TEST(CodegenToolTest, ParseErrorNamesFileAndLineAndFails) {
  char dir[] = "/tmp/codegen_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string root = dir;
  std::filesystem::create_directories(root + "/api");
  std::ofstream(root + "/api/types.h") << kHeader << "struct A {\n"
                                       << "  // +kubebuilder:validation:Format=url\n"
                                       << "  std::string a;\n};\n}\n";
  const std::string cmd = std::string(EGRESS_CODEGEN_TOOL) + " --input " + root +
                          "/api/types.h --root " + root + " --what code --out " + root + "/out 2>" +
                          root + "/stderr";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::ifstream err(root + "/stderr");
  std::stringstream text;
  text << err.rdbuf();
  EXPECT_EQ(
      text.str(),
      "egress-codegen: api/types.h:5: unknown Format url (cidr, ipv4, ipv6, ip, ip-or-cidr)\n");
  EXPECT_FALSE(std::filesystem::exists(root + "/out"));
  std::filesystem::remove_all(root);
}

TEST(CodegenEmitTest, CodecsAndClientNameEveryType) {
  auto pkg = std::get<Package>(parse(widgetPackage()));
  const auto code = emitCodecs(pkg, "pkg/apis/example/v1");
  const std::string& cc = code.at("pkg/apis/example/v1/zz_generated.codec.cc");
  EXPECT_THAT(cc, HasSubstr("meta::Decoded<WidgetSpec> decodeWidgetSpec("));
  EXPECT_THAT(cc, HasSubstr("return meta::DecodeError{\"spec\", \"Required value\"};"));
  EXPECT_THAT(cc, HasSubstr("meta::writeField(w, \"apiVersion\", \"example.dev/v1\");"));
  const std::string& vc = code.at("pkg/apis/example/v1/zz_generated.validation.cc");
  EXPECT_THAT(vc, HasSubstr("validation::isIP(v.ip)"));
  EXPECT_THAT(vc, HasSubstr("validation::isCIDR(v.cidrs[i])"));
  const auto client = emitClient(pkg, "pkg/client/example/v1");
  EXPECT_THAT(client.at("pkg/client/example/v1/zz_generated.clientset.h"),
              HasSubstr("TypedClient<egress::example::v1::Widget> widgets(std::string ns) const"));
  EXPECT_THAT(client.at("pkg/client/example/v1/zz_generated.clientset.h"),
              HasSubstr("ExampleV1Client exampleV1() const"));
}

// ---- What the emitters cannot handle is a parse error naming file:line.

// The error of a one-field struct `A` whose field (with its marker lines) is `field`; the field's
// first line is types.h:5.
std::string fieldError(const std::string& field) {
  try {
    return errorOf("struct A {\n" + field + "\n};\n");
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

TEST(CodegenParserTest, TypesTheEmittersCannotHandleAreErrors) {
  EXPECT_EQ(fieldError("  std::vector<meta::StringMap> xs;"),
            "types.h:5: unknown type 'std::vector<meta::StringMap>' (see the grammar in the "
            "types.h banner)");
  EXPECT_EQ(fieldError("  std::optional<std::vector<int32_t>> xs;"),
            "types.h:5: unknown type 'std::optional<std::vector<int32_t>>' (see the grammar in "
            "the types.h banner)");
  // A struct is declared before its use (as C++ needs).
  EXPECT_EQ(errorOf("struct A {\n  B b;\n};\nstruct B {\n  int32_t x;\n};\n"),
            "types.h:5: unknown type 'B' (declare the struct above its use)");
  // Every root kind has metadata (the informer's cache key).
  EXPECT_EQ(errorOf("// +genclient\n// +kubebuilder:resource:scope=Namespaced\nstruct A {\n"
                    "  int32_t x;\n};\n"),
            "types.h:6: A has +genclient but no `meta::ObjectMeta metadata;` field");
}

TEST(CodegenParserTest, MarkerValuesAreChecked) {
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:Format=ipv5\n  std::string a;"),
            "types.h:5: unknown Format ipv5 (cidr, ipv4, ipv6, ip, ip-or-cidr)");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:items:Format=uri\n"
                       "  std::vector<std::string> a;"),
            "types.h:5: unknown Format uri (cidr, ipv4, ipv6, ip, ip-or-cidr)");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:Minimum=abc\n  int32_t a = 0;"),
            "types.h:5: +Minimum=abc is not an integer");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:Maximum=1.5\n  int64_t a = 0;"),
            "types.h:5: +Maximum=1.5 is not an integer");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:Maximum=3000000000\n  int32_t a = 0;"),
            "types.h:5: +Maximum=3000000000 is out of range for int32_t");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:MaxLength=-1\n  std::string a;"),
            "types.h:5: +MaxLength=-1 is not a non-negative integer");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:MinItems=x\n  std::vector<bool> a;"),
            "types.h:5: +MinItems=x is not a non-negative integer");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:Minimum=5\n"
                       "  // +kubebuilder:validation:Maximum=1\n  int32_t a = 0;"),
            "types.h:6: +Maximum=1 is below +Minimum=5");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:Pattern=^a(b$\n  std::string a;"),
            "types.h:5: +Pattern=^a(b$ is not a valid regular expression");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:Enum=a;;b\n  std::string a;"),
            "types.h:5: +Enum=a;;b has an empty value");
  EXPECT_EQ(fieldError("  // +kubebuilder:default=x\n  int32_t a = 0;"),
            "types.h:5: +kubebuilder:default=x is not an int32_t");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:Enum=a;b\n  // +kubebuilder:default=c\n"
                       "  std::string a;"),
            "types.h:6: +kubebuilder:default=c is not one of the +Enum values");
}

TEST(CodegenParserTest, MarkersOnTheWrongTypeAreErrors) {
  EXPECT_EQ(fieldError("  // +emitzero\n  std::string a;"),
            "types.h:5: +emitzero applies to an integer or a bool, not std::string");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:MaxLength=5\n  int32_t a = 0;"),
            "types.h:5: +MaxLength applies to a string, not int32_t");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:Minimum=1\n  std::string a;"),
            "types.h:5: +Minimum applies to an integer, not std::string");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:Enum=a;b\n  std::optional<int64_t> a;"),
            "types.h:5: +Enum applies to a string, not std::optional<int64_t>");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:MinItems=1\n  meta::StringMap a;"),
            "types.h:5: +MinItems applies to a list, not meta::StringMap");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:items:Format=ip\n  std::string a;"),
            "types.h:5: +items:Format applies to the items of a list or map of strings, not "
            "std::string");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:items:Minimum=1\n"
                       "  std::vector<std::string> a;"),
            "types.h:5: +items:Minimum applies to the items of a list of integers, not "
            "std::vector<std::string>");
  EXPECT_EQ(fieldError("  // +listType=set\n  std::vector<meta::Condition> a;"),
            "types.h:5: +listType=set needs a list of strings, integers or booleans");
  EXPECT_EQ(fieldError("  // +listMapKey=type\n  std::vector<meta::Condition> a;"),
            "types.h:5: +listMapKey needs +listType=map");
  EXPECT_EQ(fieldError("  // +listType=map\n  std::vector<meta::Condition> a;"),
            "types.h:5: +listType=map needs a +listMapKey");
  EXPECT_EQ(fieldError("  // +listType=map\n  // +listMapKey=kind\n"
                       "  std::vector<meta::Condition> a;"),
            "types.h:6: +listMapKey=kind is not a required field of meta::Condition");
  EXPECT_EQ(fieldError("  // +listType=bag\n  std::vector<std::string> a;"),
            "types.h:5: +listType=bag: one of atomic, set, map");
  EXPECT_EQ(fieldError("  // +genclient\n  int32_t a = 0;"),
            "types.h:5: +genclient belongs on a struct, not a field");
  EXPECT_EQ(errorOf("// +kubebuilder:validation:Minimum=1\nstruct A {\n  int32_t a = 0;\n};\n"),
            "types.h:4: +Minimum belongs on a field, not a struct");
  // A marker followed by a blank line attaches to nothing: it would be lost.
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:Minimum=1\n\n  int32_t a = 0;"),
            "types.h:5: marker +Minimum is followed by a blank line and attaches to nothing");
}

TEST(CodegenParserTest, MarkerArgumentErrorsNameTheLine) {
  EXPECT_EQ(errorOf("// +kubebuilder:validation:XValidation:rule=\"self.a,message=m\n"
                    "struct A {\n  int32_t a = 0;\n};\n"),
            "types.h:4: unterminated \" in +XValidation");
  EXPECT_EQ(errorOf("// +kubebuilder:validation:XValidation:message=m\n"
                    "struct A {\n  int32_t a = 0;\n};\n"),
            "types.h:4: +XValidation needs a rule");
  EXPECT_EQ(errorOf("// +kubebuilder:validation:XValidation:rule=self.a > 0,severity=high\n"
                    "struct A {\n  int32_t a = 0;\n};\n"),
            "types.h:4: unknown +XValidation argument severity");
  EXPECT_EQ(errorOf("// +genclient\n// +kubebuilder:resource:scope=Global\nstruct A {\n"
                    "  meta::ObjectMeta metadata;\n};\n"),
            "types.h:5: scope must be Cluster or Namespaced, not Global");
  EXPECT_EQ(errorOf("// +genclient\n// +kubebuilder:resource:path=Foos\nstruct A {\n"
                    "  meta::ObjectMeta metadata;\n};\n"),
            "types.h:5: +kubebuilder:resource:path=Foos must be lower-case letters and digits");
  EXPECT_EQ(errorOf("// +genclient\n// +kubebuilder:resource:scope=Namespaced\n"
                    "// +kubebuilder:printcolumn:name=A,type=int,JSONPath=.a\nstruct A {\n"
                    "  meta::ObjectMeta metadata;\n};\n"),
            "types.h:6: printcolumn type int: one of integer, number, string, boolean, date");
  EXPECT_EQ(errorOf("// +genclient\n// +kubebuilder:resource:scope=Namespaced\n"
                    "// +kubebuilder:printcolumn:name=A,type=string,JSONPath=.a,priority=high\n"
                    "struct A {\n  meta::ObjectMeta metadata;\n};\n"),
            "types.h:6: printcolumn priority high: a number from 0 to 99");
}

// CEL rules are quoted Go strings in kubebuilder's markers; a comma inside the quotes is not an
// argument separator.
TEST(CodegenModelTest, QuotedMarkerArgumentsKeepTheirCommas) {
  auto r = parse(R"(
// +genclient
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:validation:XValidation:rule="self.a,a==b",message="no, \"never\""
// +kubebuilder:validation:XValidation:rule=size(self.x) > 1,a==b,message=m
struct Thing {
  meta::ObjectMeta metadata;
};
)");
  ASSERT_TRUE(std::holds_alternative<Package>(r)) << std::get<ParseError>(r).message;
  const auto files = emitCrds(std::get<Package>(r), "m");
  const YAML::Node crd = YAML::Load(files.at("m/cel/example.dev_things.yaml"));
  const auto rules =
      crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"];
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0]["rule"].as<std::string>(), "self.a,a==b");
  EXPECT_EQ(rules[0]["message"].as<std::string>(), "no, \"never\"");
  EXPECT_EQ(rules[1]["rule"].as<std::string>(), "size(self.x) > 1,a==b");
  EXPECT_EQ(rules[1]["message"].as<std::string>(), "m");
}

TEST(CodegenEmitTest, EveryListMapKeyReachesTheCrd) {
  auto r = parse(R"(
struct Port {
  // +required
  std::string protocol;
  // +required
  int32_t port = 0;
};

// +genclient
// +kubebuilder:resource:scope=Namespaced
struct Service {
  meta::ObjectMeta metadata;
  // +listType=map
  // +listMapKey=protocol
  // +listMapKey=port
  std::vector<Port> ports;
};
)");
  ASSERT_TRUE(std::holds_alternative<Package>(r)) << std::get<ParseError>(r).message;
  const auto files = emitCrds(std::get<Package>(r), "m");
  const YAML::Node crd = YAML::Load(files.at("m/example.dev_services.yaml"));
  const auto keys = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["ports"]
                       ["x-kubernetes-list-map-keys"];
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].as<std::string>(), "protocol");
  EXPECT_EQ(keys[1].as<std::string>(), "port");
}

TEST(CodegenModelTest, PluralizeFollowsEnglish) {
  EXPECT_EQ(pluralize("gateway"), "gateways");
  EXPECT_EQ(pluralize("key"), "keys");
  EXPECT_EQ(pluralize("policy"), "policies");
  EXPECT_EQ(pluralize("egressgatewaypolicy"), "egressgatewaypolicies");
  EXPECT_EQ(pluralize("class"), "classes");
  EXPECT_EQ(pluralize("gatewayClass"), "gatewayClasses");
  EXPECT_EQ(pluralize("status"), "statuses");
  EXPECT_EQ(pluralize("box"), "boxes");
  EXPECT_EQ(pluralize("buzz"), "buzzes");
  EXPECT_EQ(pluralize("mesh"), "meshes");
  EXPECT_EQ(pluralize("batch"), "batches");
  EXPECT_EQ(pluralize("pool"), "pools");
  EXPECT_EQ(pluralize("ipampool"), "ipampools");
}

// +kubebuilder:resource:path= (or plural=) names the resource where English rules do not.
TEST(CodegenEmitTest, ResourcePluralOverrideReachesCrdAndClient) {
  for (const char* arg : {"path", "plural"}) {
    auto r = parse(std::string(R"(
// +genclient
// +kubebuilder:resource:scope=Namespaced,)") +
                   arg + R"(=mice
struct Mouse {
  meta::ObjectMeta metadata;
};
)");
    ASSERT_TRUE(std::holds_alternative<Package>(r)) << std::get<ParseError>(r).message;
    const auto& pkg = std::get<Package>(r);
    Files crds;
    ASSERT_NO_THROW(crds = emitCrds(pkg, "m")) << arg;
    ASSERT_EQ(crds.count("m/example.dev_mice.yaml"), 1u) << arg;
    const YAML::Node crd = YAML::Load(crds.at("m/example.dev_mice.yaml"));
    EXPECT_EQ(crd["metadata"]["name"].as<std::string>(), "mice.example.dev");
    EXPECT_EQ(crd["spec"]["names"]["plural"].as<std::string>(), "mice");
    EXPECT_EQ(crd["spec"]["names"]["singular"].as<std::string>(), "mouse");
    const std::string clientset = emitClient(pkg, "pkg/client/example/v1")
                                      .at("pkg/client/example/v1/zz_generated.clientset.h");
    EXPECT_THAT(clientset, HasSubstr("\"example.dev\", \"v1\", \"mice\", true"));
    EXPECT_THAT(clientset,
                HasSubstr("TypedClient<egress::example::v1::Mouse> mice(std::string ns)"));
  }
}

// ---- The CRD emitter and the validation emitter read the same constraints.

TEST(CodegenEmitTest, MapValueFormatIsCheckedByTheValidatorToo) {
  auto r = parse(R"(
struct Routes {
  // +kubebuilder:validation:items:Format=cidr
  // +kubebuilder:validation:items:MinLength=2
  // +kubebuilder:validation:items:Enum=10.0.0.0/8;192.168.0.0/16
  meta::StringMap byName;
};
)");
  ASSERT_TRUE(std::holds_alternative<Package>(r)) << std::get<ParseError>(r).message;
  const auto& pkg = std::get<Package>(r);
  const std::string vc =
      emitCodecs(pkg, "pkg/apis/example/v1").at("pkg/apis/example/v1/zz_generated.validation.cc");
  EXPECT_THAT(vc, HasSubstr("validation::isCIDR(value)"));
  EXPECT_THAT(vc, HasSubstr("value.size() < 2"));
  EXPECT_THAT(vc, HasSubstr("value != \"10.0.0.0/8\""));
}

// meta::Quantity and meta::QuantityMap: the grammar takes them plain, optional and (a quantity)
// in lists; the CRD declares each quantity int-or-string with the quantity pattern, and the
// validator parses it.
TEST(CodegenEmitTest, QuantitiesAreIntOrStringInTheCrdAndParsedByTheValidator) {
  auto r = parse(R"(
// +genclient
// +kubebuilder:resource:scope=Namespaced
struct Box {
  meta::ObjectMeta metadata;
  // +required
  meta::Quantity size;
  std::optional<meta::Quantity> burst;
  std::vector<meta::Quantity> steps;
  // Limits.
  meta::QuantityMap limits;
  std::optional<meta::QuantityMap> requests;
};
)");
  ASSERT_TRUE(std::holds_alternative<Package>(r)) << std::get<ParseError>(r).message;
  const auto& pkg = std::get<Package>(r);
  const auto& box = *pkg.find("Box");
  EXPECT_EQ(box.fields[1].type.kind, TypeRef::Kind::Quantity);
  EXPECT_EQ(box.fields[3].type.cpp(), "std::vector<meta::Quantity>");
  EXPECT_EQ(box.fields[5].type.cpp(), "std::optional<meta::QuantityMap>");

  const YAML::Node crd = YAML::Load(emitCrds(pkg, "m").at("m/example.dev_boxes.yaml"));
  const auto props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
  for (const YAML::Node& q :
       {props["size"], props["burst"], props["steps"]["items"],
        props["limits"]["additionalProperties"], props["requests"]["additionalProperties"]}) {
    ASSERT_TRUE(q.IsMap());
    EXPECT_FALSE(q["type"]) << "int-or-string has no type";
    EXPECT_EQ(q["x-kubernetes-int-or-string"].as<bool>(), true);
    ASSERT_EQ(q["anyOf"].size(), 2u);
    EXPECT_EQ(q["anyOf"][0]["type"].as<std::string>(), "integer");
    EXPECT_EQ(q["anyOf"][1]["type"].as<std::string>(), "string");
    EXPECT_EQ(q["pattern"].as<std::string>(),
              "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?"
              "(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$");
  }
  EXPECT_EQ(props["limits"]["type"].as<std::string>(), "object");
  EXPECT_EQ(props["limits"]["description"].as<std::string>(), "Limits.");
  EXPECT_EQ(
      crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["required"][0].as<std::string>(),
      "size");

  const auto code = emitCodecs(pkg, "pkg/apis/example/v1");
  const std::string& cc = code.at("pkg/apis/example/v1/zz_generated.codec.cc");
  EXPECT_THAT(cc, HasSubstr("r.object(\"limits\", out.limits, meta::decodeQuantityMap);"));
  EXPECT_THAT(cc, HasSubstr("r.list(\"steps\", out.steps, meta::decodeQuantity);"));
  EXPECT_THAT(cc, HasSubstr("meta::encodeQuantity(w, *v.burst);"));
  const std::string& vc = code.at("pkg/apis/example/v1/zz_generated.validation.cc");
  EXPECT_THAT(vc, HasSubstr("if (auto q = v.size.value(); !q) {"));
  EXPECT_THAT(vc, HasSubstr("if (auto q = (*v.burst).value(); !q) {"));
  EXPECT_THAT(vc, HasSubstr("if (auto q = v.steps[i].value(); !q) {"));
  EXPECT_THAT(vc, HasSubstr("for (const auto& [key, value] : *v.requests) {"));
}

TEST(CodegenParserTest, QuantitiesTakeNoValueMarkers) {
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:MaxLength=5\n  meta::Quantity a;"),
            "types.h:5: +MaxLength applies to a string, not meta::Quantity");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:Pattern=^1$\n  meta::Quantity a;"),
            "types.h:5: +Pattern applies to a string, not meta::Quantity");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:items:Pattern=^1$\n  meta::QuantityMap a;"),
            "types.h:5: +items:Pattern applies to the items of a list or map of strings, not "
            "meta::QuantityMap");
  EXPECT_EQ(fieldError("  // +kubebuilder:validation:items:MaxLength=3\n"
                       "  std::vector<meta::Quantity> a;"),
            "types.h:5: +items:MaxLength applies to the items of a list or map of strings, not "
            "std::vector<meta::Quantity>");
  EXPECT_EQ(fieldError("  // +listType=set\n  std::vector<meta::Quantity> a;"),
            "types.h:5: +listType=set needs a list of strings, integers or booleans");
  EXPECT_EQ(fieldError("  // +kubebuilder:default=1\n  meta::Quantity a;"),
            "types.h:5: +kubebuilder:default=1: a meta::Quantity takes no default");
  EXPECT_EQ(fieldError("  std::vector<meta::QuantityMap> xs;"),
            "types.h:5: unknown type 'std::vector<meta::QuantityMap>' (see the grammar in the "
            "types.h banner)");
}

// Descriptions reach `kubectl explain`: they speak Kubernetes (JSON names, absent, lists), not
// C++.
TEST(CodegenParserTest, TheRepositoryDescriptionsHaveNoCppWords) {
  std::ifstream in(std::string(EGRESS_SOURCE_DIR) + "/pkg/apis/networking/v1alpha1/types.h");
  std::stringstream text;
  text << in.rdbuf();
  auto r = parsePackage(text.str(), "types.h", "pkg/apis/networking/v1alpha1/types.h");
  ASSERT_TRUE(std::holds_alternative<Package>(r)) << std::get<ParseError>(r).message;
  int described = 0;
  auto check = [&](const std::string& where, const std::vector<std::string>& doc) {
    for (const auto& line : doc) {
      ++described;
      for (const char* word : {"std::", "optional<", "nullopt", "vector", "int32_t", "int64_t",
                               "meta::", "C++", "struct", "bool", "operator_"}) {
        EXPECT_EQ(line.find(word), std::string::npos) << where << ": \"" << line << "\"";
      }
    }
  };
  for (const auto& s : std::get<Package>(r).structs) {
    check(s.name, s.doc);
    for (const auto& f : s.fields) {
      check(s.name + "." + f.jsonName, f.doc);
    }
  }
  EXPECT_GT(described, 50);
}

}  // namespace
}  // namespace egress::codegen
