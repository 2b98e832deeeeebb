#include <algorithm>
#include <sstream>
#include <variant>

#include "hack/codegen/emit.h"

namespace egress::codegen {
namespace {

using K = TypeRef::Kind;

struct Entry;

// A YAML value: a scalar already in YAML syntax, a mapping (in insertion order) or a sequence.
// (Entries, not std::pair<std::string, Node>: a pair of an incomplete type is undefined.)
struct Node {
  enum class Type { Scalar, Map, List };

  // Special members and helpers are defined below Entry, where it is complete.
  Node();
  Node(const Node&);
  Node(Node&&) noexcept;
  Node& operator=(const Node&);
  Node& operator=(Node&&) noexcept;
  ~Node();

  static Node str(const std::string& s);
  static Node raw(const std::string& s);
  static Node seq();
  Node& set(const std::string& k, Node v);
  void push(Node v);

  std::string scalar;
  std::vector<Entry> map;
  std::vector<Node> list;
  Type type = Type::Map;
};

struct Entry {
  std::string first;
  Node second;
};

Node::Node() = default;
Node::Node(const Node&) = default;
Node::Node(Node&&) noexcept = default;
Node& Node::operator=(const Node&) = default;
Node& Node::operator=(Node&&) noexcept = default;
Node::~Node() = default;

Node Node::raw(const std::string& s) {
  Node n;
  n.type = Type::Scalar;
  n.scalar = s;
  return n;
}

Node Node::seq() {
  Node n;
  n.type = Type::List;
  return n;
}

void Node::push(Node v) {
  list.push_back(std::move(v));
}

Node& Node::set(const std::string& k, Node v) {
  for (auto& [key, val] : map) {
    if (key == k) {
      val = std::move(v);
      return val;
    }
  }
  map.push_back(Entry{k, std::move(v)});
  return map.back().second;
}

// Plain when unambiguous, else a double-quoted (JSON-escaped) string.
Node Node::str(const std::string& s) {
  bool plain = !s.empty() && s.size() < 60;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '-' && c != '_' &&
        c != '/') {
      plain = false;
    }
  }
  static const char* kReserved[] = {"true", "false", "null", "yes", "no", "on", "off", "y", "n"};
  for (const char* r : kReserved) {
    std::string lower = s;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (lower == r) {
      plain = false;
    }
  }
  if (plain &&
      (std::isdigit(static_cast<unsigned char>(s[0])) != 0 || s[0] == '-' || s[0] == '.')) {
    plain = false;
  }
  if (plain) {
    return raw(s);
  }
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      q += '\\';
      q += c;
    } else if (c == '\n') {
      q += "\\n";
    } else {
      q += c;
    }
  }
  return raw(q + "\"");
}

void write(std::ostringstream& o, const Node& n, int indent);

void writeValue(std::ostringstream& o, const Node& v, int indent) {
  if (v.type == Node::Type::Scalar) {
    o << " " << v.scalar << "\n";
  } else if (v.type == Node::Type::Map && v.map.empty()) {
    o << " {}\n";
  } else if (v.type == Node::Type::List && v.list.empty()) {
    o << " []\n";
  } else {
    o << "\n";
    write(o, v, v.type == Node::Type::Map ? indent + 2 : indent);
  }
}

void write(std::ostringstream& o, const Node& n, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (n.type == Node::Type::Map) {
    for (const auto& [k, v] : n.map) {
      o << pad << k << ":";
      writeValue(o, v, indent);
    }
  } else if (n.type == Node::Type::List) {
    for (const auto& item : n.list) {
      if (item.type == Node::Type::Map && !item.map.empty()) {
        // "- first: x" then the rest indented under it.
        std::ostringstream inner;
        write(inner, item, indent + 2);
        std::string text = inner.str();
        text.replace(static_cast<size_t>(indent), 2, "- ");
        o << text;
      } else {
        o << pad << "-";
        writeValue(o, item, indent + 2);
      }
    }
  }
}

std::string describe(const std::vector<std::string>& doc) {
  std::string out;
  for (const auto& l : doc) {
    out += (out.empty() ? "" : " ") + l;
  }
  return out;
}

