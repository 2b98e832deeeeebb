#include "hack/codegen/model.h"

#include <cctype>

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

template <class M>
const Marker* findMarker(const M& markers, const std::string& name) {
  for (const auto& m : markers) {
    if (m.name == name) {
      return &m;
    }
  }
  return nullptr;
}

template <class M>
std::vector<const Marker*> allMarkers(const M& markers, const std::string& name) {
  std::vector<const Marker*> out;
  for (const auto& m : markers) {
    if (m.name == name) {
      out.push_back(&m);
    }
  }
  return out;
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

}  // namespace

bool Field::required() const {
  return marker("required") != nullptr;
}
const Marker* Field::marker(const std::string& name) const {
  return findMarker(markers, name);
}
std::vector<const Marker*> Field::markersNamed(const std::string& name) const {
  return allMarkers(markers, name);
}

bool Struct::isRoot() const {
  return marker("genclient") != nullptr;
}
const Marker* Struct::marker(const std::string& name) const {
  return findMarker(markers, name);
}
std::vector<const Marker*> Struct::markersNamed(const std::string& name) const {
  return allMarkers(markers, name);
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

std::vector<std::pair<std::string, std::string>> splitMarkerArgs(const std::string& value) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t start = 0;
  while (start < value.size()) {
    // The next comma followed by `identifier=`.
    size_t end = value.size();
    for (size_t i = value.find(',', start); i != std::string::npos; i = value.find(',', i + 1)) {
      size_t j = i + 1;
      while (j < value.size() && std::isalpha(static_cast<unsigned char>(value[j])) != 0) {
        ++j;
      }
      if (j > i + 1 && j < value.size() && value[j] == '=') {
        end = i;
        break;
      }
    }
    const std::string part = value.substr(start, end - start);
    const auto eq = part.find('=');
    if (eq == std::string::npos) {
      out.emplace_back(part, "");
    } else {
      out.emplace_back(part.substr(0, eq), part.substr(eq + 1));
    }
    start = end + 1;
  }
  return out;
}

std::variant<Resource, ResourceError> resourceOf(const Struct& s) {
  Resource r;
  r.kind = s.name;
  r.singular = s.name;
  for (auto& c : r.singular) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  r.plural = pluralize(r.singular);
  r.namespaced = s.marker("genclient:nonNamespaced") == nullptr;
  r.statusSubresource = s.marker("kubebuilder:subresource:status") != nullptr;
  const Marker* res = s.marker("kubebuilder:resource");
  if (res == nullptr) {
    return ResourceError{"line " + std::to_string(s.line) + ": " + s.name +
                         " has +genclient but no +kubebuilder:resource marker"};
  }
  for (const auto& [k, v] : splitMarkerArgs(res->value)) {
    if (k == "scope") {
      if (v != "Cluster" && v != "Namespaced") {
        return ResourceError{"line " + std::to_string(res->line) +
                             ": scope must be Cluster or Namespaced, not " + v};
      }
      if ((v == "Cluster") == r.namespaced) {
        return ResourceError{"line " + std::to_string(res->line) + ": scope=" + v +
                             " disagrees with +genclient:nonNamespaced"};
      }
    } else if (k == "shortName") {
      r.shortNames = splitList(v, ';');
    } else if (k == "categories") {
      r.categories = splitList(v, ';');
    } else if (k == "path") {
      r.plural = v;
    } else {
      return ResourceError{"line " + std::to_string(res->line) +
                           ": unknown +kubebuilder:resource argument " + k};
    }
  }
  for (const Marker* m : s.markersNamed("kubebuilder:printcolumn")) {
    PrintColumn c;
    for (const auto& [k, v] : splitMarkerArgs(m->value)) {
      if (k == "name") {
        c.name = v;
      } else if (k == "type") {
        c.type = v;
      } else if (k == "JSONPath") {
        c.jsonPath = v;
      } else {
        return ResourceError{"line " + std::to_string(m->line) +
                             ": unknown +kubebuilder:printcolumn argument " + k};
      }
    }
    if (c.name.empty() || c.type.empty() || c.jsonPath.empty()) {
      return ResourceError{"line " + std::to_string(m->line) +
                           ": a printcolumn needs name, type and JSONPath"};
    }
    r.printColumns.push_back(c);
  }
  return r;
}

std::string pluralize(const std::string& name) {
  return name.ends_with("y") ? name.substr(0, name.size() - 1) + "ies" : name + "s";
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
