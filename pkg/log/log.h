// File: log.h
//
// Process-wide logging setup over spdlog: a level, and a format that is either human text or
// one JSON object per line (for log shippers). Everything logs through spdlog's default logger
// (`spdlog::info(...)`); this file only decides where and how lines are written.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <spdlog/common.h>

namespace egress::log {

enum class Format { Text, Json };

struct Options {
  spdlog::level::level_enum level = spdlog::level::info;
  Format format = Format::Text;
};

// "trace", "debug", "info", "warn", "error", "critical", "off"; nullopt for anything else.
std::optional<spdlog::level::level_enum> parseLevel(std::string_view text);
// "text" or "json"; nullopt for anything else.
std::optional<Format> parseFormat(std::string_view text);

// Installs a stderr logger with these options as spdlog's default logger.
void configure(const Options& options);

}  // namespace egress::log
