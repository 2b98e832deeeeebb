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
    default:
      return "";
  }
}

bool isObjectKind(K k) {
  return k == K::ObjectMeta || k == K::LabelSelector || k == K::Condition || k == K::Struct;
}

void emitDecoder(std::ostringstream& o, const Struct& s) {
  o << "meta::Decoded<" << s.name << "> decode" << s.name << "(const rapidjson::Value& v) {\n";
  for (const auto& f : s.fields) {
    if (f.required() && isObjectKind(f.type.kind)) {
      // Absent and empty decode alike for objects, so a missing required one (an empty
      // podSelector selects everything) is caught here.
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
    } else if (isObjectKind(t.kind)) {
      o << "  r.object(" << key << ", " << member << ", " << decoderOf(t) << ");\n";
    } else if (t.kind == K::Optional) {
      o << "  r.object(" << key << ", " << member << ", " << decoderOf(*t.elem) << ");\n";
    } else {
      o << "  r.list(" << key << ", " << member << ", " << decoderOf(*t.elem) << ");\n";
    }
  }
  // std::move of an all-scalar struct is a no-op that clang-tidy flags.
  bool trivial = true;
  for (const auto& f : s.fields) {
    const TypeRef& t = f.type.kind == K::Optional ? *f.type.elem : f.type;
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
    switch (t.kind) {
      case K::String:
      case K::Int64:
      case K::StringMap:
        o << "  meta::" << (req ? "writeField" : "writeFieldIfSet") << "(w, " << key << ", "
          << member << ");\n";
        break;
      case K::Int32:
        if (req) {
          o << "  meta::writeField(w, " << key << ", " << member << ");\n";
        } else {
          o << "  if (" << member << " != 0) {\n    meta::writeField(w, " << key << ", " << member
            << ");\n  }\n";
        }
        break;
      case K::Bool:
        if (req) {
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
      case K::Optional:
        if (t.elem->isScalar()) {
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

// Checks of one string value `expr` at path expression `path` from the string markers named
// with `prefix` ("" for the field's own, "items:" for its elements).
void stringChecks(std::ostringstream& o, const Field& f, const std::string& prefix,
                  const std::string& expr, const std::string& path, const std::string& indent) {
  if (const Marker* m = f.marker(prefix + "MinLength")) {
    o << indent << "if (" << expr << ".size() < " << m->value << ") {\n"
      << indent << "  errs.push_back({" << path << ", \"should be at least " << m->value
      << " chars long\"});\n"
      << indent << "}\n";
  }
  if (const Marker* m = f.marker(prefix + "MaxLength")) {
    o << indent << "if (" << expr << ".size() > " << m->value << ") {\n"
      << indent << "  errs.push_back({" << path << ", \"may not be longer than " << m->value
      << "\"});\n"
      << indent << "}\n";
  }
  if (const Marker* m = f.marker(prefix + "Pattern")) {
    o << indent << "if (!std::regex_search(" << expr << ", pattern(" << cppString(m->value)
      << "))) {\n"
      << indent << "  errs.push_back({" << path << ", \"\\\"\" + " << expr
      << " + \"\\\" should match '\" + std::string(" << cppString(m->value) << ") + \"'\"});\n"
      << indent << "}\n";
  }
  if (const Marker* m = f.marker(prefix + "Enum")) {
    std::string cond;
    std::string supported;
    std::istringstream in(m->value);
    std::string v;
    while (std::getline(in, v, ';')) {
      cond += (cond.empty() ? "" : " && ") + expr + " != " + cppString(v);
      supported += (supported.empty() ? "" : ", ") + std::string("\\\"") + v + "\\\"";
    }
    o << indent << "if (" << cond << ") {\n"
      << indent << "  errs.push_back({" << path << ", \"Unsupported value: \\\"\" + " << expr
      << " + \"\\\": supported values: " << supported << "\"});\n"
      << indent << "}\n";
  }
  if (const Marker* m = f.marker(prefix + "Format")) {
    static const std::map<std::string, std::pair<std::string, std::string>> kFormats = {
        {"cidr", {"isCIDR", "a CIDR"}},
        {"ipv4", {"isIPv4", "an IPv4 address"}},
        {"ipv6", {"isIPv6", "an IPv6 address"}},
        {"ip", {"isIP", "an IP address"}},
        {"ip-or-cidr", {"isIPOrCIDR", "an IP address or CIDR"}},
    };
    const auto& [fn, what] = kFormats.at(m->value);
    o << indent << "if (!validation::" << fn << "(" << expr << ")) {\n"
      << indent << "  errs.push_back({" << path << ", \"\\\"\" + " << expr << " + \"\\\" is not "
      << what << "\"});\n"
      << indent << "}\n";
  }
}

void intChecks(std::ostringstream& o, const Field& f, const std::string& expr,
               const std::string& path, const std::string& indent) {
  if (const Marker* m = f.marker("Minimum")) {
    o << indent << "if (" << expr << " < " << m->value << ") {\n"
      << indent << "  errs.push_back({" << path << ", std::to_string(" << expr
      << ") + \" should be greater than or equal to " << m->value << "\"});\n"
      << indent << "}\n";
  }
  if (const Marker* m = f.marker("Maximum")) {
    o << indent << "if (" << expr << " > " << m->value << ") {\n"
      << indent << "  errs.push_back({" << path << ", std::to_string(" << expr
      << ") + \" should be less than or equal to " << m->value << "\"});\n"
      << indent << "}\n";
  }
}

void emitValidator(std::ostringstream& o, const Struct& s) {
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
        if (f.required()) {
          fo << "  if (" << member << ".empty()) {\n    errs.push_back({" << p
             << ", \"Required value\"});\n  } else {\n";
        } else {
          fo << "  if (!" << member << ".empty()) {\n";
        }
        stringChecks(fo, f, "", member, p, "    ");
        fo << "  }\n";
        break;
      case K::Int32:
      case K::Int64:
        intChecks(fo, f, member, p, "  ");
        break;
      case K::Optional:
        if (t.elem->kind == K::String) {
          fo << "  if (" << member << ") {\n";
          stringChecks(fo, f, "", "(*" + member + ")", p, "    ");
          fo << "  }\n";
        } else if (t.elem->kind == K::Int32 || t.elem->kind == K::Int64) {
          fo << "  if (" << member << ") {\n";
          intChecks(fo, f, "(*" + member + ")", p, "    ");
          fo << "  }\n";
        } else if (t.elem->kind == K::Struct) {
          fo << "  if (" << member << ") {\n    validate" << t.elem->name << "Fields(*" << member
             << ", " << p << ", errs);\n  }\n";
        }
        break;
      case K::Struct:
        fo << "  validate" << t.name << "Fields(" << member << ", " << p << ", errs);\n";
        break;
      case K::StringMap:
        if (f.marker("items:Pattern") || f.marker("items:MaxLength")) {
          fo << "  for (const auto& [key, value] : " << member << ") {\n";
          stringChecks(fo, f, "items:", "value", p + " + \"[\" + key + \"]\"", "    ");
          fo << "  }\n";
        }
        break;
      case K::Vector: {
        if (f.required()) {
          fo << "  if (" << member << ".empty()) {\n    errs.push_back({" << p
             << ", \"Required value\"});\n  }\n";
        }
        if (const Marker* m = f.marker("MinItems")) {
          fo << "  if (!" << member << ".empty() && " << member << ".size() < " << m->value
             << ") {\n    errs.push_back({" << p << ", \"should have at least " << m->value
             << " items\"});\n  }\n";
        }
        if (const Marker* m = f.marker("MaxItems")) {
          fo << "  if (" << member << ".size() > " << m->value << ") {\n    errs.push_back({" << p
             << ", \"must have at most " << m->value << " items\"});\n  }\n";
        }
        const std::string ip = p + " + \"[\" + std::to_string(i) + \"]\"";
        if (t.elem->kind == K::String) {
          std::ostringstream items;
          stringChecks(items, f, "items:", member + "[i]", ip, "    ");
          if (!items.str().empty()) {
            fo << "  for (size_t i = 0; i < " << member << ".size(); ++i) {\n"
               << items.str() << "  }\n";
          }
        } else if (t.elem->kind == K::Struct) {
          fo << "  for (size_t i = 0; i < " << member << ".size(); ++i) {\n    validate"
             << t.elem->name << "Fields(" << member << "[i], " << ip << ", errs);\n  }\n";
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
     << pkg.cppNamespace << " {\n\n";
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
     << "#include <map>\n#include <mutex>\n#include <regex>\n\n#include "
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
    emitValidator(vc, s);
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
