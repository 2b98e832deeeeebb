#include "pkg/controllerruntime/bind_address.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace egress::controllerruntime {
namespace {

using ::testing::HasSubstr;

TEST(BindAddressTest, ZeroAndEmptyDisable) {
  for (const char* text : {"0", ""}) {
    auto parsed = parseBindAddress(text);
    ASSERT_TRUE(parsed) << text << ": " << parsed.error();
    EXPECT_FALSE(parsed->has_value()) << text;
  }
}

TEST(BindAddressTest, GoFormsParse) {
  struct Case {
    const char* text;
    const char* host;  // "" = every interface
    unsigned short port;
  };
  const Case cases[] = {
      {":8080", "", 8080},
      {":0", "", 0},
      {"127.0.0.1:8080", "127.0.0.1", 8080},
      {"0.0.0.0:9090", "0.0.0.0", 9090},
      {"[::1]:8081", "::1", 8081},
      {"[::]:65535", "::", 65535},
      {"[fe80::1%lo]:80", "fe80::1%lo", 80},
      {"localhost:8080", "127.0.0.1", 8080},
  };
  for (const auto& c : cases) {
    auto parsed = parseBindAddress(c.text);
    ASSERT_TRUE(parsed) << c.text << ": " << parsed.error();
    ASSERT_TRUE(parsed->has_value()) << c.text;
    const BindAddress& address = **parsed;
    EXPECT_EQ(address.text, c.text);
    EXPECT_EQ(address.port, c.port) << c.text;
    if (*c.host == '\0') {
      EXPECT_FALSE(address.host.has_value()) << c.text;
    } else {
      ASSERT_TRUE(address.host.has_value()) << c.text;
      EXPECT_EQ(address.host->to_string(), c.host) << c.text;
    }
  }
}

TEST(BindAddressTest, BadFormsAreErrorsQuotingTheAddress) {
  for (const char* text : {"8080", "127.0.0.1", ":", ":http", ":-1", ":65536", ":80x", "::1:8080",
                           "[::1]", "[::1:8080", "[127.0.0.1]:80", "example.com:80", "300.1.1.1:80",
                           " :8080", ":8080 ", "[::1]x:80", ":0x10", ":+80"}) {
    auto parsed = parseBindAddress(text);
    ASSERT_FALSE(parsed) << text << " parsed";
    EXPECT_THAT(parsed.error(), HasSubstr(std::string("\"") + text + "\"")) << text;
  }
}

}  // namespace
}  // namespace egress::controllerruntime
