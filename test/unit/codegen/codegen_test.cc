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
    const auto res = std::get<Resource>(resourceOf(*s));
    roots.push_back(res.plural + (res.namespaced ? "/ns/" : "/cluster/") + res.shortNames.at(0));
  }
  EXPECT_THAT(roots, ElementsAre("ipampools/cluster/ipp", "egressgatewaypolicies/ns/egp",
                                 "operatorconfigs/cluster/eoc"));
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
  EXPECT_THAT(splitMarkerArgs("rule=self.all(a, a > 0) || x,message=a, b or c"),
              ElementsAre(std::pair<std::string, std::string>{"rule", "self.all(a, a > 0) || x"},
                          std::pair<std::string, std::string>{"message", "a, b or c"}));
  EXPECT_THAT(splitMarkerArgs("scope=Cluster,shortName=ipp"),
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
  auto r = parse(R"(
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:resource:scope=Namespaced
struct Thing {
  meta::ObjectMeta metadata;
};
)");
  const auto& pkg = std::get<Package>(r);
  auto res = resourceOf(*pkg.roots().at(0));
  EXPECT_THAT(std::get<ResourceError>(res).message,
              HasSubstr("scope=Namespaced disagrees with +genclient:nonNamespaced"));
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
  for (const char* what : {"code", "crd"}) {
    const Files a = runTool("pkg/apis/networking/v1alpha1/types.h", what);
    const Files b = runTool("pkg/apis/networking/v1alpha1/types.h", what);
    EXPECT_GE(a.size(), 3u) << what;
    EXPECT_EQ(a, b) << what;
  }
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

}  // namespace
}  // namespace egress::codegen
