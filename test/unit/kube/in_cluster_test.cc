#include "pkg/kube/in_cluster.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pkg/kube/file_credentials.h"
#include "test/testutil/scoped_env.h"
#include "test/testutil/temp_dir.h"
#include "test/unit/kube/sync_credentials.h"
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

namespace egress::kube {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using std::chrono::system_clock;
using ::testing::HasSubstr;

using testutil::ScopedEnv;

class TempDirTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& contents) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
    return path;
  }
  // As the kubelet's atomic writer does: a new file renamed over the old one (a new inode).
  void replace(const std::string& name, const std::string& contents) {
    write(name + ".tmp", contents);
    fs::rename(dir_ + "/" + name + ".tmp", dir_ + "/" + name);
  }

  testutil::TempDir tmp_{"in_cluster_test"};
  std::string dir_ = tmp_.path();
};

using InClusterTest = TempDirTest;

TEST_F(InClusterTest, BuildsConfigFromServiceAccount) {
  write("token", "sa-token-1\n");
  write("ca.crt", "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
  write("namespace", "egress-system\n");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  system_clock::time_point now{};
  auto config = inClusterConfig({dir_, [&] { return now; }});
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->caPem, "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
  EXPECT_EQ(config->defaultNamespace, "egress-system");
  EXPECT_FALSE(config->insecureSkipTlsVerify);
  ASSERT_NE(config->auth, nullptr);
  EXPECT_EQ(syncCredentials(*config->auth)->bearerToken, "sa-token-1");
  // The token is a rotating file, not a copy.
  replace("token", "sa-token-2\n");
  now += seconds(2);
  EXPECT_EQ(syncCredentials(*config->auth)->bearerToken, "sa-token-2");
}

TEST_F(InClusterTest, BracketsIpv6Hosts) {
  write("token", "t");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "fd00:10:96::1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "6443");
  auto config = inClusterConfig({dir_, {}});
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->server, "https://[fd00:10:96::1]:6443");
}

TEST_F(InClusterTest, DefaultsWithoutNamespaceOrCa) {
  write("token", "t");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  auto config = inClusterConfig({dir_, {}});
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->defaultNamespace, "default");
  EXPECT_EQ(config->caPem, "");
}

TEST_F(InClusterTest, NotInAClusterWithoutEnv) {
  write("token", "t");
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", nullptr);
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
    auto config = inClusterConfig({dir_, {}});
    ASSERT_FALSE(config);
    EXPECT_EQ(config.error().kind(), Error::Kind::Config);
    EXPECT_THAT(config.error().message(), HasSubstr("not running in a cluster"));
  }
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    ScopedEnv port("KUBERNETES_SERVICE_PORT", nullptr);
    EXPECT_FALSE(inClusterConfig({dir_, {}}));
  }
}

TEST_F(InClusterTest, MissingTokenIsAnError) {
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  auto config = inClusterConfig({dir_, {}});
  ASSERT_FALSE(config);
  EXPECT_THAT(config.error().message(), HasSubstr(dir_ + "/token"));
}

using TokenFileProviderTest = TempDirTest;

TEST_F(TokenFileProviderTest, ReReadsWhenTheFileChanges) {
  const std::string path = write("token", "  first-token \n");
  system_clock::time_point now{};
  TokenFileProvider provider(path, [&] { return now; });
  auto creds = syncCredentials(provider);
  ASSERT_TRUE(creds) << creds.error().message();
  EXPECT_EQ(creds->bearerToken, "first-token");  // whitespace trimmed

  write("token", "second-token-longer\n");  // rewritten in place: same inode, new size
  now += std::chrono::milliseconds(500);
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "first-token");  // not stat()ed yet
  now += std::chrono::milliseconds(500);
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "second-token-longer");

  replace("token", "third-token\n");  // atomic swap: new inode
  now += seconds(1);
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "third-token");
}

TEST_F(TokenFileProviderTest, ReReadsEveryMinuteEvenIfStatLooksTheSame) {
  const std::string path = write("token", "token-aaaa\n");
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  system_clock::time_point now{};
  TokenFileProvider provider(path, [&] { return now; });
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "token-aaaa");

  // Same inode, same size, and the old mtime put back: stat cannot see the change.
  write("token", "token-bbbb\n");
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  now += seconds(30);
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "token-aaaa");
  now += seconds(30);
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "token-bbbb");
}

TEST_F(TokenFileProviderTest, KeepsTheOldTokenIfTheFileVanishesUntilInvalidated) {
  const std::string path = write("token", "kept\n");
  system_clock::time_point now{};
  TokenFileProvider provider(path, [&] { return now; });
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "kept");
  fs::remove(path);
  now += seconds(61);
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "kept");
  provider.invalidate(Credentials{"kept", {}, {}});
  auto gone = syncCredentials(provider);
  ASSERT_FALSE(gone);
  EXPECT_THAT(gone.error().message(), HasSubstr(path));
  write("token", "back\n");
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "back");
}

TEST_F(TokenFileProviderTest, InvalidateReReadsImmediately) {
  const std::string path = write("token", "one\n");
  system_clock::time_point now{};
  TokenFileProvider provider(path, [&] { return now; });
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "one");
  write("token", "two\n");
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "one");
  provider.invalidate(Credentials{"one", {}, {}});
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "two");
}

TEST_F(TokenFileProviderTest, EmptyFileIsAnError) {
  const std::string path = write("token", " \n\n");
  TokenFileProvider provider(path);
  auto creds = syncCredentials(provider);
  ASSERT_FALSE(creds);
  EXPECT_THAT(creds.error().message(), HasSubstr("is empty"));
}

TEST_F(TokenFileProviderTest, InvalidateWithAStaleTokenKeepsTheCurrentOne) {
  const std::string path = write("token", "one\n");
  system_clock::time_point now{};
  TokenFileProvider provider(path, [&] { return now; });
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "one");
  replace("token", "two\n");
  now += seconds(2);
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "two");
  fs::remove(path);
  // A request that still carried "one" got a 401: "two" is not dropped for it.
  provider.invalidate(Credentials{"one", {}, {}});
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "two");
}

TEST_F(TokenFileProviderTest, TokenWithALineBreakIsRefused) {
  const std::string path = write("token", "abc\r\nX-Injected: yes\n");
  TokenFileProvider provider(path);
  auto creds = syncCredentials(provider);
  ASSERT_FALSE(creds);
  EXPECT_THAT(creds.error().message(), HasSubstr(path));
  EXPECT_THAT(creds.error().message(), HasSubstr("control character"));
}

TEST(StaticTokenProvider, ReturnsTheToken) {
  StaticTokenProvider provider("abc");
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "abc");
  provider.invalidate(Credentials{});
  EXPECT_EQ(syncCredentials(provider)->bearerToken, "abc");
}

}  // namespace
}  // namespace egress::kube
