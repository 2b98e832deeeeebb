#include "pkg/log/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "pkg/log/json_formatter.h"

namespace egress::log {

std::optional<spdlog::level::level_enum> parseLevel(std::string_view text) {
  static constexpr std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},   {"critical", spdlog::level::critical},
      {"off", spdlog::level::off}};
  for (const auto& [name, level] : kLevels) {
    if (name == text) {
      return level;
    }
  }
  return std::nullopt;
}

std::optional<Format> parseFormat(std::string_view text) {
  if (text == "text") {
    return Format::Text;
  }
  if (text == "json") {
    return Format::Json;
  }
  return std::nullopt;
}

void configure(const Options& options) {
  // Not registered by name, so configure() may run again (tests, flag re-parsing).
  auto logger =
      std::make_shared<spdlog::logger>("egress", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (options.format == Format::Json) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%L%$ %v");
  }
  logger->set_level(options.level);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace egress::log
