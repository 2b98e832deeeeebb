#include "pkg/kube/kubeconfig_file.h"

#include <filesystem>
#include <functional>
#include <set>

#include <yaml-cpp/yaml.h>

#include "pkg/kube/base64.h"
#include "pkg/kube/config_util.h"
#include "pkg/kube/exec_extension.h"

namespace egress::kube {
namespace {

namespace fs = std::filesystem;

// Reads several fields in a row and keeps the first error, so a parser is a flat list of
// take() calls followed by one check.
class FirstError {
 public:
  template <class R, class T>
  void take(R result, T& dest) {
    if (!result_) {
      return;
    }
    if (!result) {
      result_ = result.error();
      return;
    }
    dest = std::move(*result);
  }
  bool ok() const { return result_.ok(); }
  const Result<Ok>& result() const { return result_; }

 private:
  Result<Ok> result_ = Ok{};
};

// Turns one file's YAML into entries, checking types and decoding as it goes. Entries are only
// added for names no earlier file defined.
class FileParser {
 public:
  FileParser(std::string file, fs::path dir) : file_(std::move(file)), dir_(std::move(dir)) {}

  Result<Ok> parse(const YAML::Node& root, MergedKubeconfig& into) {
    if (root.IsNull()) {
      return Ok{};  // an empty file is an empty config, as for kubectl
    }
    const Origin top{file_, ""};
    if (!root.IsMap()) {
      return Error::config(file_ +
                           ": not a kubeconfig (want a mapping with clusters, users, "
                           "contexts)");
    }
    auto kind = getString(root, "kind", top);
    if (!kind) {
      return kind.error();
    }
    if (!kind->empty() && *kind != "Config") {
      return fieldError(top, "kind", "is " + inQuotes(*kind) + ", want Config");
    }
    auto apiVersion = getString(root, "apiVersion", top);
    if (!apiVersion) {
      return apiVersion.error();
    }
    if (!apiVersion->empty() && *apiVersion != "v1") {
      return fieldError(top, "apiVersion", "is " + inQuotes(*apiVersion) + ", want v1");
    }
    auto current = getString(root, "current-context", top);
    if (!current) {
      return current.error();
    }
    if (into.currentContext.empty() && !current->empty()) {
      into.currentContext = *current;
      into.currentContextFile = file_;
    }
    if (auto r = forEachNamed(root, "clusters", "cluster",
                              [&](const std::string& name, const YAML::Node& body,
                                  const Origin& o) { return addCluster(name, body, o, into); });
        !r) {
      return r;
    }
    if (auto r = forEachNamed(root, "users", "user",
                              [&](const std::string& name, const YAML::Node& body,
                                  const Origin& o) { return addUser(name, body, o, into); });
        !r) {
      return r;
    }
    return forEachNamed(root, "contexts", "context",
                        [&](const std::string& name, const YAML::Node& body, const Origin& o) {
                          return addContext(name, body, o, into);
                        });
  }

 private:
  using EntryFn = std::function<Result<Ok>(const std::string&, const YAML::Node&, const Origin&)>;

  // `list` is [{name: n, <bodyKey>: {...}}, ...]; calls fn with the body and "list[n]".
  Result<Ok> forEachNamed(const YAML::Node& root, const char* listKey, const char* bodyKey,
                          const EntryFn& fn) {
    const Origin top{file_, ""};
    const YAML::Node list = root[listKey];
    if (!list.IsDefined() || list.IsNull()) {
      return Ok{};
    }
    if (!list.IsSequence()) {
      return fieldError(top, listKey, "must be a list");
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node item = list[i];
      const Origin indexed{file_, std::string(listKey) + "[" + std::to_string(i) + "]"};
      if (!item.IsMap()) {
        return fieldError(indexed, "", "must be a mapping with name and " + std::string(bodyKey));
      }
      auto name = getString(item, "name", indexed);
      if (!name) {
        return name.error();
      }
      if (name->empty()) {
        return fieldError(indexed, "name", "is required");
      }
      const Origin named{file_, std::string(listKey) + "[" + *name + "]"};
      if (!seen.insert(*name).second) {
        return fieldError(named, "", "defined twice in this file");
      }
      // An absent key yields yaml-cpp's "zombie" node, which throws on almost any use; give the
      // entry an empty body instead.
      const YAML::Node raw = item[bodyKey];
      const YAML::Node body = raw.IsDefined() ? raw : YAML::Node();
      if (body.IsDefined() && !body.IsNull() && !body.IsMap()) {
        return fieldError(named, bodyKey, "must be a mapping");
      }
      if (auto r = fn(*name, body, named); !r) {
        return r;
      }
    }
    return Ok{};
  }

