// File: tcp_bytes.h
//
// Bytes on the wire, for the benchmarks' LIST sizes: what this process's TCP sockets have
// received, from the kernel's per-socket counter (TLS records and HTTP framing included, after
// gzip). Its own translation unit because the kernel's <linux/tcp.h>, which has the counter,
// clashes with glibc's <netinet/tcp.h> that Boost.Asio includes.
#pragma once

#include <cstdint>

namespace egress::bench {

// tcpi_bytes_received summed over this process's open TCP sockets; sockets closed meanwhile
// drop out, so measure across requests on pooled connections.
uint64_t tcpBytesReceived();

}  // namespace egress::bench
