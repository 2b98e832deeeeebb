#include "hack/codegen/model.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>
#include <regex>
#include <set>

namespace egress::codegen {

std::string TypeRef::cpp() const {
  switch (kind) {
    case Kind::String:
      return "std::string";
    case Kind::Bool:
      return "bool";
    case Kind::Int32:
      return "int32_t";
    case Kind::Int64:
      return "int64_t";
    case Kind::StringMap:
      return "meta::StringMap";
    case Kind::Quantity:
      return "meta::Quantity";
    case Kind::QuantityMap:
      return "meta::QuantityMap";
    case Kind::ObjectMeta:
      return "meta::ObjectMeta";
    case Kind::LabelSelector:
      return "meta::LabelSelector";
    case Kind::Condition:
      return "meta::Condition";
    case Kind::Struct:
      return name;
    case Kind::Optional:
      return "std::optional<" + elem->cpp() + ">";
    case Kind::Vector:
      return "std::vector<" + elem->cpp() + ">";
  }
  return "";
}

namespace {

using K = TypeRef::Kind;

template <class M>
const Marker* findMarker(const M& markers, const std::string& name) {
  for (const auto& m : markers) {
    if (m.name == name) {
      return &m;
    }
  }
  return nullptr;
}

std::vector<std::string> splitList(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) {
    out.push_back(cur);
  }
  return out;
}

std::optional<int64_t> parseInt(const std::string& s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
    return std::nullopt;
  }
  return v;
}

bool isLowerAlnum(const std::string& s) {
  if (s.empty() || std::islower(static_cast<unsigned char>(s[0])) == 0) {
    return false;
  }
  for (char c : s) {
    if (std::islower(static_cast<unsigned char>(c)) == 0 &&
        std::isdigit(static_cast<unsigned char>(c)) == 0) {
      return false;
    }
  }
  return true;
}

// Where a marker may stand.
const std::set<std::string>& structOnlyMarkers() {
  static const std::set<std::string> kStruct = {
      "genclient",
      "genclient:nonNamespaced",
      "kubebuilder:resource",
      "kubebuilder:subresource:status",
      "kubebuilder:printcolumn",
  };
  return kStruct;
}

// Markers that may be given more than once.
bool repeatable(const std::string& name) {
  return name == "XValidation" || name == "listMapKey" || name == "kubebuilder:printcolumn";
}

const std::map<std::string, Format>& formats() {
  static const std::map<std::string, Format> kFormats = {
      {"cidr", Format::CIDR}, {"ipv4", Format::IPv4},           {"ipv6", Format::IPv6},
      {"ip", Format::IP},     {"ip-or-cidr", Format::IPOrCIDR},
  };
  return kFormats;
}

// The CEL rule of +XValidation, its arguments checked.
std::variant<MarkerArgs, MarkerError> celRule(const Marker& m) {
  auto args = splitMarkerArgs(m.value);
  if (auto* err = std::get_if<std::string>(&args)) {
    return MarkerError{m.line, *err + " in +XValidation"};
  }
  bool hasRule = false;
  for (const auto& [k, v] : std::get<MarkerArgs>(args)) {
    static const std::set<std::string> kKnown = {"rule", "message", "messageExpression", "reason",
                                                 "fieldPath"};
    if (kKnown.count(k) == 0) {
      return MarkerError{m.line, "unknown +XValidation argument " + k};
    }
    hasRule = hasRule || (k == "rule" && !v.empty());
  }
  if (!hasRule) {
    return MarkerError{m.line, "+XValidation needs a rule"};
  }
  return std::get<MarkerArgs>(args);
}

// Resolves the markers of one field. `pkg` is complete (list map keys name fields of other
// structs).
class FieldResolver {
 public:
  FieldResolver(const Package& pkg, Field& f) : pkg_(pkg), f_(f), t_(f.type.base()) {}