  // Absent or null reads as "".
  Result<std::string> getString(const YAML::Node& map, const std::string& key, const Origin& o) {
    if (!map.IsMap()) {
      return std::string();
    }
    const YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) {
      return std::string();
    }
    if (!v.IsScalar()) {
      return fieldError(o, key, "must be a string");
    }
    return v.Scalar();
  }

  Result<bool> getBool(const YAML::Node& map, const std::string& key, const Origin& o) {
    if (!map.IsMap()) {
      return false;
    }
    const YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) {
      return false;
    }
    bool out = false;
    if (!v.IsScalar() || !YAML::convert<bool>::decode(v, out)) {
      return fieldError(o, key, "must be true or false");
    }
    return out;
  }

  Result<std::string> getBase64(const YAML::Node& map, const std::string& key, const Origin& o) {
    auto text = getString(map, key, o);
    if (!text || text->empty()) {
      return text;
    }
    auto decoded = base64Decode(*text);
    if (!decoded) {
      return fieldError(o, key, "not valid base64");
    }
    return std::move(*decoded);
  }

  Result<std::string> getPath(const YAML::Node& map, const std::string& key, const Origin& o) {
    auto text = getString(map, key, o);
    if (!text || text->empty()) {
      return text;
    }
    return resolve(*text);
  }

  std::string resolve(const std::string& path) const {
    const fs::path p(path);
    return p.is_absolute() ? path : (dir_ / p).lexically_normal().string();
  }

  bool isSet(const YAML::Node& map, const std::string& key) const {
    if (!map.IsMap()) {
      return false;
    }
    const YAML::Node v = map[key];
    return v.IsDefined() && !v.IsNull();
  }

  Result<Ok> addCluster(const std::string& name, const YAML::Node& body, const Origin& o,
                        MergedKubeconfig& into) {
    ClusterEntry c;
    c.origin = o;
    FirstError failed;
    failed.take(getString(body, "server", o), c.server);
    failed.take(getPath(body, "certificate-authority", o), c.caFile);
    failed.take(getBase64(body, "certificate-authority-data", o), c.caData);
    failed.take(getBool(body, "insecure-skip-tls-verify", o), c.insecureSkipTlsVerify);
    failed.take(getString(body, "tls-server-name", o), c.tlsServerName);
    failed.take(getString(body, "proxy-url", o), c.proxyUrl);
    if (!failed.ok()) {
      return failed.result();
    }
    if (auto r = parseExecExtension(body, o, c.execConfigJson); !r) {
      return r;
    }
    into.clusters.try_emplace(name, std::move(c));
    return Ok{};
  }

