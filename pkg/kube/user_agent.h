// File: user_agent.h
//
// The default User-Agent, in client-go's format (rest.DefaultKubernetesUserAgent):
// "<binary>/<version> (<os>/<arch>) kubernetes/<commit>", e.g.
// "egress-operator/v0.1.0 (linux/amd64) kubernetes/1a2b3c4". The version is the CMake project
// version; the commit is whatever the build was given as EGRESS_GIT_COMMIT, shortened to 7
// characters, or "unknown" when none was (client-go's adjustCommit for an empty commit), so a
// binary never claims a commit it was not built from.
#pragma once

#include <string>

namespace egress::kube {

std::string buildUserAgent(const std::string& command, const std::string& version,
                           const std::string& os, const std::string& arch,
                           const std::string& commit);
// The one above for this binary: argv[0]'s base name, this build's version, OS, architecture
// (Go's GOARCH names: amd64, arm64, ...) and commit.
std::string defaultUserAgent();

}  // namespace egress::kube
