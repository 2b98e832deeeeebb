#include "pkg/kube/kubeconfig.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <yaml-cpp/yaml.h>

#include "pkg/kube/base64.h"
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace egress::kube {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kExecExtensionName = "client.authentication.k8s.io/exec";
// Files a kubeconfig points at (CA bundles, client certificates) are small too.
constexpr size_t kMaxReferencedFileBytes = 4 << 20;
constexpr int kMaxExtensionDepth = 64;

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

std::string inQuotes(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

// Each entry remembers the file that defined it: errors name that file, and relative paths in
// it resolve against that file's folder.
struct Origin {
  std::string file;   // as given, for messages
  std::string field;  // "clusters[prod]"
};

struct ClusterEntry {
  Origin origin;
  std::string server;
  std::string caFile;  // absolute
  std::string caData;  // decoded
  bool insecureSkipTlsVerify = false;
  std::string tlsServerName;
  std::string proxyUrl;
  std::string execConfigJson;
};

struct UserEntry {
  Origin origin;
  std::string token;
  std::string tokenFile;  // absolute
  std::string certFile;   // absolute
  std::string certData;   // decoded
  std::string keyFile;    // absolute
  std::string keyData;    // decoded
  std::optional<ExecConfig> exec;
  std::vector<std::string> unsupported;  // fields we cannot honour, rejected if the user is used
};

struct ContextEntry {
  Origin origin;
  std::string cluster;
  std::string user;
  std::string ns;
};

struct MergedConfig {
  std::map<std::string, ClusterEntry> clusters;
  std::map<std::string, UserEntry> users;
  std::map<std::string, ContextEntry> contexts;
  std::string currentContext;
  std::string currentContextFile;
  std::vector<std::string> files;  // the ones that existed, in order
};

// The text of an error from a lower layer, without the "config: " its message() adds, for
// nesting under a file and field.
std::string detail(const Error& e) {
  std::string m = e.message();
  constexpr std::string_view kPrefix = "config: ";
  return m.rfind(kPrefix, 0) == 0 ? m.substr(kPrefix.size()) : m;
}

Error fieldError(const Origin& o, std::string_view sub, const std::string& message) {
  std::string field = o.field;
  if (!sub.empty()) {
    field += (field.empty() ? "" : ".") + std::string(sub);
  }
  return Error::config(o.file + ": " + field + ": " + message);
}

struct FileContents {
  std::string data;
  bool missing = false;
};

// Reads at most `limit` bytes; a missing file is reported, not an error, so callers decide.
Result<FileContents> readFileLimited(const std::string& path, size_t limit,
                                     const std::string& context) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return FileContents{{}, true};
    }
    return Error::config(context + "cannot read " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Error::config(context + path + " is a directory");
  }
  FileContents out;
  char buf[16384];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Error::config(context + "cannot read " + path + ": " + std::strerror(err));
    }
    if (n == 0) {
      break;
    }
    if (out.data.size() + static_cast<size_t>(n) > limit) {
      ::close(fd);
      return Error::config(context + path + " is larger than " + std::to_string(limit) + " bytes");
    }
    out.data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// A referenced file that must exist (certificate-authority, client-certificate, client-key).
Result<std::string> readReferencedFile(const Origin& o, std::string_view field,
                                       const std::string& path) {
  auto read = readFileLimited(path, kMaxReferencedFileBytes,
                              o.file + ": " + o.field + "." + std::string(field) + ": ");
  if (!read) {
    return read.error();
  }
  if (read->missing) {
    return fieldError(o, field, path + " does not exist");
  }
  return std::move(read->data);
}

bool isJsonNumber(const std::string& s) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      ++i;
    }
    return i > start;
  };
  if (i < s.size() && s[i] == '-') {
    ++i;
  }
  if (i < s.size() && s[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) {
      return false;
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      ++i;
    }
    if (!digits()) {
      return false;
    }
  }
  return i == s.size();
}