  std::optional<MarkerError> run() {
    std::set<std::string> seen;
    for (const Marker& m : f_.markers) {
      if (!seen.insert(m.name).second && !repeatable(m.name)) {
        return MarkerError{m.line, "+" + m.name + " given twice"};
      }
      if (auto err = apply(m)) {
        return err;
      }
    }
    if (f_.marker("required") != nullptr && f_.marker("optional") != nullptr) {
      return MarkerError{f_.marker("optional")->line, "a field is +required or +optional"};
    }
    if (auto err = checkList()) {
      return err;
    }
    return checkDefault();
  }

 private:
  MarkerError wrongType(const Marker& m, const std::string& what) const {
    return {m.line, "+" + m.name + " applies to " + what + ", not " + f_.type.cpp()};
  }

  std::optional<MarkerError> apply(const Marker& m) {
    if (structOnlyMarkers().count(m.name) != 0) {
      return MarkerError{m.line, "+" + m.name + " belongs on a struct, not a field"};
    }
    if (m.name == "required" || m.name == "optional") {
      return std::nullopt;
    }
    if (m.name == "emitzero") {
      if (t_.kind != K::Int32 && t_.kind != K::Int64 && t_.kind != K::Bool) {
        return wrongType(m, "an integer or a bool");
      }
      return std::nullopt;
    }
    if (m.name == "XValidation") {
      auto rule = celRule(m);
      if (auto* err = std::get_if<MarkerError>(&rule)) {
        return *err;
      }
      f_.rules.push_back(std::get<MarkerArgs>(rule));
      return std::nullopt;
    }
    if (m.name == "kubebuilder:default") {
      defaultMarker_ = &m;
      return std::nullopt;
    }
    if (m.name == "listType" || m.name == "listMapKey") {
      return listMarker(m);
    }
    const bool item = m.name.starts_with("items:");
    const std::string name = item ? m.name.substr(6) : m.name;
    if (name == "MinItems" || name == "MaxItems") {
      if (t_.kind != K::Vector) {
        return wrongType(m, "a list");
      }
      return count(m, name == "MinItems" ? f_.constraints.minItems : f_.constraints.maxItems,
                   name == "MinItems" ? f_.constraints.maxItems : f_.constraints.minItems,
                   name == "MinItems" ? "MaxItems" : "MinItems");
    }
    // The value the check is on: the field's own, or each item of a list or value of a map.
    static const TypeRef kString;
    const TypeRef* value = &t_;
    if (item) {
      value = t_.kind == K::Vector ? t_.elem.get() : t_.kind == K::StringMap ? &kString : nullptr;
    }
    Constraints& c = item ? f_.items : f_.constraints;
    if (name == "Minimum" || name == "Maximum") {
      if (value == nullptr || !value->isInteger()) {
        return wrongType(m, item ? "the items of a list of integers" : "an integer");
      }
      return bound(m, *value, name == "Minimum", c);
    }
    if (value == nullptr || value->kind != K::String) {
      return wrongType(m, item ? "the items of a list or map of strings" : "a string");
    }
    if (name == "MinLength" || name == "MaxLength") {
      return count(m, name == "MinLength" ? c.minLength : c.maxLength,
                   name == "MinLength" ? c.maxLength : c.minLength,
                   name == "MinLength" ? "MaxLength" : "MinLength");
    }
    if (name == "Pattern") {
      try {
        (void)std::regex(m.value, std::regex::ECMAScript);
      } catch (const std::regex_error&) {
        return MarkerError{m.line,
                           "+" + m.name + "=" + m.value + " is not a valid regular expression"};
      }
      c.pattern = m.value;
      return std::nullopt;
    }
    if (name == "Enum") {
      std::string rest = m.value;
      for (size_t semi = 0; semi != std::string::npos;) {
        semi = rest.find(';');
        const std::string v = rest.substr(0, semi);
        if (v.empty()) {
          return MarkerError{m.line, "+" + m.name + "=" + m.value + " has an empty value"};
        }
        c.enumValues.push_back(v);
        rest = semi == std::string::npos ? "" : rest.substr(semi + 1);
      }
      return std::nullopt;
    }
    // Format (the parser knows no other marker).
    const auto it = formats().find(m.value);
    if (it == formats().end()) {
      return MarkerError{m.line,
                         "unknown Format " + m.value + " (cidr, ipv4, ipv6, ip, ip-or-cidr)"};
    }
    c.format = it->second;
    return std::nullopt;
  }