Node labelSelectorSchema() {
  Node n;
  n.set("type", Node::raw("object"));
  Node props;
  Node ml;
  ml.set("type", Node::raw("object"));
  Node str;
  str.set("type", Node::raw("string"));
  ml.set("additionalProperties", str);
  props.set("matchExpressions", [&] {
    Node arr;
    arr.set("type", Node::raw("array"));
    Node item;
    item.set("type", Node::raw("object"));
    Node ip;
    ip.set("key", str);
    Node op = str;
    Node ops = Node::seq();
    for (const char* v : {"In", "NotIn", "Exists", "DoesNotExist"}) {
      ops.push(Node::raw(v));
    }
    op.set("enum", ops);
    ip.set("operator", op);
    Node values;
    values.set("type", Node::raw("array"));
    values.set("items", str);
    ip.set("values", values);
    item.set("properties", ip);
    Node req = Node::seq();
    req.push(Node::raw("key"));
    req.push(Node::raw("operator"));
    item.set("required", req);
    arr.set("items", item);
    return arr;
  }());
  props.set("matchLabels", ml);
  n.set("properties", props);
  n.set("x-kubernetes-map-type", Node::raw("atomic"));
  return n;
}

Node conditionSchema() {
  Node n;
  n.set("type", Node::raw("object"));
  Node props;
  Node str;
  str.set("type", Node::raw("string"));
  Node time = str;
  time.set("format", Node::raw("date-time"));
  props.set("lastTransitionTime", time);
  props.set("message", str);
  Node gen;
  gen.set("type", Node::raw("integer"));
  gen.set("format", Node::raw("int64"));
  props.set("observedGeneration", gen);
  props.set("reason", str);
  Node status = str;
  Node vals = Node::seq();
  for (const char* v : {"True", "False", "Unknown"}) {
    vals.push(Node::str(v));
  }
  status.set("enum", vals);
  props.set("status", status);
  props.set("type", str);
  n.set("properties", props);
  Node req = Node::seq();
  req.push(Node::raw("status"));
  req.push(Node::raw("type"));
  n.set("required", req);
  return n;
}

