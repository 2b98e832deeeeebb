// File: resource_version.h
//
// Reading one's own writes needs to know when the watch cache has caught up with a write: when
// the cached object's resourceVersion is the one the write returned, or a later one.
// Deliberate difference from client-go, which treats resourceVersions as opaque strings: "later"
// compares them as the integers every etcd-backed API server sends. A version that is not one
// reads as "not older", so the caller believes the cache rather than its memo.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace egress::controller {

// Whether resourceVersion `cached` is certainly older than `written`: both integers, and less.
bool versionBefore(const std::string& cached, const std::string& written);

// Whether `observed` is certainly at least `version`: both integers and not less, or the same
// text. "" (never reported) and versions that cannot be compared read as "not yet": the caller
// waits rather than assume a reader has seen a write.
bool versionReached(const std::string& observed, const std::string& version);

// The integer a resourceVersion is (as every etcd-backed API server sends it), or nothing.
std::optional<uint64_t> versionNumber(const std::string& version);

}  // namespace egress::controller
