#include "pkg/controllerruntime/endpoints.h"

#include <utility>

#include "pkg/controllerruntime/bind_address.h"
#include "pkg/controllerruntime/metrics_handler.h"

namespace egress::controllerruntime {

namespace {

// Parses the address, then routes and starts the server; null when the address disables it.
template <class Route>
StartedServer startServer(const boost::asio::any_io_executor& executor,
                          std::string_view bindAddress, HttpServerOptions options,
                          const std::string& defaultName, Route route) {
  if (options.name == HttpServerOptions().name) {
    options.name = defaultName;
  }
  auto address = parseBindAddress(bindAddress);
  if (!address) {
    return options.name + " server: " + address.error();
  }
  if (!*address) {
    return std::unique_ptr<HttpServer>();
  }
  auto server = std::make_unique<HttpServer>(executor, std::move(options));
  route(*server);
  if (auto started = server->start(**address); !started) {
    return started.error();
  }
  return server;
}

}  // namespace

StartedServer startMetricsServer(const boost::asio::any_io_executor& executor,
                                 std::string_view bindAddress,
                                 std::vector<const prometheus::Collectable*> collectables,
                                 HttpServerOptions options) {
  return startServer(executor, bindAddress, std::move(options), "metrics", [&](HttpServer& server) {
    server.handle("/metrics", metricsHandler(std::move(collectables)));
  });
}

StartedServer startHealthProbeServer(const boost::asio::any_io_executor& executor,
                                     std::string_view bindAddress, const HealthChecks& liveness,
                                     const HealthChecks& readiness, HttpServerOptions options) {
  return startServer(executor, bindAddress, std::move(options), "health probe",
                     [&](HttpServer& server) {
                       server.handleTree("/healthz", liveness.handler());
                       server.handleTree("/readyz", readiness.handler());
                     });
}

}  // namespace egress::controllerruntime