  // clusters[].cluster.extensions: [{name, extension}]; the exec plugin's one is kept as JSON.
  Result<Ok> parseExecExtension(const YAML::Node& body, const Origin& o, std::string& json) {
    if (!isSet(body, "extensions")) {
      return Ok{};
    }
    const YAML::Node list = body["extensions"];
    if (!list.IsSequence()) {
      return fieldError(o, "extensions", "must be a list");
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node item = list[i];
      const Origin at{o.file, o.field + ".extensions[" + std::to_string(i) + "]"};
      if (!item.IsMap()) {
        return fieldError(at, "", "must be a mapping with name and extension");
      }
      auto name = getString(item, "name", at);
      if (!name) {
        return name.error();
      }
      if (*name != kExecExtensionName || !isSet(item, "extension")) {
        continue;
      }
      auto converted = execExtensionToJson(item["extension"]);
      if (!converted) {
        return fieldError(at, "extension",
                          "cannot be converted to JSON (non-string keys or "
                          "nested too deeply)");
      }
      json = std::move(*converted);
    }
    return Ok{};
  }

  Result<Ok> addUser(const std::string& name, const YAML::Node& body, const Origin& o,
                     MergedKubeconfig& into) {
    UserEntry u;
    u.origin = o;
    FirstError failed;
    failed.take(getString(body, "token", o), u.token);
    failed.take(getPath(body, "tokenFile", o), u.tokenFile);
    failed.take(getPath(body, "client-certificate", o), u.certFile);
    failed.take(getBase64(body, "client-certificate-data", o), u.certData);
    failed.take(getPath(body, "client-key", o), u.keyFile);
    failed.take(getBase64(body, "client-key-data", o), u.keyData);
    if (!failed.ok()) {
      return failed.result();
    }
    for (const char* key :
         {"username", "password", "auth-provider", "as", "as-uid", "as-groups", "as-user-extra"}) {
      if (isSet(body, key)) {
        u.unsupported.emplace_back(key);
      }
    }
    if (isSet(body, "exec")) {
      auto exec = parseExec(body["exec"], Origin{o.file, o.field + ".exec"});
      if (!exec) {
        return exec.error();
      }
      u.exec = std::move(*exec);
    }
    into.users.try_emplace(name, std::move(u));
    return Ok{};
  }

  Result<ExecConfig> parseExec(const YAML::Node& node, const Origin& o) {
    if (!node.IsMap()) {
      return fieldError(o, "", "must be a mapping");
    }
    ExecConfig e;
    FirstError failed;
    failed.take(getString(node, "apiVersion", o), e.apiVersion);
    failed.take(getString(node, "command", o), e.command);
    failed.take(getString(node, "interactiveMode", o), e.interactiveMode);
    failed.take(getBool(node, "provideClusterInfo", o), e.provideClusterInfo);
    failed.take(getString(node, "installHint", o), e.installHint);
    if (!failed.ok()) {
      return failed.result().error();
    }
    // client-go: a command with a path separator is a path relative to this file; a bare name
    // is looked up in PATH when the plugin runs.
    if (e.command.find('/') != std::string::npos) {
      e.command = resolve(e.command);
    }
    if (isSet(node, "args")) {
      const YAML::Node args = node["args"];
      if (!args.IsSequence()) {
        return fieldError(o, "args", "must be a list of strings");
      }
      for (size_t i = 0; i < args.size(); ++i) {
        if (!args[i].IsScalar()) {
          return fieldError(o, "args[" + std::to_string(i) + "]", "must be a string");
        }
        e.args.push_back(args[i].Scalar());
      }
    }
    if (isSet(node, "env")) {
      const YAML::Node env = node["env"];
      if (!env.IsSequence()) {
        return fieldError(o, "env", "must be a list of {name, value}");
      }
      for (size_t i = 0; i < env.size(); ++i) {
        const Origin at{o.file, o.field + ".env[" + std::to_string(i) + "]"};
        if (!env[i].IsMap()) {
          return fieldError(at, "", "must be a mapping with name and value");
        }
        ExecEnvVar var;
        failed.take(getString(env[i], "name", at), var.name);
        failed.take(getString(env[i], "value", at), var.value);
        if (!failed.ok()) {
          return failed.result().error();
        }
        if (var.name.empty()) {
          return fieldError(at, "name", "is required");
        }
        e.env.push_back(std::move(var));
      }
    }
    return e;
  }

