// File: endpoints.h
//
// The operator's two HTTP servers, as controller-runtime's Manager runs them: the metrics server
// (--metrics-bind-address, default ":8080", serving /metrics) and the health probe server
// (--health-probe-bind-address, default ":8081", serving /healthz and /readyz with their
// sub-paths). Each is one HttpServer on its own listener; "0" disables it.
//
//   auto metrics = startMetricsServer(executor, metricsAddress, {&registry, &process}, {});
//   if (!metrics) { spdlog::error("{}", metrics.error()); return 1; }
//   if (*metrics) spdlog::info("serving metrics on {}", (**metrics).endpoint());
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <prometheus/collectable.h>

#include "pkg/base/result.h"
#include "pkg/controllerruntime/healthz.h"
#include "pkg/controllerruntime/http_server.h"

namespace egress::controllerruntime {

inline constexpr std::string_view kDefaultMetricsBindAddress = ":8080";
inline constexpr std::string_view kDefaultHealthProbeBindAddress = ":8081";

// A started server, null when the address disables it, or an error (bad address, port in use).
using StartedServer = Result<std::unique_ptr<HttpServer>, std::string>;

// /metrics over `collectables` (which must outlive the server). options.name defaults to
// "metrics".
StartedServer startMetricsServer(const boost::asio::any_io_executor& executor,
                                 std::string_view bindAddress,
                                 std::vector<const prometheus::Collectable*> collectables,
                                 HttpServerOptions options);

// /healthz over `liveness` and /readyz over `readiness` (both must outlive the server).
// options.name defaults to "health probe".
StartedServer startHealthProbeServer(const boost::asio::any_io_executor& executor,
                                     std::string_view bindAddress, const HealthChecks& liveness,
                                     const HealthChecks& readiness, HttpServerOptions options);

}  // namespace egress::controllerruntime