// The exec extension is arbitrary YAML handed to the plugin as JSON (spec.cluster.config).
// Plain scalars get YAML's core-schema types; quoted ones stay strings.
bool writeYamlAsJson(const YAML::Node& node, rapidjson::Writer<rapidjson::StringBuffer>& w,
                     int depth) {
  if (depth > kMaxExtensionDepth) {
    return false;
  }
  switch (node.Type()) {
    case YAML::NodeType::Map:
      w.StartObject();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return false;
        }
        w.Key(kv.first.Scalar().data(), static_cast<rapidjson::SizeType>(kv.first.Scalar().size()));
        if (!writeYamlAsJson(kv.second, w, depth + 1)) {
          return false;
        }
      }
      w.EndObject();
      return true;
    case YAML::NodeType::Sequence:
      w.StartArray();
      for (const auto& item : node) {
        if (!writeYamlAsJson(item, w, depth + 1)) {
          return false;
        }
      }
      w.EndArray();
      return true;
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "?") {
        if (s == "true" || s == "True" || s == "TRUE") {
          w.Bool(true);
          return true;
        }
        if (s == "false" || s == "False" || s == "FALSE") {
          w.Bool(false);
          return true;
        }
        if (s == "null" || s == "Null" || s == "NULL" || s == "~") {
          w.Null();
          return true;
        }
        if (isJsonNumber(s)) {
          w.RawValue(s.data(), s.size(), rapidjson::kNumberType);
          return true;
        }
      }
      w.String(s);
      return true;
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      w.Null();
      return true;
  }
  return false;
}

// Turns one file's YAML into entries, checking types and decoding as it goes. Entries are only
// added for names no earlier file defined.
class FileParser {
 public:
  FileParser(std::string file, fs::path dir) : file_(std::move(file)), dir_(std::move(dir)) {}

  Result<Ok> parse(const YAML::Node& root, MergedConfig& into) {
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
                        MergedConfig& into) {
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
      rapidjson::StringBuffer buf;
      rapidjson::Writer<rapidjson::StringBuffer> w(buf);
      if (!writeYamlAsJson(item["extension"], w, 0)) {
        return fieldError(at, "extension",
                          "cannot be converted to JSON (non-string keys or "
                          "nested too deeply)");
      }
      json.assign(buf.GetString(), buf.GetSize());
    }
    return Ok{};
  }

  Result<Ok> addUser(const std::string& name, const YAML::Node& body, const Origin& o,
                     MergedConfig& into) {
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
                        MergedConfig& into) {
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

// Loads one file into `into`. Returns false if it does not exist and may be skipped.
Result<bool> loadFile(const std::string& path, bool mustExist, MergedConfig& into) {
  auto contents = readFileLimited(path, kMaxKubeconfigBytes, path + ": ");
  if (!contents) {
    return contents.error();
  }
  if (contents->missing) {
    if (mustExist) {
      return Error::config(path + ": kubeconfig file does not exist");
    }
    return false;
  }
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) {
    absolute = path;
  }
  FileParser parser(path, absolute.parent_path());
  // yaml-cpp reports errors by throwing, from Load and from node accessors alike; nothing may
  // escape this boundary.
  try {
    // Load, not LoadAll: yaml-cpp 0.7's LoadAll can loop forever on malformed input. Only the
    // first document counts, as for kubectl.
    const YAML::Node root = YAML::Load(contents->data);
    if (auto r = parser.parse(root, into); !r) {
      return r.error();
    }
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) {
      return Error::config(path + ": invalid YAML: " + e.msg);
    }
    return Error::config(path + ": invalid YAML at line " + std::to_string(e.mark.line + 1) +
                         ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  } catch (const std::exception& e) {
    return Error::config(path + ": cannot load: " + e.what());
  } catch (...) {
    return Error::config(path + ": cannot load: unknown error");
  }
  into.files.push_back(path);
  return true;
}

// client-go's DefaultServerURL: a bare host[:port] means https; no trailing slash.
Result<std::string> normalizeServer(const ClusterEntry& c) {
  std::string server = c.server;
  if (server.find("://") == std::string::npos) {
    server = "https://" + server;
  }
  if (server.rfind("https://", 0) != 0 && server.rfind("http://", 0) != 0) {
    return fieldError(c.origin, "server", inQuotes(c.server) + " must be an http(s) URL");
  }
  while (!server.empty() && server.back() == '/') {
    server.pop_back();
  }
  const size_t hostStart = server.find("://") + 3;
  if (server.size() == hostStart || server[hostStart] == '/' ||
      server.find_first_of(" \t\r\n") != std::string::npos) {
    return fieldError(c.origin, "server", inQuotes(c.server) + " is not a valid URL");
  }
  return server;
}

