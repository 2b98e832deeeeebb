// File: json_formatter.h
//
// An spdlog formatter that writes each record as one JSON object on one line:
//   {"ts":"2026-11-30T03:27:13.123Z","level":"info","logger":"egress","msg":"..."}
// The message is escaped properly (spdlog's pattern formatter cannot escape `%v`), so any
// text, including quotes and newlines from API server messages, yields valid JSON.
#pragma once

#include <memory>

#include <spdlog/formatter.h>

namespace egress::log {

class JsonFormatter : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

}  // namespace egress::log
