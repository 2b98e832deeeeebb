#include "pkg/kube/kubeconfig.h"

#include <memory>
#include <vector>

#include "pkg/kube/config_util.h"
#include "pkg/kube/file_credentials.h"
#include "pkg/kube/kubeconfig_file.h"

namespace egress::kube {
namespace {

// Files a kubeconfig points at (CA bundles, client certificates) are small too.
constexpr size_t kMaxReferencedFileBytes = 4 << 20;

// A referenced file that must exist (certificate-authority, client-certificate, client-key).
Result<std::string> readReferencedFile(const Origin& o, std::string_view field,
                                       const std::string& path) {
  auto read = readBoundedFile(path, kMaxReferencedFileBytes, FileKind::Any);
  if (!read) {
    return fieldError(o, field, configDetail(read.error()));
  }
  if (!*read) {
    return fieldError(o, field, path + " does not exist");
  }
  return std::move((*read)->data);
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

// client-go accepts http, https and socks5 proxies; the transport speaks HTTP CONNECT only, so
// socks5 is refused here rather than ignored.
Result<std::string> checkProxyUrl(const ClusterEntry& c) {
  if (c.proxyUrl.empty()) {
    return std::string();
  }
  const size_t schemeEnd = c.proxyUrl.find("://");
  const std::string scheme =
      schemeEnd == std::string::npos ? std::string() : c.proxyUrl.substr(0, schemeEnd);
  if (scheme != "http" && scheme != "https") {
    return fieldError(c.origin, "proxy-url",
                      inQuotes(c.proxyUrl) + ": " +
                          (scheme.empty() ? std::string("has no scheme")
                                          : "scheme " + inQuotes(scheme) + " is not supported") +
                          " (use an http:// or https:// proxy)");
  }
  const size_t hostStart = schemeEnd + 3;
  if (c.proxyUrl.size() == hostStart || c.proxyUrl[hostStart] == '/' ||
      c.proxyUrl.find_first_of(" \t\r\n") != std::string::npos) {
    return fieldError(c.origin, "proxy-url", inQuotes(c.proxyUrl) + " is not a valid URL");
  }
  return c.proxyUrl;
}

}  // namespace

Result<RestConfig> buildRestConfig(const MergedKubeconfig& m, const KubeconfigOptions& options) {
  const std::string files = joinComma(m.files);
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
    return Error::config(msg + (known.empty() ? " (it defines no contexts)"
                                              : " (available: " + joinComma(known) + ")"));
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
  auto proxy = checkProxyUrl(cluster);
  if (!proxy) {
    return proxy.error();
  }
  config.proxyUrl = std::move(*proxy);
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
  std::shared_ptr<AuthProvider> certificate;
  if (!user.certFile.empty() && !user.keyFile.empty()) {
    // Both from files: followed as they rotate, like client-go's ReloadTLSFiles (set only when
    // both are files). Read now so a missing file fails the load, not the first request.
    auto provider =
        std::make_shared<ClientCertFileProvider>(user.certFile, user.keyFile, options.clock);
    if (auto first = provider->current(); !first) {
      return fieldError(user.origin, "", configDetail(first.error()));
    }
    certificate = std::move(provider);
  } else {
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
  }
  const bool hasCertificate = certificate != nullptr || !config.clientCertPem.empty();

  if (auto valid = checkBearerToken(user.token); !valid) {
    return fieldError(user.origin, "token", configDetail(valid.error()));
  }
  std::shared_ptr<AuthProvider> token;
  if (!user.tokenFile.empty()) {
    // client-go (NewBearerAuthWithRefreshRoundTripper): the file wins and is re-read as it
    // rotates; `token`, if set, is served only while the file cannot be read. Without a token
    // the file must be readable now.
    auto provider = std::make_shared<TokenFileProvider>(user.tokenFile, options.clock, user.token);
    if (auto first = provider->current(); !first) {
      return fieldError(user.origin, "tokenFile", configDetail(first.error()));
    }
    token = std::move(provider);
  } else if (!user.token.empty()) {
    token = std::make_shared<StaticTokenProvider>(user.token);
  } else if (user.exec && !hasCertificate) {
    // client-go's exec Authenticator steps aside when the config already has token or
    // certificate auth (UpdateTransportConfig), so the plugin is not even run then.
    ExecClusterInfo info;
    info.server = config.server;
    info.tlsServerName = config.tlsServerName;
    info.insecureSkipTlsVerify = config.insecureSkipTlsVerify;
    info.caPem = config.caPem;
    info.configJson = cluster.execConfigJson;
    auto provider = ExecCredentialProvider::create(*user.exec, std::move(info),
                                                   ExecOptions{options.execTimeout, options.clock});
    if (!provider) {
      return fieldError(user.origin, "exec", configDetail(provider.error()));
    }
    token = std::move(*provider);
  }
  if (token && certificate) {
    config.auth = std::make_shared<CombinedAuthProvider>(std::move(token), std::move(certificate));
  } else {
    config.auth = token ? std::move(token) : std::move(certificate);
  }
  return config;
}

Result<RestConfig> loadKubeconfig(const KubeconfigOptions& options) {
  auto merged = readKubeconfigFiles(options.paths);
  if (!merged) {
    return merged.error();
  }
  return buildRestConfig(*merged, options);
}

}  // namespace egress::kube
