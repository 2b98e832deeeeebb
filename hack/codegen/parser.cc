#include "hack/codegen/parser.h"

#include <set>
#include <sstream>

namespace egress::codegen {
namespace {

const std::set<std::string>& knownMarkers() {
  static const std::set<std::string> kKnown = {
      "groupName",
      "version",
      "genclient",
      "genclient:nonNamespaced",
      "required",
      "optional",
      "emitzero",
      "listType",
      "listMapKey",
      "kubebuilder:resource",
      "kubebuilder:subresource:status",
      "kubebuilder:printcolumn",
      "kubebuilder:default",
      "Minimum",
      "Maximum",
      "MinLength",
      "MaxLength",
      "MinItems",
      "MaxItems",
      "Pattern",
      "Enum",
      "Format",
      "XValidation",
      "items:Format",
      "items:MinLength",
      "items:MaxLength",
      "items:Pattern",
      "items:Enum",
      "items:Minimum",
      "items:Maximum",
  };
  return kKnown;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) {
    return "";
  }
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool isIdentifier(const std::string& s) {
  if (s.empty() || (std::isalpha(static_cast<unsigned char>(s[0])) == 0 && s[0] != '_')) {
    return false;
  }
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_') {
      return false;
    }
  }
  return true;
}

class Parser {
 public:
  Parser(std::string file, std::string includePath) : file_(std::move(file)) {
    pkg_.includePath = std::move(includePath);
  }

  std::variant<Package, ParseError> run(const std::string& text) {
    std::istringstream in(text);
    std::string raw;
    while (std::getline(in, raw)) {
      ++line_;
      if (!step(trim(raw))) {
        return ParseError{error_};
      }
    }
    if (current_) {
      return ParseError{where(current_->line) + "struct " + current_->name + " is not closed"};
    }
    if (pkg_.group.empty() || pkg_.version.empty()) {
      return ParseError{file_ + ": no +groupName or +version marker"};
    }
    if (pkg_.cppNamespace.empty()) {
      return ParseError{file_ + ": no `namespace ... {`"};
    }
    if (auto err = resolveMarkers(pkg_)) {
      return ParseError{where(err->line) + err->message};
    }
    return pkg_;
  }

 private:
  std::string where(int line) const { return file_ + ":" + std::to_string(line) + ": "; }

  bool fail(const std::string& msg) {
    error_ = where(line_) + msg;
    return false;
  }

  // Markers not followed by their struct or field would be silently lost.
  bool endComment(const std::string& by) {
    if (!markers_.empty()) {
      error_ = where(markers_[0].line) + "marker +" + markers_[0].name + " is followed by " + by +
               " and attaches to nothing";
      return false;
    }
    doc_.clear();
    return true;
  }

  bool step(const std::string& l) {
    if (l.empty()) {
      // A blank line ends a comment block: it documents nothing below it.
      return endComment("a blank line");
    }
    if (l.starts_with("//")) {
      return comment(trim(l.substr(2)));
    }
    if (l.starts_with("#")) {
      return true;  // #pragma, #include
    }
    if (!current_) {
      if (l.starts_with("namespace ") && l.ends_with("{")) {
        pkg_.cppNamespace = trim(l.substr(10, l.size() - 11));
        return endComment("`namespace`");
      }
      if (l.starts_with("}  // namespace") || l == "}") {
        return true;
      }
      if (l.starts_with("struct ") && l.ends_with("{")) {
        const std::string name = trim(l.substr(7, l.size() - 8));
        if (!isIdentifier(name)) {
          return fail("expected `struct Name {`");
        }
        if (pkg_.find(name) != nullptr) {
          return fail("struct " + name + " declared twice");
        }
        current_ = Struct{};
        current_->name = name;
        current_->line = line_;
        current_->doc = std::move(doc_);
        current_->markers = std::move(markers_);
        doc_.clear();
        markers_.clear();
        return true;
      }
      return fail("expected a comment, `namespace`, or `struct Name {`, got: " + l);
    }
    if (l == "};") {
      pkg_.structs.push_back(std::move(*current_));
      current_.reset();
      return endComment("`};`");
    }
    if (l.starts_with("}")) {
      return fail("struct " + current_->name + " must end with `};`, got: " + l);
    }
    if (l.find("operator==") != std::string::npos) {
      if (l != "bool operator==(const " + current_->name + "&) const = default;") {
        return fail("only a defaulted operator== may appear in a struct");
      }
      return true;
    }
    return field(l);
  }

