#include <set>
#include <sstream>

#include "hack/codegen/emit.h"

namespace egress::codegen {
namespace {

using K = TypeRef::Kind;

// The decode/encode function of a non-scalar type.
std::string decoderOf(const TypeRef& t) {
  switch (t.kind) {
    case K::ObjectMeta:
      return "meta::decodeObjectMeta";
    case K::LabelSelector:
      return "meta::decodeLabelSelector";
    case K::Condition:
      return "meta::decodeCondition";
    case K::Struct:
      return "decode" + t.name;
    case K::Quantity:
      return "meta::decodeQuantity";
    case K::QuantityMap:
      return "meta::decodeQuantityMap";
    default:
      return "";
  }
}

std::string encoderOf(const TypeRef& t) {
  switch (t.kind) {
    case K::ObjectMeta:
      return "meta::encodeObjectMeta";
    case K::LabelSelector:
      return "meta::encodeLabelSelector";
    case K::Condition:
      return "meta::encodeCondition";
    case K::Struct:
      return "encode" + t.name;
    case K::Quantity:
      return "meta::encodeQuantity";
    case K::QuantityMap:
      return "meta::encodeQuantityMap";
    default:
      return "";
  }
}

bool isObjectKind(K k) {
  return k == K::ObjectMeta || k == K::LabelSelector || k == K::Condition || k == K::Struct;
}

// Read with FieldReader::object and a decode function: objects, and the quantity types (a JSON
// integer or string, a map of them), which FieldReader has no read() for.
bool hasDecoder(K k) {
  return isObjectKind(k) || k == K::Quantity || k == K::QuantityMap;
}

// The decoder of one item of a list of scalars other than strings (FieldReader reads lists of
// strings itself); its errors read as FieldReader's.
std::string itemDecoderOf(K kind) {
  switch (kind) {
    case K::Int32:
      return "decodeInt32Item";
    case K::Int64:
      return "decodeInt64Item";
    default:
      return "decodeBoolItem";
  }
}

// The item decoders `pkg` uses, in a file-local namespace (none if it uses none).
std::string itemDecoders(const Package& pkg) {
  std::set<K> used;
  for (const auto& s : pkg.structs) {
    for (const auto& f : s.fields) {
      if (f.type.kind == K::Vector && f.type.elem->isScalar() && f.type.elem->kind != K::String) {
        used.insert(f.type.elem->kind);
      }
    }
  }
  if (used.empty()) {
    return "";
  }
  std::ostringstream o;
  o << "namespace {\n\n";
  if (used.count(K::Int32) != 0) {
    o << "meta::Decoded<int32_t> decodeInt32Item(const rapidjson::Value& v) {\n"
      << "  if (!v.IsInt64()) {\n    return meta::DecodeError{\"\", \"expected integer\"};\n  }\n"
      << "  if (!v.IsInt()) {\n"
      << "    return meta::DecodeError{\"\", \"integer out of range for int32\"};\n  }\n"
      << "  return v.GetInt();\n}\n\n";
  }
  if (used.count(K::Int64) != 0) {
    o << "meta::Decoded<int64_t> decodeInt64Item(const rapidjson::Value& v) {\n"
      << "  if (!v.IsInt64()) {\n    return meta::DecodeError{\"\", \"expected integer\"};\n  }\n"
      << "  return v.GetInt64();\n}\n\n";
  }
  if (used.count(K::Bool) != 0) {
    o << "meta::Decoded<bool> decodeBoolItem(const rapidjson::Value& v) {\n"
      << "  if (!v.IsBool()) {\n    return meta::DecodeError{\"\", \"expected boolean\"};\n  }\n"
      << "  return v.GetBool();\n}\n\n";
  }
  o << "}  // namespace\n\n";
  return o.str();
}

void emitDecoder(std::ostringstream& o, const Struct& s) {
  o << "meta::Decoded<" << s.name << "> decode" << s.name << "(const rapidjson::Value& v) {\n";
  for (const auto& f : s.fields) {
    if (f.required() &&
        (isObjectKind(f.type.kind) || f.type.kind == K::Bool || f.type.isInteger())) {
      // Absent and empty decode alike for objects, integers and booleans, so a missing required
      // one (an empty podSelector selects everything; 0 may be a valid count) is caught here;
      // validate() catches an empty string or list.
      o << "  if (v.IsObject() && !v.HasMember(\"" << f.jsonName << "\")) {\n"
        << "    return meta::DecodeError{\"" << f.jsonName << "\", \"Required value\"};\n  }\n";
    }
  }
  o << "  meta::FieldReader r(v);\n  " << s.name << " out;\n";
  for (const auto& f : s.fields) {
    const TypeRef& t = f.type;
    const std::string key = "\"" + f.jsonName + "\"";
    const std::string member = "out." + f.cppName;
    if (t.isScalar() || t.kind == K::StringMap || (t.kind == K::Optional && t.elem->isScalar()) ||
        (t.kind == K::Vector && t.elem->kind == K::String)) {
      o << "  r.read(" << key << ", " << member << ");\n";
    } else if (t.kind == K::Optional && t.elem->kind == K::StringMap) {
      // Present (even empty) is kept apart from absent; FieldReader reads the map itself.
      o << "  if (v.IsObject() && v.HasMember(" << key << ") && !v[" << key << "].IsNull()) {\n"
        << "    r.read(" << key << ", " << member << ".emplace());\n  }\n";
    } else if (hasDecoder(t.kind)) {
      o << "  r.object(" << key << ", " << member << ", " << decoderOf(t) << ");\n";
    } else if (t.kind == K::Optional) {
      o << "  r.object(" << key << ", " << member << ", " << decoderOf(*t.elem) << ");\n";
    } else if (t.elem->isScalar()) {
      o << "  r.list(" << key << ", " << member << ", " << itemDecoderOf(t.elem->kind) << ");\n";
    } else {
      o << "  r.list(" << key << ", " << member << ", " << decoderOf(*t.elem) << ");\n";
    }
  }
  // std::move of an all-scalar struct is a no-op that clang-tidy flags.
  bool trivial = true;
  for (const auto& f : s.fields) {
    const TypeRef& t = f.type.base();
    trivial = trivial && (t.kind == K::Bool || t.kind == K::Int32 || t.kind == K::Int64);
  }
  o << (trivial ? "  return r.finish(out);\n}\n\n" : "  return r.finish(std::move(out));\n}\n\n");
}

void emitEncoder(std::ostringstream& o, const Package& pkg, const Struct& s) {
  o << "void encode" << s.name << "(meta::JsonWriter& w, const " << s.name << "& v) {\n"
    << "  w.StartObject();\n";
  if (s.isRoot()) {
    o << "  meta::writeField(w, \"apiVersion\", \"" << pkg.group << "/" << pkg.version << "\");\n"
      << "  meta::writeField(w, \"kind\", \"" << s.name << "\");\n";
  }
  for (const auto& f : s.fields) {
    const TypeRef& t = f.type;
    const std::string key = "\"" + f.jsonName + "\"";
    const std::string member = "v." + f.cppName;
    const bool req = f.required();
    const bool always = req || f.emitsZero();
    switch (t.kind) {
      case K::String:
      case K::Int64:
      case K::StringMap:
        o << "  meta::" << (always ? "writeField" : "writeFieldIfSet") << "(w, " << key << ", "
          << member << ");\n";
        break;
      case K::Int32:
        if (always) {
          o << "  meta::writeField(w, " << key << ", " << member << ");\n";
        } else {
          o << "  if (" << member << " != 0) {\n    meta::writeField(w, " << key << ", " << member
            << ");\n  }\n";
        }
        break;
      case K::Bool:
        if (always) {
          o << "  meta::writeField(w, " << key << ", " << member << ");\n";
        } else {
          o << "  if (" << member << ") {\n    meta::writeField(w, " << key << ", true);\n  }\n";
        }
        break;
      case K::ObjectMeta:
      case K::LabelSelector:
      case K::Condition:
      case K::Struct:
        o << "  meta::writeKey(w, " << key << ");\n  " << encoderOf(t) << "(w, " << member
          << ");\n";
        break;
      case K::Quantity:
      case K::QuantityMap:
        // omitempty, as for a string or a map: no text (no entries) is absent.
        if (req) {
          o << "  meta::writeKey(w, " << key << ");\n  " << encoderOf(t) << "(w, " << member
            << ");\n";
        } else {
          o << "  if (!" << member << ".empty()) {\n    meta::writeKey(w, " << key << ");\n    "
            << encoderOf(t) << "(w, " << member << ");\n  }\n";
        }
        break;
      case K::Optional:
        if (t.elem->isScalar() || t.elem->kind == K::StringMap) {
          o << "  meta::writeFieldIfSet(w, " << key << ", " << member << ");\n";
        } else {
          o << "  if (" << member << ") {\n    meta::writeKey(w, " << key << ");\n    "
            << encoderOf(*t.elem) << "(w, *" << member << ");\n  }\n";
        }
        break;
      case K::Vector:
        if (t.elem->kind == K::String) {
          o << "  meta::" << (req ? "writeField" : "writeFieldIfSet") << "(w, " << key << ", "
            << member << ");\n";
        } else if (t.elem->isScalar()) {
          const char* write = t.elem->kind == K::Int32   ? "Int"
                              : t.elem->kind == K::Int64 ? "Int64"
                                                         : "Bool";
          o << "  if (" << (req ? "true" : "!" + member + ".empty()") << ") {\n"
            << "    meta::writeKey(w, " << key << ");\n    w.StartArray();\n"
            << "    for (const " << t.elem->cpp() << " item : " << member << ") {\n      w."
            << write << "(item);\n    }\n    w.EndArray();\n  }\n";
        } else {
          o << "  if (" << (req ? "true" : "!" + member + ".empty()") << ") {\n"
            << "    meta::writeKey(w, " << key << ");\n    w.StartArray();\n"
            << "    for (const auto& item : " << member << ") {\n      " << encoderOf(*t.elem)
            << "(w, item);\n    }\n    w.EndArray();\n  }\n";
        }
        break;
    }
  }
  o << "  w.EndObject();\n}\n\n";
}

// ---- validation

std::string cppString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

// The checks of `c` on one value `expr` at path expression `path`, in validate()'s order. The
// CRD emitter writes the same Constraints as schema keywords (emit_crd.cc, applyConstraints);
// the parser has set only those that apply to the value's type.
void valueChecks(std::ostringstream& o, const Constraints& c, const std::string& expr,
                 const std::string& path, const std::string& indent) {
  auto check = [&](const std::string& failed, const std::string& message) {
    o << indent << "if (" << failed << ") {\n"
      << indent << "  errs.push_back({" << path << ", " << message << "});\n"
      << indent << "}\n";
  };
  if (c.minLength) {
    const std::string n = std::to_string(*c.minLength);
    check(expr + ".size() < " + n, "\"should be at least " + n + " chars long\"");
  }
  if (c.maxLength) {
    const std::string n = std::to_string(*c.maxLength);
    check(expr + ".size() > " + n, "\"may not be longer than " + n + "\"");
  }
  if (c.pattern) {
    const std::string p = cppString(*c.pattern);
    check("!std::regex_search(" + expr + ", pattern(" + p + "))",
          "\"\\\"\" + " + expr + " + \"\\\" should match '\" + std::string(" + p + ") + \"'\"");
  }
  if (!c.enumValues.empty()) {
    std::string cond;
    std::string supported;
    for (const auto& v : c.enumValues) {
      cond += (cond.empty() ? "" : " && ") + expr + " != " + cppString(v);
      supported += (supported.empty() ? "" : ", ") + std::string("\"") + v + "\"";
    }
    const std::string quoted = cppString(supported);
    check(cond, "\"Unsupported value: \\\"\" + " + expr +
                    " + \"\\\": supported values: " + quoted.substr(1));
  }
  if (c.format) {
    static const std::map<Format, std::pair<std::string, std::string>> kFormats = {
        {Format::CIDR, {"isCIDR", "a CIDR"}},
        {Format::IPv4, {"isIPv4", "an IPv4 address"}},
        {Format::IPv6, {"isIPv6", "an IPv6 address"}},
        {Format::IP, {"isIP", "an IP address"}},
        {Format::IPOrCIDR, {"isIPOrCIDR", "an IP address or CIDR"}},
    };
    const auto& [fn, what] = kFormats.at(*c.format);
    check("!validation::" + fn + "(" + expr + ")",
          "\"\\\"\" + " + expr + " + \"\\\" is not " + what + "\"");
  }
  if (c.minimum) {
    const std::string n = std::to_string(*c.minimum);
    check(expr + " < " + n,
          "std::to_string(" + expr + ") + \" should be greater than or equal to " + n + "\"");
  }
  if (c.maximum) {
    const std::string n = std::to_string(*c.maximum);
    check(expr + " > " + n,
          "std::to_string(" + expr + ") + \" should be less than or equal to " + n + "\"");
  }
}

// The check on one quantity `expr` (a meta::Quantity) at path expression `path`: it parses. The
// CRD emitter writes the same check as the int-or-string schema with controller-gen's quantity
// pattern (emit_crd.cc, quantitySchema); the parser is stricter than the pattern (no fractional
// exponents, no magnitude above 2^63-1), never looser.
void quantityCheck(std::ostringstream& o, const std::string& expr, const std::string& path,
                   const std::string& indent) {
  o << indent << "if (auto q = " << expr << ".value(); !q) {\n"
    << indent << "  errs.push_back({" << path << ", \"Invalid value: \\\"\" + " << expr
    << ".text() + \"\\\": \" + q.error()});\n"
    << indent << "}\n";
}

// A C++ string expression concatenating literal text and std::string expressions (adjacent
// literals merged, so the first `+` always has a std::string operand).
class Concat {
 public:
  Concat& text(const std::string& t) {
    if (!parts_.empty() && parts_.back().literal) {
      parts_.back().s += t;
    } else {
      parts_.push_back({true, t});
    }
    return *this;
  }
  Concat& expr(const std::string& e) {
    parts_.push_back({false, e});
    return *this;
  }
  // An item's value as the API server prints it: quoted strings, plain numbers and booleans.
  Concat& value(const TypeRef& t, const std::string& e) {
    if (t.kind == K::String) {
      return text("\"").expr(e).text("\"");
    }
    if (t.kind == K::Bool) {
      return expr("std::string(" + e + " ? \"true\" : \"false\")");
    }
    return expr("std::to_string(" + e + ")");
  }
  std::string str() const {
    std::string out;
    for (const auto& p : parts_) {
      out += (out.empty() ? "" : " + ") + (p.literal ? cppString(p.s) : p.s);
    }
    return out;
  }

