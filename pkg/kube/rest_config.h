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
  // "" = HTTPS_PROXY / NO_PROXY from the environment (proxy.h), as Go's ProxyFromEnvironment.
  std::string proxyUrl;
  // Static client certificate (PEM), may be "". As in client-go, a static certificate takes
  // precedence over one an AuthProvider returns in Credentials (certificate files that rotate
  // are served by a provider and leave these empty).
  std::string clientCertPem;
  std::string clientKeyPem;
  std::shared_ptr<AuthProvider> auth;  // null = no bearer token / exec plugin
  // client-go's DisableCompression: do not ask for gzip-compressed responses. True by default
  // here, where client-go's default is false: on loopback a LIST of 10,000 pods took about 20%
  // longer with gzip (test/bench/client_bench: median 2.1 s against 1.7 s for 25 MB that gzip
  // shrinks to 1 MB), because compressing costs the server more than the bytes save on a fast
  // link, as in a cluster. Set it false for a slow link (a distant or proxied API server).
  bool disableCompression = true;
  std::string defaultNamespace = "default";
  // The client-side token bucket, as client-go's rest.Config: QPS 0 means the default 5, burst 0
  // the default 10, and a negative QPS turns client-side rate limiting off (servers with API
  // Priority and Fairness do their own).
  double qps = 5.0;
  int burst = 10;
  std::string userAgent;  // "" = the client picks one
};

}  // namespace egress::kube