  // MinLength/MaxLength/MinItems/MaxItems into `out`; `other` is its opposite bound.
  static std::optional<MarkerError> count(const Marker& m, std::optional<int64_t>& out,
                                          const std::optional<int64_t>& other,
                                          const char* otherName) {
    const auto v = parseInt(m.value);
    if (!v || *v < 0) {
      return MarkerError{m.line, "+" + m.name + "=" + m.value + " is not a non-negative integer"};
    }
    out = v;
    return order(m, *v, m.name.find("Min") != std::string::npos, other, otherName);
  }

  // Minimum/Maximum of an integer of type `t`.
  static std::optional<MarkerError> bound(const Marker& m, const TypeRef& t, bool min,
                                          Constraints& c) {
    const auto v = parseInt(m.value);
    if (!v) {
      return MarkerError{m.line, "+" + m.name + "=" + m.value + " is not an integer"};
    }
    if (t.kind == K::Int32 &&
        (*v < std::numeric_limits<int32_t>::min() || *v > std::numeric_limits<int32_t>::max())) {
      return MarkerError{m.line, "+" + m.name + "=" + m.value + " is out of range for int32_t"};
    }
    (min ? c.minimum : c.maximum) = v;
    return order(m, *v, min, min ? c.maximum : c.minimum, min ? "Maximum" : "Minimum");
  }

  // A lower bound above the upper one (or the reverse) can never be met.
  static std::optional<MarkerError> order(const Marker& m, int64_t v, bool isMin,
                                          const std::optional<int64_t>& other,
                                          const char* otherName) {
    if (other && (isMin ? v > *other : v < *other)) {
      return MarkerError{m.line, "+" + m.name + "=" + m.value +
                                     (isMin ? " is above +" : " is below +") + otherName + "=" +
                                     std::to_string(*other)};
    }
    return std::nullopt;
  }

  std::optional<MarkerError> listMarker(const Marker& m) {
    if (t_.kind != K::Vector) {
      return wrongType(m, "a list");
    }
    if (m.name == "listMapKey") {
      f_.listMapKeys.push_back(m.value);
      mapKeyMarkers_.push_back(&m);
      return std::nullopt;
    }
    listTypeMarker_ = &m;
    if (m.value == "atomic") {
      f_.listType = ListType::Atomic;
    } else if (m.value == "set") {
      if (!t_.elem->isScalar()) {
        return MarkerError{m.line, "+listType=set needs a list of strings, integers or booleans"};
      }
      f_.listType = ListType::Set;
    } else if (m.value == "map") {
      if (t_.elem->kind != K::Struct && t_.elem->kind != K::Condition) {
        return MarkerError{m.line, "+listType=map needs a list of objects"};
      }
      f_.listType = ListType::Map;
    } else {
      return MarkerError{m.line, "+listType=" + m.value + ": one of atomic, set, map"};
    }
    return std::nullopt;
  }

  // A map list's keys: scalar fields every item has (required or defaulted, as the API server
  // demands).
  std::optional<MarkerError> checkList() const {
    if (!mapKeyMarkers_.empty() && f_.listType != ListType::Map) {
      return MarkerError{mapKeyMarkers_[0]->line, "+listMapKey needs +listType=map"};
    }
    if (f_.listType == ListType::Map && mapKeyMarkers_.empty()) {
      return MarkerError{listTypeMarker_->line, "+listType=map needs a +listMapKey"};
    }
    for (const Marker* m : mapKeyMarkers_) {
      bool ok = false;
      if (t_.elem->kind == K::Condition) {
        ok = m->value == "type" || m->value == "status";
      } else if (const Field* key = pkg_.find(t_.elem->name)->field(m->value)) {
        ok = key->type.isScalar() && (key->required() || key->marker("kubebuilder:default"));
      }
      if (!ok) {
        return MarkerError{
            m->line, "+listMapKey=" + m->value + " is not a required field of " + t_.elem->cpp()};
      }
    }
    return std::nullopt;
  }