 private:
  struct Part {
    bool literal;
    std::string s;
  };
  std::vector<Part> parts_;
};

// x-kubernetes-list-type set (no item twice) and map (no key twice), as the API server checks
// them: each repeat is reported at its index.
void uniquenessChecks(std::ostringstream& o, const Package& pkg, const Field& f,
                      const std::string& member, const std::string& itemPath) {
  const TypeRef& elem = *f.type.elem;
  std::vector<std::string> types;
  std::vector<std::string> keys;
  Concat shown;
  shown.text("Duplicate value: ");
  if (f.listType == ListType::Set) {
    types.push_back(elem.cpp());
    keys.push_back(member + "[i]");
    shown.value(elem, keys[0]);
  } else {
    shown.text("{");
    for (const auto& k : f.listMapKeys) {
      // meta::Condition's keys (type, status) are strings with the same names in C++.
      const Field* kf = elem.kind == K::Struct ? pkg.find(elem.name)->field(k) : nullptr;
      const TypeRef keyType = kf != nullptr ? kf->type : TypeRef{};
      keys.push_back(member + "[i]." + (kf != nullptr ? kf->cppName : k));
      types.push_back(keyType.cpp());
      shown.text((keys.size() > 1 ? ",\"" : "\"") + k + "\":").value(keyType, keys.back());
    }
    shown.text("}");
  }
  std::string seenType = types[0];
  std::string key = keys[0];
  if (keys.size() > 1) {
    seenType = "std::tuple<" + types[0];
    key = "std::make_tuple(" + keys[0];
    for (size_t i = 1; i < keys.size(); ++i) {
      seenType += ", " + types[i];
      key += ", " + keys[i];
    }
    seenType += ">";
    key += ")";
  }
  o << "  {\n    std::set<" << seenType << "> seen;\n"
    << "    for (size_t i = 0; i < " << member << ".size(); ++i) {\n"
    << "      if (!seen.insert(" << key << ").second) {\n"
    << "        errs.push_back({" << itemPath << ", " << shown.str() << "});\n"
    << "      }\n    }\n  }\n";
}

// Whether a map list has more than one key (its uniqueness check keeps tuples).
bool usesTuples(const Package& pkg) {
  for (const auto& s : pkg.structs) {
    for (const auto& f : s.fields) {
      if (f.listMapKeys.size() > 1) {
        return true;
      }
    }
  }
  return false;
}

// "Required value" when `member` (a string, quantity, list or map) is empty.
void requiredCheck(std::ostringstream& o, const std::string& member, const std::string& path) {
  o << "  if (" << member << ".empty()) {\n    errs.push_back({" << path
    << ", \"Required value\"});\n  }\n";
}

// Opens the block of a value that is absent when empty (omitempty): a required one that is
// empty is an error instead. The caller writes the checks and closes the block.
void ifSet(std::ostringstream& o, const Field& f, const std::string& member,
           const std::string& path) {
  if (f.required()) {
    o << "  if (" << member << ".empty()) {\n    errs.push_back({" << path
      << ", \"Required value\"});\n  } else {\n";
  } else {
    o << "  if (!" << member << ".empty()) {\n";
  }
}

void emitValidator(std::ostringstream& o, const Package& pkg, const Struct& s) {
  o << "void validate" << s.name << "Fields(const " << s.name
    << "& v, const std::string& path, validation::FieldErrors& errs) {\n";
  bool usesPath = false;
  std::ostringstream body;
  for (const auto& f : s.fields) {
    const TypeRef& t = f.type;
    const std::string member = "v." + f.cppName;
    const std::string p = "join(path, \"" + f.jsonName + "\")";
    std::ostringstream fo;
    switch (t.kind) {
      case K::String:
        // "" is absent (omitempty): only a required string must be set.
        ifSet(fo, f, member, p);
        valueChecks(fo, f.constraints, member, p, "    ");
        fo << "  }\n";
        break;
      case K::Int32:
      case K::Int64:
        // 0 is absent (omitempty), as "" is for a string: only a required integer is checked
        // when 0.
        if (f.required()) {
          valueChecks(fo, f.constraints, member, p, "  ");
        } else if (!f.constraints.empty()) {
          fo << "  if (" << member << " != 0) {\n";
          valueChecks(fo, f.constraints, member, p, "    ");
          fo << "  }\n";
        }
        break;
      case K::Optional:
        if (t.elem->isScalar() && !f.constraints.empty()) {
          fo << "  if (" << member << ") {\n";
          valueChecks(fo, f.constraints, "(*" + member + ")", p, "    ");
          fo << "  }\n";
        } else if (t.elem->kind == K::StringMap && !f.items.empty()) {
          fo << "  if (" << member << ") {\n    for (const auto& [key, value] : *" << member
             << ") {\n";
          valueChecks(fo, f.items, "value", p + " + \"[\" + key + \"]\"", "      ");
          fo << "    }\n  }\n";
        } else if (t.elem->kind == K::Struct) {
          fo << "  if (" << member << ") {\n    validate" << t.elem->name << "Fields(*" << member
             << ", " << p << ", errs);\n  }\n";
        } else if (t.elem->kind == K::Quantity) {
          fo << "  if (" << member << ") {\n";
          quantityCheck(fo, "(*" + member + ")", p, "    ");
          fo << "  }\n";
        } else if (t.elem->kind == K::QuantityMap) {
          fo << "  if (" << member << ") {\n    for (const auto& [key, value] : *" << member
             << ") {\n";
          quantityCheck(fo, "value", p + " + \"[\" + key + \"]\"", "      ");
          fo << "    }\n  }\n";
        }
        break;
      case K::Quantity:
        // No text is absent (omitempty), as "" is for a string.
        ifSet(fo, f, member, p);
        quantityCheck(fo, member, p, "    ");
        fo << "  }\n";
        break;
      case K::QuantityMap:
        if (f.required()) {
          requiredCheck(fo, member, p);
        }
        fo << "  for (const auto& [key, value] : " << member << ") {\n";
        quantityCheck(fo, "value", p + " + \"[\" + key + \"]\"", "    ");
        fo << "  }\n";
        break;
      case K::Struct:
        fo << "  validate" << t.name << "Fields(" << member << ", " << p << ", errs);\n";
        break;
      case K::StringMap:
        if (!f.items.empty()) {
          fo << "  for (const auto& [key, value] : " << member << ") {\n";
          valueChecks(fo, f.items, "value", p + " + \"[\" + key + \"]\"", "    ");
          fo << "  }\n";
        }
        break;
      case K::Vector: {
        if (f.required()) {
          requiredCheck(fo, member, p);
        }
        // An empty list is absent (omitempty): MinItems applies to a list that is set.
        if (f.constraints.minItems) {
          const std::string n = std::to_string(*f.constraints.minItems);
          fo << "  if (!" << member << ".empty() && " << member << ".size() < " << n
             << ") {\n    errs.push_back({" << p << ", \"should have at least " << n
             << " items\"});\n  }\n";
        }
        if (f.constraints.maxItems) {
          const std::string n = std::to_string(*f.constraints.maxItems);
          fo << "  if (" << member << ".size() > " << n << ") {\n    errs.push_back({" << p
             << ", \"must have at most " << n << " items\"});\n  }\n";
        }
        const std::string ip = p + " + \"[\" + std::to_string(i) + \"]\"";
        if (t.elem->isScalar()) {
          std::ostringstream items;
          valueChecks(items, f.items, member + "[i]", ip, "    ");
          if (!items.str().empty()) {
            fo << "  for (size_t i = 0; i < " << member << ".size(); ++i) {\n"
               << items.str() << "  }\n";
          }
        } else if (t.elem->kind == K::Struct) {
          fo << "  for (size_t i = 0; i < " << member << ".size(); ++i) {\n    validate"
             << t.elem->name << "Fields(" << member << "[i], " << ip << ", errs);\n  }\n";
        } else if (t.elem->kind == K::Quantity) {
          fo << "  for (size_t i = 0; i < " << member << ".size(); ++i) {\n";
          quantityCheck(fo, member + "[i]", ip, "    ");
          fo << "  }\n";
        }
        if (f.listType == ListType::Set || f.listType == ListType::Map) {
          uniquenessChecks(fo, pkg, f, member, ip);
        }
        break;
      }
      default:
        break;
    }
    if (!fo.str().empty()) {
      usesPath = true;
      body << fo.str();
    }
  }
  if (!usesPath) {
    o << "  (void)v;\n  (void)path;\n  (void)errs;\n";
  }
  o << body.str() << "}\n\n";
}

}  // namespace

Files emitCodecs(const Package& pkg, const std::string& dir) {
  Files files;
  std::ostringstream h;
  h << banner(pkg, "//")
    << "//\n// JSON decoders and encoders of the API types: decode errors name the field's path,\n"
       "// unknown fields are ignored, absent optional fields stay absent, int64 stays exact.\n"
       "#pragma once\n\n#include <rapidjson/document.h>\n\n"
       "#include \"pkg/apis/meta/decode.h\"\n#include \"pkg/apis/meta/encode.h\"\n#include \""
    << pkg.includePath << "\"\n\nnamespace " << pkg.cppNamespace << " {\n\n"
    << "inline constexpr char kGroup[] = \"" << pkg.group << "\";\n"
    << "inline constexpr char kVersion[] = \"" << pkg.version << "\";\n"
    << "inline constexpr char kApiVersion[] = \"" << pkg.group << "/" << pkg.version << "\";\n\n";
  for (const auto& s : pkg.structs) {
    h << "meta::Decoded<" << s.name << "> decode" << s.name << "(const rapidjson::Value& v);\n"
      << "void encode" << s.name << "(meta::JsonWriter& w, const " << s.name << "& v);\n";
  }
  h << "\n}  // namespace " << pkg.cppNamespace << "\n";
  files[dir + "/zz_generated.codec.h"] = h.str();

  std::ostringstream cc;
  cc << banner(pkg, "//") << "#include \"" << dir << "/zz_generated.codec.h\"\n\nnamespace "
     << pkg.cppNamespace << " {\n\n"
     << itemDecoders(pkg);
  for (const auto& s : pkg.structs) {
    emitDecoder(cc, s);
    emitEncoder(cc, pkg, s);
  }
  cc << "}  // namespace " << pkg.cppNamespace << "\n";
  files[dir + "/zz_generated.codec.cc"] = cc.str();

  std::ostringstream vh;
  vh << banner(pkg, "//")
     << "//\n// Field validation from the markers in types.h (the checks the CRD schema makes), "
        "for\n"
        "// validation.h to build validate() on. `path` is the JSON path of the value (\"\" for\n"
        "// an object).\n#pragma once\n\n#include <string>\n\n"
        "#include \"pkg/apis/validation/field_error.h\"\n#include \""
     << pkg.includePath << "\"\n\nnamespace " << pkg.cppNamespace << " {\n\n";
  for (const auto& s : pkg.structs) {
    vh << "void validate" << s.name << "Fields(const " << s.name
       << "& v, const std::string& path, validation::FieldErrors& errs);\n";
  }
  vh << "\n}  // namespace " << pkg.cppNamespace << "\n";
  files[dir + "/zz_generated.validation.h"] = vh.str();

  std::ostringstream vc;
  vc << banner(pkg, "//") << "#include \"" << dir << "/zz_generated.validation.h\"\n\n"
     << "#include <map>\n#include <mutex>\n#include <regex>\n#include <set>\n"
     << (usesTuples(pkg) ? "#include <tuple>\n" : "")
     << "\n#include "
        "\"pkg/apis/validation/formats.h\"\n\n"
     << "namespace " << pkg.cppNamespace << " {\nnamespace {\n\n"
     << "std::string join(const std::string& path, const char* field) {\n"
     << "  return path.empty() ? std::string(field) : path + \".\" + field;\n}\n\n"
     << "// Compiled once per pattern: the validators run on every reconcile, from any thread.\n"
     << "[[maybe_unused]] const std::regex& pattern(const char* p) {\n"
     << "  static std::mutex mu;\n"
     << "  static auto* cache = new std::map<std::string, std::regex>();\n"
     << "  const std::lock_guard<std::mutex> lock(mu);\n"
     << "  auto it = cache->find(p);\n"
     << "  if (it == cache->end()) {\n"
     << "    it = cache->emplace(p, std::regex(p, std::regex::ECMAScript)).first;\n  }\n"
     << "  return it->second;\n}\n\n}  // namespace\n\n";
  for (const auto& s : pkg.structs) {
    emitValidator(vc, pkg, s);
  }
  vc << "}  // namespace " << pkg.cppNamespace << "\n";
  files[dir + "/zz_generated.validation.cc"] = vc.str();
  return files;
}

std::string banner(const Package& pkg, const std::string& comment) {
  return comment + " Code generated by egress-codegen from " + pkg.includePath +
         ". DO NOT EDIT.\n" + comment + " Regenerate with `make generate`.\n";
}

}  // namespace egress::codegen
