#include "pkg/log/log.h"

#include <string>

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <spdlog/details/log_msg.h>
#include <spdlog/spdlog.h>

#include "pkg/log/json_formatter.h"

namespace egress::log {
namespace {

TEST(Log, ParsesLevelsAndFormats) {
  EXPECT_EQ(parseLevel("debug"), spdlog::level::debug);
  EXPECT_EQ(parseLevel("error"), spdlog::level::err);
  EXPECT_EQ(parseLevel("verbose"), std::nullopt);
  EXPECT_EQ(parseLevel(""), std::nullopt);
  EXPECT_EQ(parseFormat("json"), Format::Json);
  EXPECT_EQ(parseFormat("text"), Format::Text);
  EXPECT_EQ(parseFormat("JSON"), std::nullopt);
}

TEST(JsonFormatter, EscapesMessageIntoOneValidObjectPerLine) {
  const std::string payload = "quote \" backslash \\ newline \n tab \t end";
  spdlog::details::log_msg msg("egress", spdlog::level::warn, payload);
  JsonFormatter formatter;
  spdlog::memory_buf_t out;
  formatter.format(msg, out);
  const std::string line(out.data(), out.size());
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "exactly one line";

  rapidjson::Document d;
  d.Parse(line.data(), line.size() - 1);
  ASSERT_FALSE(d.HasParseError()) << line;
  EXPECT_EQ(std::string(d["msg"].GetString()), payload);
  EXPECT_EQ(std::string(d["level"].GetString()), "warning");
  EXPECT_EQ(std::string(d["logger"].GetString()), "egress");
  const std::string ts = d["ts"].GetString();
  EXPECT_EQ(ts.size(), 24u) << ts;  // 2026-11-30T03:27:13.123Z
  EXPECT_EQ(ts.back(), 'Z');
}

TEST(Log, ConfigureCanRunTwice) {
  configure({spdlog::level::debug, Format::Json});
  configure({spdlog::level::info, Format::Text});
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::info);
}

}  // namespace
}  // namespace egress::log
