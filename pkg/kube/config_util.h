// File: config_util.h
//
// Small string and file helpers shared by the configuration loaders (kubeconfig, in-cluster,
// token files, client certificate files, exec plugins): one trimSpace, one way to quote a value
// in a message, and one bounded file reader, so every loader caps what it reads, reports a
// missing file the same way and can tell a rotated file from the one it read last.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/kube/errors.h"
#include <sys/stat.h>
#include <sys/types.h>

namespace egress::kube {

// Surrounding ASCII whitespace removed, as Go's strings.TrimSpace does for ASCII text.
std::string trimSpace(std::string_view s);

// `s` in double quotes, for error messages.
std::string inQuotes(std::string_view s);

// "a, b, c", for listing names and files in messages.
std::string joinComma(const std::vector<std::string>& items);

// The text of a config error without the "config: " its message() adds, for nesting it under
// a file and field.
std::string configDetail(const Error& e);

// What changes when a file is rewritten or renamed over: compared to notice rotation without
// reading the file.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  int64_t mtimeNanos = 0;
  bool operator==(const FileIdentity&) const = default;
};
FileIdentity fileIdentity(const struct stat& st);

struct FileContents {
  std::string data;
  FileIdentity identity;
};

enum class FileKind {
  Any,      // FIFOs too (`--kubeconfig <(...)`); read only at startup
  Regular,  // re-read by a running process, which must never block on a FIFO
};

// Reads the file at `path`, at most `limit` bytes. nullopt if it does not exist. Otherwise
// errors are config errors reading "<path>: <why>" (a directory, too large, unreadable).
Result<std::optional<FileContents>> readBoundedFile(const std::string& path, size_t limit,
                                                    FileKind kind);

}  // namespace egress::kube
