// File: model.h
//
// What the code generator knows about an API package after parsing its types.h: structs,
// fields, their types and the markers attached to them. Every emitter works from this model
// alone, so the output depends only on the input text (deterministic by construction).
#pragma once

#include <cstdint>
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
    Quantity,     // meta::Quantity: a JSON integer or string
    QuantityMap,  // meta::QuantityMap: resource name -> Quantity
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
  bool isInteger() const { return kind == Kind::Int32 || kind == Kind::Int64; }
  // A map whose keys are strings: meta::StringMap, meta::QuantityMap.
  bool isMap() const { return kind == Kind::StringMap || kind == Kind::QuantityMap; }
  // The type without its std::optional.
  const TypeRef& base() const { return kind == Kind::Optional ? *elem : *this; }
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

// A marker's `key=value` arguments in source order.
using MarkerArgs = std::vector<std::pair<std::string, std::string>>;

// A string format: declared in the CRD, checked by pkg/apis/validation/formats.h.
enum class Format { CIDR, IPv4, IPv6, IP, IPOrCIDR };

// The checks on one value, resolved once from its markers when the package is parsed. The CRD
// emitter writes them as schema keywords and the validation emitter as code, both from this
// struct alone, so the two cannot drift. The parser only sets what applies to the value's type
// (string, integer or list checks).
struct Constraints {
  std::optional<int64_t> minLength;
  std::optional<int64_t> maxLength;
  std::optional<std::string> pattern;
  std::vector<std::string> enumValues;
  std::optional<Format> format;
  std::optional<int64_t> minimum;
  std::optional<int64_t> maximum;
  std::optional<int64_t> minItems;
  std::optional<int64_t> maxItems;

  bool empty() const;
};

enum class ListType { Unset, Atomic, Set, Map };

// +kubebuilder:default, checked against the field's type: `text` is YAML (a string is quoted by
// the CRD emitter as needed, other values are written as they are).
struct Default {
  std::string text;
  bool isString = false;
};

struct Field {
  std::string cppName;
  std::string jsonName;
  TypeRef type;
  std::vector<std::string> doc;
  std::vector<Marker> markers;
  int line = 0;

  // Resolved from the markers by parsePackage.
  Constraints constraints;  // the value's own (the std::optional's value)
  Constraints items;        // each item of a list, each value of a map
  ListType listType = ListType::Unset;
  std::vector<std::string> listMapKeys;  // JSON names, in marker order
  std::optional<Default> defaultValue;
  std::vector<MarkerArgs> rules;  // +XValidation: rule, message, ...

  bool required() const;
  // +emitzero: written even when 0 or false (a Go field without omitempty), for counts whose 0
  // is news ("free: 0"); decoding and validation treat it as any optional field.
  bool emitsZero() const;
  const Marker* marker(const std::string& name) const;
};

struct PrintColumn {
  std::string name;
  std::string type;
  std::string jsonPath;
  int priority = 0;  // > 0: shown by `kubectl get -o wide` only
};

// A root kind's resource facts, from its markers.
struct Resource {
  std::string kind;      // "IPAMPool"
  std::string plural;    // "ipampools"
  std::string singular;  // "ipampool"
  std::string accessor;  // "ipamPools": the clientset's and informers' method
  bool namespaced = true;
  std::vector<std::string> shortNames;
  std::vector<std::string> categories;
  bool statusSubresource = false;
  std::vector<PrintColumn> printColumns;
};

struct Struct {
  std::string name;
  std::vector<std::string> doc;
  std::vector<Marker> markers;
  std::vector<Field> fields;
  int line = 0;

  // Resolved from the markers by parsePackage.
  std::vector<MarkerArgs> rules;     // +XValidation
  std::optional<Resource> resource;  // set exactly for the roots

  // +genclient: a top-level kind with its own resource.
  bool isRoot() const;
  const Marker* marker(const std::string& name) const;
  std::vector<const Marker*> markersNamed(const std::string& name) const;
  const Field* field(const std::string& jsonName) const;
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

// A problem with a marker, at its line of types.h.
struct MarkerError {
  int line = 0;
  std::string message;
};

// Resolves every marker of `pkg` (constraints, lists, defaults, CEL rules, resources), checking
// each against the type it is on; the first problem is returned.
std::optional<MarkerError> resolveMarkers(Package& pkg);

// Splits `a=1,b="x, y",c=2` into its arguments. A value is a Go-quoted string ("..." with
// backslash escapes, or `...`, as kubebuilder's markers take CEL rules), or else runs up to the
// next comma that starts a new `key=` (so unquoted values may contain commas; `,a==b` is CEL,
// not a new argument). The error says what is malformed.
std::variant<MarkerArgs, std::string> splitMarkerArgs(const std::string& value);

// English plural of a lower-case or camelCase name (gengo's rules): "policy" -> "policies",
// "gateway" -> "gateways", "class" -> "classes", "pool" -> "pools".
std::string pluralize(const std::string& name);

// "IPAMPool" -> "ipamPool", "EgressGatewayPolicy" -> "egressGatewayPolicy" (leading capitals
// lower-cased up to the last one that starts a word).
std::string lowerCamel(const std::string& name);

}  // namespace egress::codegen
