// File: metrics_handler.h
//
// The /metrics handler: every sample of the given prometheus-cpp collectables (a Registry, the
// ProcessCollector, ...) in the Prometheus text exposition format 0.0.4, collected at request
// time, as promhttp serves it to a scraper that asks for text (no gzip).
#pragma once

#include <string_view>
#include <vector>

#include <prometheus/collectable.h>

#include "pkg/controllerruntime/http_server.h"

namespace egress::controllerruntime {

// What promhttp (expfmt.FmtText) sends with the text format.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// The collectables must outlive the server. A collectable that throws makes the scrape a 500
// naming the error (promhttp's HTTPErrorOnError) instead of a partial answer.
HttpHandler metricsHandler(std::vector<const prometheus::Collectable*> collectables);

}  // namespace egress::controllerruntime