  Result<Ok> addContext(const std::string& name, const YAML::Node& body, const Origin& o,
                        MergedKubeconfig& into) {
    ContextEntry c;
    c.origin = o;
    auto cluster = getString(body, "cluster", o);
    auto user = getString(body, "user", o);
    auto ns = getString(body, "namespace", o);
    for (auto* r : {&cluster, &user, &ns}) {
      if (!*r) {
        return r->error();
      }
    }
    c.cluster = std::move(*cluster);
    c.user = std::move(*user);
    c.ns = std::move(*ns);
    into.contexts.try_emplace(name, std::move(c));
    return Ok{};
  }

  std::string file_;
  fs::path dir_;
};

// Parses one file's text into `into`, as read from `file` (named in errors; relative paths
// resolve against its folder).
Result<Ok> parseInto(std::string_view text, const std::string& file, MergedKubeconfig& into) {
  if (text.size() > kMaxKubeconfigBytes) {
    return Error::config(file + ": larger than " + std::to_string(kMaxKubeconfigBytes) + " bytes");
  }
  std::error_code ec;
  fs::path absolute = fs::absolute(file, ec);
  if (ec) {
    absolute = file;
  }
  FileParser parser(file, absolute.parent_path());
  // yaml-cpp reports errors by throwing, from Load and from node accessors alike; nothing may
  // escape this boundary.
  try {
    // Load, not LoadAll: yaml-cpp 0.7's LoadAll can loop forever on malformed input. Only the
    // first document counts, as for kubectl.
    const YAML::Node root = YAML::Load(std::string(text));
    if (auto r = parser.parse(root, into); !r) {
      return r.error();
    }
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) {
      return Error::config(file + ": invalid YAML: " + e.msg);
    }
    return Error::config(file + ": invalid YAML at line " + std::to_string(e.mark.line + 1) +
                         ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  } catch (const std::exception& e) {
    return Error::config(file + ": cannot load: " + e.what());
  } catch (...) {
    return Error::config(file + ": cannot load: unknown error");
  }
  into.files.push_back(file);
  return Ok{};
}

// Loads one file into `into`. Returns false if it does not exist and may be skipped.
Result<bool> loadFile(const std::string& path, bool mustExist, MergedKubeconfig& into) {
  auto contents = readBoundedFile(path, kMaxKubeconfigBytes, FileKind::Any);
  if (!contents) {
    return contents.error();
  }
  if (!*contents) {
    if (mustExist) {
      return Error::config(path + ": kubeconfig file does not exist");
    }
    return false;
  }
  if (auto parsed = parseInto((*contents)->data, path, into); !parsed) {
    return parsed.error();
  }
  return true;
}

}  // namespace

Error fieldError(const Origin& o, std::string_view sub, const std::string& message) {
  std::string field = o.field;
  if (!sub.empty()) {
    field += (field.empty() ? "" : ".") + std::string(sub);
  }
  return Error::config(o.file + ": " + field + ": " + message);
}

Result<MergedKubeconfig> readKubeconfigFiles(const std::vector<std::string>& paths) {
  if (paths.empty()) {
    return Error::config("no kubeconfig file given");
  }
  const bool explicitPath = paths.size() == 1;
  MergedKubeconfig merged;
  for (const auto& path : paths) {
    auto loaded = loadFile(path, explicitPath, merged);
    if (!loaded) {
      return loaded.error();
    }
  }
  if (merged.files.empty()) {
    return Error::config("none of the kubeconfig files exist: " + joinComma(paths));
  }
  return merged;
}

Result<MergedKubeconfig> parseKubeconfig(std::string_view text, const std::string& file) {
  MergedKubeconfig merged;
  if (auto parsed = parseInto(text, file, merged); !parsed) {
    return parsed.error();
  }
  return merged;
}

}  // namespace egress::kube