  std::optional<MarkerError> checkDefault() {
    if (defaultMarker_ == nullptr) {
      return std::nullopt;
    }
    const Marker& m = *defaultMarker_;
    const std::string what = "+kubebuilder:default=" + m.value;
    const Constraints& c = f_.constraints;
    Default d{m.value, false};
    if (t_.kind == K::String) {
      d.isString = true;
      if (d.text.size() >= 2 && d.text.front() == '"' && d.text.back() == '"') {
        d.text = d.text.substr(1, d.text.size() - 2);
      }
      if (!c.enumValues.empty() &&
          std::find(c.enumValues.begin(), c.enumValues.end(), d.text) == c.enumValues.end()) {
        return MarkerError{m.line, what + " is not one of the +Enum values"};
      }
    } else if (t_.isInteger()) {
      const auto v = parseInt(m.value);
      if (!v || (t_.kind == K::Int32 && (*v < std::numeric_limits<int32_t>::min() ||
                                         *v > std::numeric_limits<int32_t>::max()))) {
        return MarkerError{m.line, what + " is not an " + t_.cpp()};
      }
      if ((c.minimum && *v < *c.minimum) || (c.maximum && *v > *c.maximum)) {
        return MarkerError{m.line, what + " is outside +Minimum/+Maximum"};
      }
    } else if (t_.kind == K::Bool) {
      if (m.value != "true" && m.value != "false") {
        return MarkerError{m.line, what + " is not a bool"};
      }
    } else if (t_.kind == K::Quantity) {
      return MarkerError{m.line, what + ": a meta::Quantity takes no default"};
    } else if (m.value != (t_.kind == K::Vector ? "[]" : "{}")) {
      return MarkerError{m.line, what + ": a " + t_.cpp() + " defaults to " +
                                     (t_.kind == K::Vector ? "[]" : "{}") + " only"};
    }
    f_.defaultValue = d;
    return std::nullopt;
  }

  const Package& pkg_;
  Field& f_;
  const TypeRef& t_;
  const Marker* defaultMarker_ = nullptr;
  const Marker* listTypeMarker_ = nullptr;
  std::vector<const Marker*> mapKeyMarkers_;
};

