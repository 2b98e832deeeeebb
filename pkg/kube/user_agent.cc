#include "pkg/kube/user_agent.h"

#include <errno.h>  // program_invocation_short_name (glibc)

#ifndef EGRESS_VERSION
#error "EGRESS_VERSION comes from pkg/kube/CMakeLists.txt (the CMake project version)"
#endif
#ifndef EGRESS_GIT_COMMIT
#define EGRESS_GIT_COMMIT ""
#endif

namespace egress::kube {
namespace {

// runtime.GOOS / runtime.GOARCH spelling, which is what servers and audit logs expect.
constexpr const char* kOs =
#if defined(__linux__)
    "linux";
#elif defined(__APPLE__)
    "darwin";
#else
    "unknown";
#endif

constexpr const char* kArch =
#if defined(__x86_64__)
    "amd64";
#elif defined(__aarch64__)
    "arm64";
#elif defined(__i386__)
    "386";
#elif defined(__arm__)
        "arm";
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
        "ppc64le";
#elif defined(__s390x__)
        "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
        "riscv64";
#else
        "unknown";
#endif

// client-go's adjustVersion / adjustCommit / adjustCommand.
std::string orUnknown(const std::string& s) {
  return s.empty() ? "unknown" : s;
}

}  // namespace

std::string buildUserAgent(const std::string& command, const std::string& version,
                           const std::string& os, const std::string& arch,
                           const std::string& commit) {
  return orUnknown(command) + "/" + orUnknown(version.substr(0, version.find('-'))) + " (" + os +
         "/" + arch + ") kubernetes/" + orUnknown(commit.substr(0, 7));
}

std::string defaultUserAgent() {
  return buildUserAgent(program_invocation_short_name, std::string("v") + EGRESS_VERSION, kOs,
                        kArch, EGRESS_GIT_COMMIT);
}

}  // namespace egress::kube
