#include <sstream>

#include "hack/codegen/emit.h"

namespace egress::codegen {
namespace {

// "networking.egressgateway.dev" + "v1alpha1" -> "NetworkingV1alpha1".
std::string groupVersionName(const Package& pkg) {
  std::string g = pkg.group.substr(0, pkg.group.find('.'));
  std::string v = pkg.version;
  g[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(g[0])));
  v[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(v[0])));
  return g + v;
}

std::string head(const Package& pkg, const std::string& what) {
  return banner(pkg, "//") + "//\n// " + what + "\n#pragma once\n\n";
}

}  // namespace

Files emitClient(const Package& pkg, const std::string& dir) {
  Files files;
  const std::string gv = groupVersionName(pkg);
  const std::string api = pkg.cppNamespace;
  const std::string codec =
      pkg.includePath.substr(0, pkg.includePath.rfind('/')) + "/zz_generated.codec.h";

  // ---- clientset
  std::ostringstream c;
  c << head(pkg, "The typed clientset of " + pkg.group + "/" + pkg.version +
                     " (client-gen's): one TypedClient per kind.")
    << "#include <string>\n\n#include \"" << codec << "\"\n"
    << "#include \"pkg/client/typed_client.h\"\n#include \"pkg/kube/rest_client.h\"\n\n"
    << "namespace egress::client {\n\n";
  for (const Struct* s : pkg.roots()) {
    const Resource& r = *s->resource;
    c << "template <>\nstruct ApiType<" << api << "::" << s->name << "> {\n"
      << "  static kube::Resource resource() {\n"
      << "    return kube::Resource{\"" << pkg.group << "\", \"" << pkg.version << "\", \""
      << r.plural << "\", " << (r.namespaced ? "true" : "false") << "};\n  }\n"
      << "  static meta::Decoded<" << api << "::" << s->name
      << "> decode(const rapidjson::Value& v) {\n    return " << api << "::decode" << s->name
      << "(v);\n  }\n"
      << "  static void encode(meta::JsonWriter& w, const " << api << "::" << s->name
      << "& v) {\n    " << api << "::encode" << s->name << "(w, v);\n  }\n};\n\n";
  }
  c << "class " << gv << "Client {\n public:\n  explicit " << gv
    << "Client(kube::RestClient& client) : client_(&client) {}\n\n";
  for (const Struct* s : pkg.roots()) {
    const Resource& r = *s->resource;
    const std::string& method = r.accessor;
    if (r.namespaced) {
      c << "  // `ns` \"\" lists and watches across all namespaces.\n"
        << "  TypedClient<" << api << "::" << s->name << "> " << method
        << "(std::string ns) const {\n    return {*client_, std::move(ns)};\n  }\n";
    } else {
      c << "  TypedClient<" << api << "::" << s->name << "> " << method
        << "() const { return {*client_, \"\"}; }\n";
    }
  }
  c << "\n private:\n  kube::RestClient* client_;\n};\n\n"
    << "class Clientset {\n public:\n  explicit Clientset(kube::RestClient& client) : "
       "client_(&client) {}\n\n"
    << "  " << gv << "Client " << lowerCamel(gv) << "() const { return " << gv
    << "Client(*client_); }\n"
    << "  kube::RestClient& rest() const { return *client_; }\n\n"
    << " private:\n  kube::RestClient* client_;\n};\n\n}  // namespace egress::client\n";
  files[dir + "/zz_generated.clientset.h"] = c.str();

  // ---- listers
  std::ostringstream l;
  l << head(pkg, "Typed listers of " + pkg.group + "/" + pkg.version +
                     " (lister-gen's) over an informer's cache.")
    << "#include <string>\n#include <vector>\n\n#include \"" << pkg.includePath << "\"\n"
    << "#include \"pkg/cache/lister.h\"\n\nnamespace egress::client {\n\n";
  for (const Struct* s : pkg.roots()) {
    const Resource& r = *s->resource;
    const std::string t = api + "::" + s->name;
    if (r.namespaced) {
      l << "class " << s->name
        << "NamespaceLister {\n public:\n  using Ptr = std::shared_ptr<const " << t << ">;\n  "
        << s->name << "NamespaceLister(const cache::Indexer<" << t
        << ">& indexer, std::string ns)\n      : lister_(indexer), ns_(std::move(ns)) {}\n"
        << "  std::vector<Ptr> list(const meta::LabelSelector* selector = nullptr) const {\n"
        << "    return lister_.listInNamespace(ns_, selector);\n  }\n"
        << "  Ptr get(const std::string& name) const { return lister_.get(ns_, name); }\n\n"
        << " private:\n  cache::Lister<" << t << "> lister_;\n  std::string ns_;\n};\n\n";
    }
    l << "class " << s->name << "Lister {\n public:\n  using Ptr = std::shared_ptr<const " << t
      << ">;\n  explicit " << s->name << "Lister(const cache::Indexer<" << t
      << ">& indexer) : indexer_(indexer), lister_(indexer) {}\n"
      << "  std::vector<Ptr> list(const meta::LabelSelector* selector = nullptr) const {\n"
      << "    return lister_.list(selector);\n  }\n";
    if (r.namespaced) {
      l << "  " << s->name << "NamespaceLister " << r.accessor
        << "(std::string ns) const {\n    return {indexer_, std::move(ns)};\n  }\n";
    } else {
      l << "  Ptr get(const std::string& name) const { return lister_.get(\"\", name); }\n";
    }
    l << "\n private:\n  const cache::Indexer<" << t << ">& indexer_;\n  cache::Lister<" << t
      << "> lister_;\n};\n\n";
  }
  l << "}  // namespace egress::client\n";
  files[dir + "/zz_generated.listers.h"] = l.str();

  // ---- informers
  std::ostringstream i;
  i << head(pkg, "Typed shared informers of " + pkg.group + "/" + pkg.version +
                     " (informer-gen's), from a SharedInformerFactory.")
    << "#include <string>\n\n#include \"" << dir << "/zz_generated.clientset.h\"\n#include \""
    << dir << "/zz_generated.listers.h\"\n#include \"pkg/cache/informer_factory.h\"\n\n"
    << "namespace egress::client {\n\n"
    << "class " << gv << "Informers {\n public:\n  explicit " << gv
    << "Informers(cache::SharedInformerFactory& factory) : factory_(&factory) {}\n\n";
  for (const Struct* s : pkg.roots()) {
    const Resource& r = *s->resource;
    const std::string t = api + "::" + s->name;
    const std::string& method = r.accessor;
    i << "  // The shared informer (one per namespace, label selector); `transform` applies to "
         "the\n"
         "  // informer that the first caller creates.\n"
      << "  cache::SharedIndexInformer<" << t << ">& " << method << "("
      << (r.namespaced ? "const std::string& ns = \"\", " : "")
      << "const std::string& labelSelector = \"\",\n      cache::SharedIndexInformer<" << t
      << ">::Transform transform = {}) const {\n"
      << "    return factory_->informerFor<" << t << ">(ApiType<" << t << ">::resource(), ApiType<"
      << t << ">::decode,\n        " << (r.namespaced ? "ns" : "\"\"")
      << ", labelSelector, transform);\n  }\n"
      << "  " << s->name << "Lister " << lowerCamel(s->name) << "Lister("
      << (r.namespaced ? "const std::string& ns = \"\"" : "") << ") const {\n    return " << s->name
      << "Lister(" << method << "(" << (r.namespaced ? "ns" : "") << ").indexer());\n  }\n\n";
  }
  i << " private:\n  cache::SharedInformerFactory* factory_;\n};\n\n}  // namespace "
       "egress::client\n";
  files[dir + "/zz_generated.informers.h"] = i.str();
  return files;
}

}  // namespace egress::codegen
