// File: model.h
//
// What the code generator knows about an API package after parsing its types.h: structs,
// fields, their types and the markers attached to them. Every emitter works from this model
// alone, so the output depends only on the input text (deterministic by construction).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace egress::codegen {

struct TypeRef {
  enum class Kind {
    String,
    Bool,
    Int32,
    Int64,
    StringMap,
    ObjectMeta,
    LabelSelector,
    Condition,
    Struct,    // a struct of the package: `name`
    Optional,  // std::optional<*elem>
    Vector,    // std::vector<*elem>
  };
  Kind kind = Kind::String;
  std::string name;  // Struct
  std::shared_ptr<TypeRef> elem;

  bool isScalar() const {
    return kind == Kind::String || kind == Kind::Bool || kind == Kind::Int32 || kind == Kind::Int64;
  }
  // The C++ spelling, as in types.h.
  std::string cpp() const;
};

// `+name=value` or `+name` (value ""). `kubebuilder:validation:` is stripped from names
// ("Minimum", "items:Format", "XValidation"); other prefixes stay ("kubebuilder:resource").
struct Marker {
  std::string name;
  std::string value;
  int line = 0;
};

struct Field {
  std::string cppName;
  std::string jsonName;
  TypeRef type;
  std::vector<std::string> doc;
  std::vector<Marker> markers;
  int line = 0;

  bool required() const;
  const Marker* marker(const std::string& name) const;
  std::vector<const Marker*> markersNamed(const std::string& name) const;
};

struct PrintColumn {
  std::string name;
  std::string type;
  std::string jsonPath;
};

struct Struct {
  std::string name;
  std::vector<std::string> doc;
  std::vector<Marker> markers;
  std::vector<Field> fields;
  int line = 0;

  // +genclient: a top-level kind with its own resource.
  bool isRoot() const;
  const Marker* marker(const std::string& name) const;
  std::vector<const Marker*> markersNamed(const std::string& name) const;
};

// A root kind's resource facts, from its markers.
struct Resource {
  std::string kind;      // "IPAMPool"
  std::string plural;    // "ipampools"
  std::string singular;  // "ipampool"
  bool namespaced = true;
  std::vector<std::string> shortNames;
  std::vector<std::string> categories;
  bool statusSubresource = false;
  std::vector<PrintColumn> printColumns;
};

struct Package {
  std::string group;
  std::string version;
  std::string cppNamespace;  // "egress::networking::v1alpha1"
  std::string includePath;   // "pkg/apis/networking/v1alpha1/types.h"
  std::vector<Struct> structs;

  const Struct* find(const std::string& name) const;
  std::vector<const Struct*> roots() const;
};

// Splits `a=1,b=x,y,c=2` at the commas that start a new `key=` (values may contain commas).
std::vector<std::pair<std::string, std::string>> splitMarkerArgs(const std::string& value);

// The resource facts of a root struct; an error names the marker's line.
struct ResourceError {
  std::string message;
};
std::variant<Resource, ResourceError> resourceOf(const Struct& s);

// English plural of a lower-case or camelCase name: "policy" -> "policies", "pool" -> "pools".
std::string pluralize(const std::string& name);

// "IPAMPool" -> "ipamPool", "EgressGatewayPolicy" -> "egressGatewayPolicy" (leading capitals
// lower-cased up to the last one that starts a word).
std::string lowerCamel(const std::string& name);

}  // namespace egress::codegen
