// File: loopback.h
//
// Loopback plumbing for e2e tests that run servers of their own (the operator's /metrics and
// probes): a free port to give a process, and a plain HTTP GET of what it serves.
#pragma once

#include <string>

namespace egress::testenv {

// A loopback TCP port nobody listens on right now (bound, read and closed).
int freeLoopbackPort();

// GET http://127.0.0.1:<port><path>: the body of a 200 response; "" for anything else or if it
// could not be fetched within 10 s.
std::string httpGet(int port, const std::string& path);

}  // namespace egress::testenv
