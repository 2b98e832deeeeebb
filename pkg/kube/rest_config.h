// File: rest_config.h
//
// RestConfig: everything needed to talk to one API server (where it is, how to trust it, who we
// are), built by loadKubeconfig / inClusterConfig / loadRestConfig (kubeconfig.h, in_cluster.h)
// and consumed by the transport. The counterpart of client-go's rest.Config, with files already
// read: a RestConfig holds PEM contents, never paths, except behind an AuthProvider that must
// re-read them (rotating tokens).
#pragma once

#include <memory>
#include <string>

#include "pkg/kube/auth_provider.h"

namespace egress::kube {

struct RestConfig {
  std::string server;  // "https://host:port[/prefix]", no trailing slash
  // PEM bundle (file contents or decoded -data); "" = system roots.
  std::string caPem;
  bool insecureSkipTlsVerify = false;
  std::string tlsServerName;  // overrides the host for SNI and certificate verification
  // "http(s)://host:port" of the proxy to tunnel through with CONNECT (kubeconfig proxy-url);
  // "" = HTTPS_PROXY / NO_PROXY from the environment, as Go's ProxyFromEnvironment.
  std::string proxyUrl;
  // Static client certificate (PEM), may be "". As in client-go, a static certificate takes
  // precedence over one an AuthProvider returns in Credentials (certificate files that rotate
  // are served by a provider and leave these empty).
  std::string clientCertPem;
  std::string clientKeyPem;
  std::shared_ptr<AuthProvider> auth;  // null = no bearer token / exec plugin
  std::string defaultNamespace = "default";
  double qps = 5.0;  // client-go defaults
  int burst = 10;
  std::string userAgent;  // "" = the client picks one
};

}  // namespace egress::kube
