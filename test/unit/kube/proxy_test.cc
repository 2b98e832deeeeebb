// Which proxy carries the API server connection: Go's httpproxy rules (NO_PROXY entries of every
// shape, loopback never proxied) and kubeconfig proxy-url parsing.
#include "pkg/kube/proxy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/testutil/scoped_env.h"

namespace egress::kube {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(NoProxy, EntriesAsGoMatchesThem) {
  struct Case {
    const char* noProxy;
    const char* host;
    const char* port;
    bool bypass;
  };
  const Case cases[] = {
      {"", "api.example.com", "443", false},
      {"*", "api.example.com", "443", true},
      {"example.com", "example.com", "443", true},
      {"example.com", "api.example.com", "443", true},
      {"example.com", "badexample.com", "443", false},
      {".example.com", "example.com", "443", false},
      {".example.com", "api.example.com", "443", true},
      {"*.example.com", "example.com", "443", false},
      {"*.example.com", "api.example.com", "443", true},
      {"Example.COM ", "API.example.com", "443", true},
      {"example.com:6443", "api.example.com", "443", false},
      {"example.com:6443", "api.example.com", "6443", true},
      {"other.org, example.com", "api.example.com", "443", true},
      {"10.0.0.1", "10.0.0.1", "6443", true},
      {"10.0.0.1", "10.0.0.2", "6443", false},
      {"10.0.0.1:443", "10.0.0.1", "6443", false},
      {"10.0.0.0/8", "10.20.30.40", "6443", true},
      {"10.0.0.0/8", "11.0.0.1", "6443", false},
      {"10.0.0.0/8", "api.example.com", "6443", false},
      {"192.168.1.0/33", "192.168.1.1", "443", false},
      {"2001:db8::/32", "2001:db8::1", "443", true},
      {"2001:db8::/32", "2001:db9::1", "443", false},
      {"[2001:db8::1]:443", "2001:db8::1", "443", true},
      {"2001:db8::1", "2001:db8::1", "443", true},
      {",,  ,", "api.example.com", "443", false},
      // Go never proxies localhost and loopback, whatever NO_PROXY says.
      {"", "localhost", "443", true},
      {"", "127.0.0.1", "443", true},
      {"", "127.1.2.3", "443", true},
      {"", "::1", "443", true},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(bypassesProxy(c.noProxy, c.host, c.port), c.bypass)
        << "NO_PROXY=\"" << c.noProxy << "\" host " << c.host << ":" << c.port;
  }
}

TEST(ProxyUrl, ParsesSchemesPortsAndCredentials) {
  auto plain = parseProxyUrl("http://proxy.corp:3128", false);
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->tls);
  EXPECT_EQ(plain->host, "proxy.corp");
  EXPECT_EQ(plain->port, "3128");
  EXPECT_EQ(plain->authorization(), "");

  auto tls = parseProxyUrl("https://proxy.corp", false);
  ASSERT_TRUE(tls);
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->port, "443");

  auto withAuth = parseProxyUrl("http://j%40doe:p%3Ass@[fd00::1]:8080/", false);
  ASSERT_TRUE(withAuth) << withAuth.error().message();
  EXPECT_EQ(withAuth->host, "fd00::1");
  EXPECT_EQ(withAuth->username, "j@doe");
  EXPECT_EQ(withAuth->password, "p:ss");
  EXPECT_EQ(withAuth->authorization(), "Basic akBkb2U6cDpzcw==");
  EXPECT_EQ(withAuth->display(), "http://[fd00::1]:8080");

  // The environment's rule: no scheme means http://. A kubeconfig proxy-url needs one.
  auto bare = parseProxyUrl("proxy.corp:3128", true);
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->port, "3128");
  EXPECT_FALSE(parseProxyUrl("proxy.corp:3128", false));

  auto socks = parseProxyUrl("socks5://user:secret@proxy:1080", false);
  ASSERT_FALSE(socks);
  EXPECT_THAT(socks.error().message(), HasSubstr("\"socks5\" is not supported"));
  EXPECT_THAT(socks.error().message(), Not(HasSubstr("secret")));
  EXPECT_FALSE(parseProxyUrl("http://proxy:port", false));
  EXPECT_FALSE(parseProxyUrl("http://:3128", false));
}

TEST(ProxyFor, ConfiguredUrlWinsAndEnvironmentFollowsTheScheme) {
  ProxyEnvironment env{"http://plain-proxy:80", "http://tls-proxy:3128", "internal.corp"};
  auto https = proxyFor(true, "api.example.com", "443", "", env);
  ASSERT_TRUE(https && *https);
  EXPECT_EQ((*https)->host, "tls-proxy");
  auto http = proxyFor(false, "api.example.com", "80", "", env);
  ASSERT_TRUE(http && *http);
  EXPECT_EQ((*http)->host, "plain-proxy");
  auto excepted = proxyFor(true, "api.internal.corp", "443", "", env);
  ASSERT_TRUE(excepted);
  EXPECT_FALSE(*excepted);

  // proxy-url applies to every request, even to loopback and NO_PROXY hosts (http.ProxyURL).
  auto configured = proxyFor(true, "127.0.0.1", "6443", "https://kube-proxy:8443", env);
  ASSERT_TRUE(configured && *configured);
  EXPECT_EQ((*configured)->host, "kube-proxy");
  EXPECT_FALSE(proxyFor(true, "127.0.0.1", "6443", "ftp://x", env));

  // A malformed environment value is ignored, as Go ignores it.
  ProxyEnvironment broken{"", "http://proxy:notaport", ""};
  auto ignored = proxyFor(true, "api.example.com", "443", "", broken);
  ASSERT_TRUE(ignored);
  EXPECT_FALSE(*ignored);
}

TEST(ProxyEnvironment, UpperCaseWinsOverLowerCase) {
  testutil::ScopedEnv upper("HTTPS_PROXY", "http://upper:1");
  testutil::ScopedEnv lower("https_proxy", "http://lower:2");
  testutil::ScopedEnv noUpper("NO_PROXY", nullptr);
  testutil::ScopedEnv noLower("no_proxy", "lower.example");
  testutil::ScopedEnv httpUpper("HTTP_PROXY", "");
  testutil::ScopedEnv httpLower("http_proxy", "http://plain:3");
  auto env = ProxyEnvironment::fromProcess();
  EXPECT_EQ(env.httpsProxy, "http://upper:1");
  EXPECT_EQ(env.noProxy, "lower.example");
  EXPECT_EQ(env.httpProxy, "http://plain:3") << "an empty HTTP_PROXY counts as unset";
}

}  // namespace
}  // namespace egress::kube
