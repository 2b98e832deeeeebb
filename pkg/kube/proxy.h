// File: proxy.h
//
// Which HTTP proxy, if any, carries the connection to the API server, by the rules of Go's
// http.ProxyFromEnvironment (golang.org/x/net/http/httpproxy) that client-go uses, plus a
// kubeconfig cluster's `proxy-url`, which client-go uses for every request regardless of the
// environment (http.ProxyURL). The transport then opens an HTTP CONNECT tunnel through it.
//
// From the environment: HTTPS_PROXY (or https_proxy) for an https:// server, HTTP_PROXY (or
// http_proxy) for an http:// one; a value without a scheme means http://. NO_PROXY (or
// no_proxy) lists exceptions, comma separated: "*" (no proxy at all), IP addresses and CIDRs,
// domain names (matching the name and its subdomains; a leading "." or "*." matches subdomains
// only), each optionally with ":port". "localhost" and loopback addresses never use a proxy.
// Pure functions: no sockets here.
#pragma once

#include <optional>
#include <string>

#include "pkg/kube/errors.h"

namespace egress::kube {

struct ProxyUrl {
  bool tls = false;  // https:// proxy: TLS to the proxy, then CONNECT inside it
  std::string host;  // without brackets for IPv6
  std::string port;
  // From the URL's userinfo, percent-decoded; sent as Proxy-Authorization: Basic.
  std::optional<std::string> username;
  std::string password;

  // "http://host:port", never the password: for error messages and logs.
  std::string display() const;
  // The Proxy-Authorization header value, or "" without credentials.
  std::string authorization() const;
};

// An http:// or https:// proxy URL. `assumeHttp`: a value with no scheme at all means
// http:// (the environment variables' rule); a kubeconfig proxy-url must carry its scheme.
Result<ProxyUrl> parseProxyUrl(const std::string& url, bool assumeHttp);

// The proxy variables of the environment, read once (as Go reads them once per process).
struct ProxyEnvironment {
  std::string httpProxy;
  std::string httpsProxy;
  std::string noProxy;

  static ProxyEnvironment fromProcess();
};

// NO_PROXY says the connection to host:port goes direct (also true for localhost and loopback
// addresses, which Go never proxies). host without brackets.
bool bypassesProxy(const std::string& noProxy, const std::string& host, const std::string& port);

// The proxy for a server ("https" or "http" scheme), or nullopt to connect directly.
// `configured` is the kubeconfig proxy-url ("" = use the environment). A malformed configured
// URL is an error; a malformed environment value is ignored, as Go ignores it.
Result<std::optional<ProxyUrl>> proxyFor(bool tls, const std::string& host, const std::string& port,
                                         const std::string& configured,
                                         const ProxyEnvironment& env);

}  // namespace egress::kube
