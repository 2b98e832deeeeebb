// File: server_address.h
//
// The API server's addresses as a client reaches it, for what must never be taken for anything
// else: no egress IP may be one of them (the operator reserves them, egw-agent refuses them),
// and traffic to them never leaves through a gateway.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace egress::kube {

// The host of `server` ("https://host:port[/prefix]", a REST config's) and `serviceHost`
// ($KUBERNETES_SERVICE_HOST in a pod), those that are IP addresses (a name would need DNS to
// compare), canonical, each once.
std::vector<std::string> serverAddresses(std::string_view server, std::string_view serviceHost);

}  // namespace egress::kube