// The resource facts of a +genclient struct.
std::variant<Resource, MarkerError> resourceOf(const Struct& s) {
  Resource r;
  r.kind = s.name;
  r.singular = s.name;
  for (auto& c : r.singular) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  r.namespaced = s.marker("genclient:nonNamespaced") == nullptr;
  r.statusSubresource = s.marker("kubebuilder:subresource:status") != nullptr;
  const Field* meta = s.field("metadata");
  if (meta == nullptr || meta->type.kind != K::ObjectMeta) {
    return MarkerError{s.line,
                       s.name + " has +genclient but no `meta::ObjectMeta metadata;` field"};
  }
  const Marker* res = s.marker("kubebuilder:resource");
  if (res == nullptr) {
    return MarkerError{s.line, s.name + " has +genclient but no +kubebuilder:resource marker"};
  }
  auto args = splitMarkerArgs(res->value);
  if (auto* err = std::get_if<std::string>(&args)) {
    return MarkerError{res->line, *err + " in +kubebuilder:resource"};
  }
  std::optional<std::string> plural;
  for (const auto& [k, v] : std::get<MarkerArgs>(args)) {
    if (k == "scope") {
      if (v != "Cluster" && v != "Namespaced") {
        return MarkerError{res->line, "scope must be Cluster or Namespaced, not " + v};
      }
      if ((v == "Cluster") == r.namespaced) {
        return MarkerError{res->line, "scope=" + v + " disagrees with +genclient:nonNamespaced"};
      }
    } else if (k == "shortName") {
      r.shortNames = splitList(v, ';');
    } else if (k == "categories") {
      r.categories = splitList(v, ';');
    } else if (k == "path" || k == "plural" || k == "singular") {
      // kubebuilder's names where English rules fail (path is kubebuilder's, plural our synonym).
      if (!isLowerAlnum(v)) {
        return MarkerError{res->line, "+kubebuilder:resource:" + k + "=" + v +
                                          " must be lower-case letters and digits"};
      }
      if (k == "singular") {
        r.singular = v;
      } else if (plural && *plural != v) {
        return MarkerError{res->line, "path=" + *plural + " and plural=" + v + " disagree"};
      } else {
        plural = v;
      }
    } else {
      return MarkerError{res->line, "unknown +kubebuilder:resource argument " + k};
    }
  }
  r.plural = plural ? *plural : pluralize(r.singular);
  // The method keeps the kind's capitals for as long as it agrees with the plural:
  // IPAMPool/ipampools -> ipamPools, EgressGatewayPolicy/...policies -> egressGatewayPolicies,
  // Mouse/mice -> mice.
  const std::string camel = lowerCamel(s.name);
  size_t same = 0;
  while (same < camel.size() && same < r.plural.size() &&
         std::tolower(static_cast<unsigned char>(camel[same])) == r.plural[same]) {
    ++same;
  }
  r.accessor = camel.substr(0, same) + r.plural.substr(same);
  for (const Marker* m : s.markersNamed("kubebuilder:printcolumn")) {
    auto cargs = splitMarkerArgs(m->value);
    if (auto* err = std::get_if<std::string>(&cargs)) {
      return MarkerError{m->line, *err + " in +kubebuilder:printcolumn"};
    }
    PrintColumn c;
    for (const auto& [k, v] : std::get<MarkerArgs>(cargs)) {
      if (k == "name") {
        c.name = v;
      } else if (k == "type") {
        c.type = v;
      } else if (k == "JSONPath") {
        c.jsonPath = v;
      } else if (k == "priority") {
        if (v.empty() || v.size() > 2 || !std::all_of(v.begin(), v.end(), ::isdigit)) {
          return MarkerError{m->line, "printcolumn priority " + v + ": a number from 0 to 99"};
        }
        c.priority = std::stoi(v);
      } else {
        return MarkerError{m->line, "unknown +kubebuilder:printcolumn argument " + k};
      }
    }
    if (c.name.empty() || c.type.empty() || c.jsonPath.empty()) {
      return MarkerError{m->line, "a printcolumn needs name, type and JSONPath"};
    }
    static const std::set<std::string> kTypes = {"integer", "number", "string", "boolean", "date"};
    if (kTypes.count(c.type) == 0) {
      return MarkerError{m->line, "printcolumn type " + c.type +
                                      ": one of integer, number, string, boolean, date"};
    }
    r.printColumns.push_back(c);
  }
  return r;
}

std::optional<MarkerError> resolveStruct(Struct& s) {
  for (const Marker& m : s.markers) {
    if (structOnlyMarkers().count(m.name) == 0 && m.name != "XValidation") {
      return MarkerError{m.line, "+" + m.name + " belongs on a field, not a struct"};
    }
    if (m.name == "XValidation") {
      auto rule = celRule(m);
      if (auto* err = std::get_if<MarkerError>(&rule)) {
        return *err;
      }
      s.rules.push_back(std::get<MarkerArgs>(rule));
    } else if (m.name != "genclient" && !s.isRoot()) {
      return MarkerError{m.line, "+" + m.name + " needs +genclient"};
    }
  }
  if (s.isRoot()) {
    auto r = resourceOf(s);
    if (auto* err = std::get_if<MarkerError>(&r)) {
      return *err;
    }
    s.resource = std::get<Resource>(r);
  }
  return std::nullopt;
}

}  // namespace

bool Constraints::empty() const {
  return !minLength && !maxLength && !pattern && enumValues.empty() && !format && !minimum &&
         !maximum && !minItems && !maxItems;
}

bool Field::emitsZero() const {
  return marker("emitzero") != nullptr;
}

bool Field::required() const {
  return marker("required") != nullptr;
}
const Marker* Field::marker(const std::string& name) const {
  return findMarker(markers, name);
}