Result<RestConfig> buildRestConfig(const MergedConfig& m, const KubeconfigOptions& options) {
  const std::string files = join(m.files);
  const std::string contextName = options.context.empty() ? m.currentContext : options.context;
  if (contextName.empty()) {
    return Error::config("no context selected: current-context is not set in " + files +
                         " and no context was given");
  }
  auto ctxIt = m.contexts.find(contextName);
  if (ctxIt == m.contexts.end()) {
    std::vector<std::string> known;
    for (const auto& [name, _] : m.contexts) {
      known.push_back(name);
    }
    std::string msg = "context " + inQuotes(contextName) + " does not exist in " + files;
    if (options.context.empty()) {
      msg = m.currentContextFile + ": current-context: " + msg;
    }
    return Error::config(
        msg + (known.empty() ? " (it defines no contexts)" : " (available: " + join(known) + ")"));
  }
  const ContextEntry& ctx = ctxIt->second;
  if (ctx.cluster.empty()) {
    return fieldError(ctx.origin, "cluster", "is required");
  }
  auto clusterIt = m.clusters.find(ctx.cluster);
  if (clusterIt == m.clusters.end()) {
    return fieldError(ctx.origin, "cluster",
                      "cluster " + inQuotes(ctx.cluster) + " does not exist in " + files);
  }
  const ClusterEntry& cluster = clusterIt->second;

  RestConfig config;
  if (cluster.server.empty()) {
    return fieldError(cluster.origin, "server", "is required (no server defined)");
  }
  auto server = normalizeServer(cluster);
  if (!server) {
    return server.error();
  }
  config.server = std::move(*server);
  if (!cluster.proxyUrl.empty()) {
    return fieldError(cluster.origin, "proxy-url", "is not supported");
  }
  if (!cluster.caFile.empty() && !cluster.caData.empty()) {
    return fieldError(cluster.origin, "",
                      "certificate-authority and certificate-authority-data are both set");
  }
  if (!cluster.caFile.empty()) {
    auto ca = readReferencedFile(cluster.origin, "certificate-authority", cluster.caFile);
    if (!ca) {
      return ca.error();
    }
    config.caPem = std::move(*ca);
  } else {
    config.caPem = cluster.caData;
  }
  config.insecureSkipTlsVerify = cluster.insecureSkipTlsVerify;
  if (config.insecureSkipTlsVerify && (!cluster.caFile.empty() || !cluster.caData.empty())) {
    // client-go's transport refuses the combination too: trust would be ambiguous.
    return fieldError(cluster.origin, "insecure-skip-tls-verify",
                      "cannot be combined with certificate-authority(-data)");
  }
  config.tlsServerName = cluster.tlsServerName;
  config.defaultNamespace = ctx.ns.empty() ? "default" : ctx.ns;

  if (ctx.user.empty()) {
    return config;  // anonymous
  }
  auto userIt = m.users.find(ctx.user);
  if (userIt == m.users.end()) {
    return fieldError(ctx.origin, "user",
                      "user " + inQuotes(ctx.user) + " does not exist in " + files);
  }
  const UserEntry& user = userIt->second;
  if (!user.unsupported.empty()) {
    return fieldError(user.origin, user.unsupported.front(),
                      "is not supported (basic auth, auth-provider plugins and impersonation are "
                      "not implemented; use a token, a client certificate or an exec plugin)");
  }

  // Client certificate: a file or inline data, never both, and never half a pair.
  if (!user.certFile.empty() && !user.certData.empty()) {
    return fieldError(user.origin, "",
                      "client-certificate and client-certificate-data are both set");
  }
  if (!user.keyFile.empty() && !user.keyData.empty()) {
    return fieldError(user.origin, "", "client-key and client-key-data are both set");
  }
  config.clientCertPem = user.certData;
  config.clientKeyPem = user.keyData;
  if (!user.certFile.empty()) {
    auto cert = readReferencedFile(user.origin, "client-certificate", user.certFile);
    if (!cert) {
      return cert.error();
    }
    config.clientCertPem = std::move(*cert);
  }
  if (!user.keyFile.empty()) {
    auto key = readReferencedFile(user.origin, "client-key", user.keyFile);
    if (!key) {
      return key.error();
    }
    config.clientKeyPem = std::move(*key);
  }
  if (config.clientCertPem.empty() != config.clientKeyPem.empty()) {
    return fieldError(
        user.origin, config.clientCertPem.empty() ? "client-certificate" : "client-key",
        "is required together with " +
            std::string(config.clientCertPem.empty() ? "client-key" : "client-certificate"));
  }

  // As in client-go: a token beats a token file, and either beats an exec plugin (its round
  // tripper steps aside when a request already carries an Authorization header).
  if (!user.token.empty()) {
    config.auth = std::make_shared<StaticTokenProvider>(user.token);
  } else if (!user.tokenFile.empty()) {
    auto provider = std::make_shared<TokenFileProvider>(user.tokenFile, options.clock);
    // Read once now so a missing file fails the load, not the first request.
    if (auto first = provider->credentials(); !first) {
      return fieldError(user.origin, "tokenFile", detail(first.error()));
    }
    config.auth = std::move(provider);
  } else if (user.exec) {
    ExecClusterInfo info;
    info.server = config.server;
    info.tlsServerName = config.tlsServerName;
    info.insecureSkipTlsVerify = config.insecureSkipTlsVerify;
    info.caPem = config.caPem;
    info.configJson = cluster.execConfigJson;
    auto provider = ExecCredentialProvider::create(*user.exec, std::move(info),
                                                   ExecOptions{options.execTimeout, options.clock});
    if (!provider) {
      return fieldError(user.origin, "exec", detail(provider.error()));
    }
    config.auth = std::move(*provider);
  }
  return config;
}

