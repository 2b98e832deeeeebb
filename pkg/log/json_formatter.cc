#include "pkg/log/json_formatter.h"

#include <chrono>
#include <ctime>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace egress::log {

void JsonFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  using namespace std::chrono;
  const auto sinceEpoch = msg.time.time_since_epoch();
  const auto secs = duration_cast<seconds>(sinceEpoch);
  const auto millis = duration_cast<milliseconds>(sinceEpoch - secs).count();
  const std::time_t t = secs.count();
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  const size_t n = std::strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(ts + n, sizeof(ts) - n, ".%03dZ", static_cast<int>(millis));

  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("ts");
  w.String(ts);
  w.Key("level");
  const auto level = spdlog::level::to_string_view(msg.level);
  w.String(level.data(), static_cast<rapidjson::SizeType>(level.size()));
  if (msg.logger_name.size() > 0) {
    w.Key("logger");
    w.String(msg.logger_name.data(), static_cast<rapidjson::SizeType>(msg.logger_name.size()));
  }
  w.Key("msg");
  w.String(msg.payload.data(), static_cast<rapidjson::SizeType>(msg.payload.size()));
  w.EndObject();
  dest.append(buf.GetString(), buf.GetString() + buf.GetSize());
  dest.push_back('\n');
}

std::unique_ptr<spdlog::formatter> JsonFormatter::clone() const {
  return std::make_unique<JsonFormatter>();
}

}  // namespace egress::log