bool Struct::isRoot() const {
  return marker("genclient") != nullptr;
}
const Marker* Struct::marker(const std::string& name) const {
  return findMarker(markers, name);
}
std::vector<const Marker*> Struct::markersNamed(const std::string& name) const {
  std::vector<const Marker*> out;
  for (const auto& m : markers) {
    if (m.name == name) {
      out.push_back(&m);
    }
  }
  return out;
}
const Field* Struct::field(const std::string& jsonName) const {
  for (const auto& f : fields) {
    if (f.jsonName == jsonName) {
      return &f;
    }
  }
  return nullptr;
}

const Struct* Package::find(const std::string& name) const {
  for (const auto& s : structs) {
    if (s.name == name) {
      return &s;
    }
  }
  return nullptr;
}

std::vector<const Struct*> Package::roots() const {
  std::vector<const Struct*> out;
  for (const auto& s : structs) {
    if (s.isRoot()) {
      out.push_back(&s);
    }
  }
  return out;
}

std::optional<MarkerError> resolveMarkers(Package& pkg) {
  for (auto& s : pkg.structs) {
    if (auto err = resolveStruct(s)) {
      return err;
    }
    for (auto& f : s.fields) {
      if (auto err = FieldResolver(pkg, f).run()) {
        return err;
      }
    }
  }
  return std::nullopt;
}

std::variant<MarkerArgs, std::string> splitMarkerArgs(const std::string& value) {
  MarkerArgs out;
  size_t i = 0;
  while (i < value.size()) {
    const size_t eq = value.find('=', i);
    const size_t comma = value.find(',', i);
    if (eq == std::string::npos || (comma != std::string::npos && comma < eq)) {
      // A bare flag (`key`), no value.
      const size_t end = comma == std::string::npos ? value.size() : comma;
      out.emplace_back(value.substr(i, end - i), "");
      i = end + 1;
      continue;
    }
    const std::string key = value.substr(i, eq - i);
    i = eq + 1;
    if (i < value.size() && (value[i] == '"' || value[i] == '`')) {
      const char quote = value[i];
      std::string v;
      size_t j = i + 1;
      for (; j < value.size() && value[j] != quote; ++j) {
        if (quote == '"' && value[j] == '\\' && j + 1 < value.size()) {
          ++j;
          const char e = value[j];
          v += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        } else {
          v += value[j];
        }
      }
      if (j == value.size()) {
        return std::string("unterminated ") + quote;
      }
      if (j + 1 < value.size() && value[j + 1] != ',') {
        return "expected , after the quoted value of " + key;
      }
      out.emplace_back(key, v);
      i = j + 2;
      continue;
    }
    // Unquoted: up to the next comma followed by `identifier=` (not `==`).
    size_t end = value.size();
    for (size_t c = value.find(',', i); c != std::string::npos; c = value.find(',', c + 1)) {
      size_t j = c + 1;
      while (j < value.size() && std::isalpha(static_cast<unsigned char>(value[j])) != 0) {
        ++j;
      }
      if (j > c + 1 && j < value.size() && value[j] == '=' &&
          (j + 1 == value.size() || value[j + 1] != '=')) {
        end = c;
        break;
      }
    }
    out.emplace_back(key, value.substr(i, end - i));
    i = end + 1;
  }
  return out;
}

std::string pluralize(const std::string& name) {
  if (name.ends_with("s") || name.ends_with("x") || name.ends_with("z") || name.ends_with("ch") ||
      name.ends_with("sh")) {
    return name + "es";
  }
  if (name.size() >= 2 && name.ends_with("y") &&
      std::string("aeiou").find(name[name.size() - 2]) == std::string::npos) {
    return name.substr(0, name.size() - 1) + "ies";
  }
  return name + "s";
}

std::string lowerCamel(const std::string& name) {
  // Count the leading capitals; if more than one, the last starts the next word (IPAMPool:
  // "IPAM" + "Pool" -> "ipamPool").
  size_t caps = 0;
  while (caps < name.size() && std::isupper(static_cast<unsigned char>(name[caps])) != 0) {
    ++caps;
  }
  size_t lower = caps <= 1 ? caps : (caps == name.size() ? caps : caps - 1);
  std::string out = name;
  for (size_t i = 0; i < lower; ++i) {
    out[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(out[i])));
  }
  return out;
}

}  // namespace egress::codegen
