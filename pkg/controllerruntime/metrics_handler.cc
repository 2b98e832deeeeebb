#include "pkg/controllerruntime/metrics_handler.h"

#include <exception>
#include <sstream>

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

namespace egress::controllerruntime {

HttpHandler metricsHandler(std::vector<const prometheus::Collectable*> collectables) {
  return [collectables = std::move(collectables)](const HttpRequest&) {
    std::vector<prometheus::MetricFamily> families;
    try {
      for (const prometheus::Collectable* collectable : collectables) {
        auto collected = collectable->Collect();
        families.insert(families.end(), std::make_move_iterator(collected.begin()),
                        std::make_move_iterator(collected.end()));
      }
    } catch (const std::exception& e) {
      return httpError(500, std::string("error collecting metrics: ") + e.what());
    }
    HttpResponse response;
    response.contentType = std::string(kMetricsContentType);
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, families);
    response.body = std::move(out).str();
    return response;
  };
}

}  // namespace egress::controllerruntime