std::string homeDirectory() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return home;
  }
  // controller-runtime falls back to the passwd entry when HOME is unset (distroless images).
  struct passwd pw {};
  struct passwd* result = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &result) == 0 && result != nullptr &&
      result->pw_dir != nullptr) {
    return result->pw_dir;
  }
  return {};
}

}  // namespace

std::vector<std::string> kubeconfigPathsFromEnv(const char* value) {
  std::vector<std::string> paths;
  if (value == nullptr) {
    return paths;
  }
  const std::string_view text(value);
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(':', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    if (end > start) {
      paths.emplace_back(text.substr(start, end - start));
    }
    start = end + 1;
  }
  return paths;
}

Result<RestConfig> loadKubeconfig(const KubeconfigOptions& options) {
  if (options.paths.empty()) {
    return Error::config("no kubeconfig file given");
  }
  const bool explicitPath = options.paths.size() == 1;
  MergedConfig merged;
  for (const auto& path : options.paths) {
    auto loaded = loadFile(path, explicitPath, merged);
    if (!loaded) {
      return loaded.error();
    }
  }
  if (merged.files.empty()) {
    return Error::config("none of the kubeconfig files exist: " + join(options.paths));
  }
  return buildRestConfig(merged, options);
}

Result<RestConfig> loadRestConfig(const std::string& kubeconfigFlag, const std::string& context,
                                  const InClusterOptions& inCluster) {
  KubeconfigOptions options;
  options.context = context;
  options.clock = inCluster.clock;
  if (!kubeconfigFlag.empty()) {
    options.paths = {kubeconfigFlag};
    return loadKubeconfig(options);
  }
  options.paths = kubeconfigPathsFromEnv(std::getenv("KUBECONFIG"));
  if (!options.paths.empty()) {
    return loadKubeconfig(options);
  }
  std::optional<Error> inClusterError;
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host != nullptr && *host != '\0') {
    auto config = inClusterConfig(inCluster);
    if (config) {
      return config;
    }
    inClusterError = config.error();
  }
  const std::string home = homeDirectory();
  const std::string path = home.empty() ? "" : home + "/.kube/config";
  std::error_code ec;
  if (!path.empty() && fs::exists(path, ec)) {
    options.paths = {path};
    return loadKubeconfig(options);
  }
  if (inClusterError) {
    return *inClusterError;
  }
  return Error::config(
      "no Kubernetes configuration found: no --kubeconfig, KUBECONFIG is not set, not running in "
      "a cluster (KUBERNETES_SERVICE_HOST is not set), and " +
      (path.empty() ? std::string("no home directory") : path + " does not exist"));
}

}  // namespace egress::kube
