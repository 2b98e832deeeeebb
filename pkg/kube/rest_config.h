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
  // client-go's DisableCompression: do not ask for gzip-compressed responses (watch streams are
  // never compressed). False by default, as in client-go: `make bench` times an informer's sync
  // of 10,000 pods (paged LISTs of 25 MB that gzip level 1 shrinks to 1 MB) both ways, and on
  // loopback, with the machine's two cores shared with a build, gzip was faster in 6 of 7
  // alternating pairs (median 3.7 s against 4.6 s); a plain LIST of all pods was a tie within
  // noise (medians 1.25 s / 1.36 s and 2.29 s / 2.02 s in two runs of test/bench/client_bench).
  bool disableCompression = false;
  std::string defaultNamespace = "default";
  // The client-side token bucket, as client-go's rest.Config: QPS 0 means the default 5, burst 0
  // the default 10, and a negative QPS turns client-side rate limiting off (servers with API
  // Priority and Fairness do their own).
  double qps = 5.0;
  int burst = 10;
  std::string userAgent;  // "" = the client picks one
};

}  // namespace egress::kube