  bool comment(const std::string& c) {
    if (c.starts_with("+")) {
      Marker m;
      m.line = line_;
      std::string body = c.substr(1);
      if (body.starts_with("kubebuilder:validation:")) {
        body = body.substr(23);
      }
      // Markers with arguments: `+kubebuilder:resource:scope=Cluster,shortName=ipp`.
      bool withArgs = false;
      for (const char* prefix :
           {"kubebuilder:resource:", "kubebuilder:printcolumn:", "XValidation:"}) {
        const std::string p = prefix;
        if (body.starts_with(p)) {
          m.name = p.substr(0, p.size() - 1);
          m.value = body.substr(p.size());
          withArgs = true;
        }
      }
      if (!withArgs) {
        const auto eq = body.find('=');
        m.name = eq == std::string::npos ? body : body.substr(0, eq);
        m.value = eq == std::string::npos ? "" : body.substr(eq + 1);
      }
      if (knownMarkers().count(m.name) == 0) {
        return fail("unknown marker +" + m.name);
      }
      if (m.name == "groupName") {
        pkg_.group = m.value;
      } else if (m.name == "version") {
        pkg_.version = m.value;
      } else {
        markers_.push_back(m);
      }
      return true;
    }
    if (c.starts_with("File:") || c.starts_with("----")) {
      return true;
    }
    // A marker that is not at the start of its line (a reflowed comment) would be silently lost.
    for (const char* m :
         {"+kubebuilder:", "+genclient", "+required", "+optional", "+emitzero", "+listType"}) {
      if (c.find(m) != std::string::npos && c.find('`') == std::string::npos) {
        return fail(std::string("marker ") + m + "... must start its own `// +` comment line");
      }
    }
    doc_.push_back(c);
    return true;
  }

  bool field(const std::string& l) {
    if (!l.ends_with(";")) {
      return fail("expected `Type name;`, got: " + l);
    }
    std::string decl = trim(l.substr(0, l.size() - 1));
    const auto eq = decl.find(" = ");
    if (eq != std::string::npos) {
      decl = trim(decl.substr(0, eq));  // the C++ default; the CRD default is +default
    }
    const auto sp = decl.rfind(' ');
    if (sp == std::string::npos) {
      return fail("expected `Type name;`, got: " + l);
    }
    Field f;
    f.cppName = decl.substr(sp + 1);
    if (!isIdentifier(f.cppName)) {
      return fail("bad field name '" + f.cppName + "'");
    }
    f.jsonName = f.cppName.ends_with("_") ? f.cppName.substr(0, f.cppName.size() - 1) : f.cppName;
    auto type = parseType(trim(decl.substr(0, sp)));
    if (!type) {
      return fail("unknown type '" + trim(decl.substr(0, sp)) +
                  "' (see the grammar in the types.h banner)");
    }
    // Declared above, as C++ needs (a struct cannot hold itself).
    for (const TypeRef* t = &*type; t != nullptr; t = t->elem.get()) {
      if (t->kind == TypeRef::Kind::Struct && pkg_.find(t->name) == nullptr) {
        return fail("unknown type '" + t->name + "' (declare the struct above its use)");
      }
    }
    f.type = *type;
    f.line = line_;
    f.doc = std::move(doc_);
    f.markers = std::move(markers_);
    doc_.clear();
    markers_.clear();
    if (f.required() && f.type.kind == TypeRef::Kind::Optional) {
      return fail("a std::optional field cannot be +required");
    }
    for (const auto& s : current_->fields) {
      if (s.jsonName == f.jsonName) {
        return fail("field " + f.jsonName + " declared twice");
      }
    }
    current_->fields.push_back(std::move(f));
    return true;
  }

  static std::optional<TypeRef> parseType(const std::string& t) {
    TypeRef r;
    using K = TypeRef::Kind;
    static const std::map<std::string, K> kSimple = {
        {"std::string", K::String},
        {"bool", K::Bool},
        {"int32_t", K::Int32},
        {"int64_t", K::Int64},
        {"meta::StringMap", K::StringMap},
        {"meta::Quantity", K::Quantity},
        {"meta::QuantityMap", K::QuantityMap},
        {"meta::ObjectMeta", K::ObjectMeta},
        {"meta::LabelSelector", K::LabelSelector},
        {"meta::Condition", K::Condition},
    };
    if (auto it = kSimple.find(t); it != kSimple.end()) {
      r.kind = it->second;
      return r;
    }
    for (const auto& [prefix, kind] :
         {std::pair<std::string, K>{"std::optional<", K::Optional}, {"std::vector<", K::Vector}}) {
      if (t.starts_with(prefix) && t.ends_with(">")) {
        auto inner = parseType(t.substr(prefix.size(), t.size() - prefix.size() - 1));
        if (!inner || inner->kind == K::Optional || inner->kind == K::ObjectMeta ||
            (kind == K::Optional && inner->kind == K::Vector) ||
            (kind == K::Vector && (inner->kind == K::Vector || inner->isMap()))) {
          return std::nullopt;
        }
        r.kind = kind;
        r.elem = std::make_shared<TypeRef>(*inner);
        return r;
      }
    }
    if (isIdentifier(t)) {
      r.kind = K::Struct;
      r.name = t;
      return r;
    }
    return std::nullopt;
  }

  std::string file_;
  Package pkg_;
  int line_ = 0;
  std::string error_;
  std::vector<std::string> doc_;
  std::vector<Marker> markers_;
  std::optional<Struct> current_;
};

}  // namespace

std::variant<Package, ParseError> parsePackage(const std::string& text, const std::string& file,
                                               const std::string& includePath) {
  return Parser(file, includePath).run(text);
}

}  // namespace egress::codegen
