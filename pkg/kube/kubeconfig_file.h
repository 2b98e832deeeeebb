// File: kubeconfig_file.h
//
// Reading kubeconfig files into one merged model the way client-go's clientcmd loading rules
// do: files merged in order, the first definition of a cluster, user or context name winning,
// the first current-context set winning, relative paths resolved against the file that wrote
// them, `*-data` fields base64-decoded, every value type-checked. Turning the model into a
// RestConfig is kubeconfig.h's job.
//
// Every problem comes back as a config error naming the file and the field, e.g.
//   config: /home/me/.kube/config: users[admin].client-key-data: not valid base64
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/kube/errors.h"
#include "pkg/kube/exec_credential.h"

namespace egress::kube {

// Larger kubeconfig files are rejected rather than handed to the YAML parser.
inline constexpr size_t kMaxKubeconfigBytes = 4 << 20;

// Each entry remembers the file that defined it: errors name that file, and relative paths in
// it resolve against that file's folder.
struct Origin {
  std::string file;   // as given, for messages
  std::string field;  // "clusters[prod]"
};

// "<file>: <field>.<sub>: <message>" as a config error.
Error fieldError(const Origin& o, std::string_view sub, const std::string& message);

struct ClusterEntry {
  Origin origin;
  std::string server;
  std::string caFile;  // absolute
  std::string caData;  // decoded
  bool insecureSkipTlsVerify = false;
  std::string tlsServerName;
  std::string proxyUrl;
  std::string execConfigJson;  // the exec extension as JSON; "" = none
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

struct MergedKubeconfig {
  std::map<std::string, ClusterEntry> clusters;
  std::map<std::string, UserEntry> users;
  std::map<std::string, ContextEntry> contexts;
  std::string currentContext;
  std::string currentContextFile;
  std::vector<std::string> files;  // the ones that existed, in order
};

// A single path counts as explicitly given (--kubeconfig) and must exist; in a longer list
// (KUBECONFIG) missing files are skipped, as long as one exists.
Result<MergedKubeconfig> readKubeconfigFiles(const std::vector<std::string>& paths);

// One kubeconfig's text, parsed as readKubeconfigFiles parses each file it reads (the same
// checks, the same errors), as if read from `file`: errors name it and relative paths resolve
// against its folder. Reads nothing from the file system (the fuzz target's entry point).
Result<MergedKubeconfig> parseKubeconfig(std::string_view text, const std::string& file);

}  // namespace egress::kube