// A resource.Quantity as controller-gen writes it: a JSON integer or a string with the quantity
// pattern (anchored, and linear in RE2, as the API server's CEL-free schema checks need). The
// validation emitter checks the same with meta::parseQuantity (emit_codec.cc, quantityCheck).
Node quantitySchema() {
  Node n;
  Node any = Node::seq();
  for (const char* type : {"integer", "string"}) {
    Node alt;
    alt.set("type", Node::raw(type));
    any.push(alt);
  }
  n.set("anyOf", any);
  n.set("pattern", Node::str("^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                             "([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$"));
  n.set("x-kubernetes-int-or-string", Node::raw("true"));
  return n;
}

void applyFormat(Node& n, Format format) {
  switch (format) {
    case Format::CIDR:
      n.set("format", Node::raw("cidr"));
      return;
    case Format::IPv4:
      n.set("format", Node::raw("ipv4"));
      return;
    case Format::IPv6:
      n.set("format", Node::raw("ipv6"));
      return;
    case Format::IP:
    case Format::IPOrCIDR:
      break;
  }
  Node any = Node::seq();
  for (const char* f : {"ipv4", "ipv6", "cidr"}) {
    if (std::string(f) == "cidr" && format == Format::IP) {
      continue;
    }
    Node alt;
    alt.set("format", Node::raw(f));
    any.push(alt);
  }
  n.set("anyOf", any);
}

// The schema keywords of `c`, in controller-gen's order. The validation emitter checks the same
// Constraints (emit_codec.cc, valueChecks).
void applyConstraints(Node& n, const Constraints& c) {
  if (!c.enumValues.empty()) {
    Node vals = Node::seq();
    for (const auto& v : c.enumValues) {
      vals.push(Node::str(v));
    }
    n.set("enum", vals);
  }
  if (c.format) {
    applyFormat(n, *c.format);
  }
  auto number = [&n](const char* key, const std::optional<int64_t>& v) {
    if (v) {
      n.set(key, Node::raw(std::to_string(*v)));
    }
  };
  number("maxLength", c.maxLength);
  number("minLength", c.minLength);
  if (c.pattern) {
    n.set("pattern", Node::str(*c.pattern));
  }
  number("maximum", c.maximum);
  number("minimum", c.minimum);
  number("maxItems", c.maxItems);
  number("minItems", c.minItems);
}

void addRules(Node& n, const std::vector<MarkerArgs>& rules) {
  if (rules.empty()) {
    return;
  }
  Node list = Node::seq();
  for (const MarkerArgs& args : rules) {
    Node r;
    for (const auto& [k, v] : args) {
      r.set(k, Node::str(v));
    }
    list.push(r);
  }
  n.set("x-kubernetes-validations", list);
}

Node structSchema(const Package& pkg, const Struct& s);

Node typeSchema(const Package& pkg, const TypeRef& t) {
  Node n;
  switch (t.kind) {
    case K::String:
      n.set("type", Node::raw("string"));
      break;
    case K::Bool:
      n.set("type", Node::raw("boolean"));
      break;
    case K::Int32:
      n.set("type", Node::raw("integer"));
      n.set("format", Node::raw("int32"));
      break;
    case K::Int64:
      n.set("type", Node::raw("integer"));
      n.set("format", Node::raw("int64"));
      break;
    case K::StringMap: {
      n.set("type", Node::raw("object"));
      Node v;
      v.set("type", Node::raw("string"));
      n.set("additionalProperties", v);
      break;
    }
    case K::Quantity:
      return quantitySchema();
    case K::QuantityMap:
      n.set("type", Node::raw("object"));
      n.set("additionalProperties", quantitySchema());
      break;
    case K::ObjectMeta:
      n.set("type", Node::raw("object"));
      break;
    case K::LabelSelector:
      return labelSelectorSchema();
    case K::Condition:
      return conditionSchema();
    case K::Struct:
      return structSchema(pkg, *pkg.find(t.name));
    case K::Optional:
      return typeSchema(pkg, *t.elem);
    case K::Vector:
      n.set("type", Node::raw("array"));
      n.set("items", typeSchema(pkg, *t.elem));
      break;
  }
  return n;
}

Node fieldSchema(const Package& pkg, const Field& f) {
  Node n = typeSchema(pkg, f.type);
  // Description first, as controller-gen writes it.
  Node out;
  const std::string desc = describe(f.doc);
  if (!desc.empty()) {
    out.set("description", Node::str(desc));
  }
  for (auto& kv : n.map) {
    if (kv.first != "description" || desc.empty()) {
      out.set(kv.first, kv.second);
    }
  }
  applyConstraints(out, f.constraints);
  for (auto& [k, v] : out.map) {
    if (k == "items" || k == "additionalProperties") {
      applyConstraints(v, f.items);
    }
  }
  if (f.listType != ListType::Unset) {
    static const char* const kNames[] = {"", "atomic", "set", "map"};
    out.set("x-kubernetes-list-type", Node::raw(kNames[static_cast<int>(f.listType)]));
  }
  if (!f.listMapKeys.empty()) {
    Node keys = Node::seq();
    for (const auto& k : f.listMapKeys) {
      keys.push(Node::raw(k));
    }
    out.set("x-kubernetes-list-map-keys", keys);
  }
  if (f.defaultValue) {
    out.set("default", f.defaultValue->isString ? Node::str(f.defaultValue->text)
                                                : Node::raw(f.defaultValue->text));
  }
  addRules(out, f.rules);
  return out;
}

Node structSchema(const Package& pkg, const Struct& s) {
  Node n;
  const std::string desc = describe(s.doc);
  if (!desc.empty()) {
    n.set("description", Node::str(desc));
  }
  // Properties sorted by name (as controller-gen writes them), the root's apiVersion and kind
  // among them; keys in the order description, properties, required, type, rules.
  Node props;
  if (s.isRoot()) {
    Node a;
    a.set(
        "description",
        Node::str("APIVersion defines the versioned schema of this representation of an object."));
    a.set("type", Node::raw("string"));
    props.set("apiVersion", a);
    Node k;
    k.set(
        "description",
        Node::str("Kind is a string value representing the REST resource this object represents."));
    k.set("type", Node::raw("string"));
    props.set("kind", k);
  }
  Node req = Node::seq();
  for (const auto& f : s.fields) {
    props.set(f.jsonName, fieldSchema(pkg, f));
  }
  std::sort(props.map.begin(), props.map.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> required;
  for (const auto& f : s.fields) {
    if (f.required()) {
      required.push_back(f.jsonName);
    }
  }
  std::sort(required.begin(), required.end());
  for (const auto& name : required) {
    req.push(Node::raw(name));
  }
  n.set("properties", props);
  if (!req.list.empty()) {
    n.set("required", req);
  }
  n.set("type", Node::raw("object"));
  addRules(n, s.rules);
  return n;
}

void stripRules(Node& n) {
  std::erase_if(n.map, [](const Entry& e) { return e.first == "x-kubernetes-validations"; });
  for (auto& e : n.map) {
    stripRules(e.second);
  }
  for (auto& item : n.list) {
    stripRules(item);
  }
}

}  // namespace

Files emitCrds(const Package& pkg, const std::string& dir) {
  Files files;
  for (const Struct* s : pkg.roots()) {
    const Resource& r = *s->resource;
    Node crd;
    crd.set("apiVersion", Node::raw("apiextensions.k8s.io/v1"));
    crd.set("kind", Node::raw("CustomResourceDefinition"));
    Node meta;
    meta.set("name", Node::raw(r.plural + "." + pkg.group));
    crd.set("metadata", meta);
    Node spec;
    spec.set("group", Node::raw(pkg.group));
    Node names;
    if (!r.categories.empty()) {
      Node cats = Node::seq();
      for (const auto& c : r.categories) {
        cats.push(Node::str(c));
      }
      names.set("categories", cats);
    }
    names.set("kind", Node::raw(r.kind));
    names.set("listKind", Node::raw(r.kind + "List"));
    names.set("plural", Node::raw(r.plural));
    if (!r.shortNames.empty()) {
      Node shorts = Node::seq();
      for (const auto& c : r.shortNames) {
        shorts.push(Node::str(c));
      }
      names.set("shortNames", shorts);
    }
    names.set("singular", Node::raw(r.singular));
    spec.set("names", names);
    spec.set("scope", Node::raw(r.namespaced ? "Namespaced" : "Cluster"));
    Node versions = Node::seq();
    Node v;
    if (!r.printColumns.empty()) {
      Node cols = Node::seq();
      for (const auto& c : r.printColumns) {
        Node col;
        col.set("jsonPath", Node::str(c.jsonPath));
        col.set("name", Node::str(c.name));
        if (c.priority > 0) {
          col.set("priority", Node::raw(std::to_string(c.priority)));
        }
        col.set("type", Node::raw(c.type));
        cols.push(col);
      }
      v.set("additionalPrinterColumns", cols);
    }
    v.set("name", Node::raw(pkg.version));
    Node schema;
    schema.set("openAPIV3Schema", structSchema(pkg, *s));
    v.set("schema", schema);
    v.set("served", Node::raw("true"));
    v.set("storage", Node::raw("true"));
    if (r.statusSubresource) {
      Node sub;
      sub.set("status", Node());
      v.set("subresources", sub);
    }
    versions.push(v);
    spec.set("versions", versions);
    crd.set("spec", spec);
    const std::string name = pkg.group + "_" + r.plural + ".yaml";
    std::ostringstream cel;
    cel << banner(pkg, "#")
        << "# With CEL rules (x-kubernetes-validations): for API servers >= 1.25.\n---\n";
    write(cel, crd, 0);
    files[dir + "/cel/" + name] = cel.str();
    // Without them for every server: kubectl validates a CRD against the server's OpenAPI, and
    // before 1.23 that has no x-kubernetes-validations, so `kubectl apply` would refuse it.
    stripRules(crd);
    std::ostringstream plain;
    plain << banner(pkg, "#")
          << "# Without CEL rules, for any API server (the operator enforces them itself);\n"
          << "# on API servers >= 1.25 apply ./cel/ instead for admission-time checks.\n---\n";
    write(plain, crd, 0);
    files[dir + "/" + name] = plain.str();
  }
  return files;
}

}  // namespace egress::codegen
