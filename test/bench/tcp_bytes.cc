#include "test/bench/tcp_bytes.h"

#include <cstddef>
#include <filesystem>
#include <string>
#include <system_error>

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace egress::bench {

uint64_t tcpBytesReceived() {
  uint64_t total = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (ec || target.rfind("socket:", 0) != 0) {
      continue;
    }
    const int fd = std::stoi(entry.path().filename().string());
    tcp_info info{};
    socklen_t len = sizeof(info);
    // Older kernels fill less of the struct: count only a counter they did fill.
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
        len >= offsetof(tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received)) {
      total += info.tcpi_bytes_received;
    }
  }
  return total;
}

}  // namespace egress::bench
