#include "pkg/kube/exec_credential.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "pkg/apis/meta/time.h"
#include "test/testutil/run_sync.h"
#include "test/testutil/temp_dir.h"
#include "test/unit/kube/sync_credentials.h"
#include <signal.h>
#include <stdlib.h>

namespace egress::kube {
namespace {

namespace fs = std::filesystem;
using std::chrono::system_clock;
using ::testing::HasSubstr;
using ::testing::Not;

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

system_clock::time_point at(int hour, int minute, int second) {
  using namespace std::chrono;
  return sys_days(year{2026} / November / 30) + hours(hour) + minutes(minute) + seconds(second);
}

// A temp folder with shell-script plugins; the scripts append to calls.log on every run.
class ExecCredentialTest : public ::testing::Test {
 protected:
  // `body` runs after the call is logged; it prints the ExecCredential.
  std::string script(const std::string& name, const std::string& body) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\necho run >> \"$CALLS\"\n" << body;
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }

  ExecConfig config(const std::string& command) const {
    ExecConfig c;
    c.apiVersion = std::string(kExecApiVersionV1);
    c.command = command;
    c.env = {{"CALLS", calls()}};
    return c;
  }

  std::shared_ptr<ExecCredentialProvider> provider(
      ExecConfig c, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    ExecOptions options;
    options.timeout = timeout;
    options.clock = [this] { return now_; };
    auto p = ExecCredentialProvider::create(std::move(c), {}, options);
    EXPECT_TRUE(p) << p.error().message();
    return p ? *p : nullptr;
  }

  std::string calls() const { return dir_ + "/calls.log"; }
  int runs() const {
    const std::string log = readFile(calls());
    return static_cast<int>(std::count(log.begin(), log.end(), '\n'));
  }

  testutil::TempDir tmp_{"exec_credential_test"};
  std::string dir_ = tmp_.path();
  system_clock::time_point now_ = at(9, 0, 0);
};

// Prints a v1 credential whose token counts the runs, expiring at 10:00.
constexpr const char* kCountingPlugin = R"(n=$(wc -l < "$CALLS" | tr -d ' ')
cat <<EOF
{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
 "status":{"token":"token-$n","expirationTimestamp":"2026-11-30T10:00:00Z"}}
EOF
)";

TEST_F(ExecCredentialTest, PassesEnvArgsAndExecInfo) {
  const std::string info = dir_ + "/info.json";
  const std::string seen = dir_ + "/seen.txt";
  auto c = config(script("plugin.sh", R"sh(printf '%s' "$KUBERNETES_EXEC_INFO" > "$INFO"
{ echo "greeting=$GREETING"; echo "parent=$EXEC_TEST_PARENT"; echo "args=$1,$2"
  if [ -t 0 ]; then echo stdin=tty; else echo "stdin=$(cat | wc -c | tr -d ' ')"; fi
} > "$SEEN"
cat <<EOF
{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"abc"}}
EOF
)sh"));
  c.args = {"first arg", "--second"};
  c.env.push_back({"INFO", info});
  c.env.push_back({"SEEN", seen});
  c.env.push_back({"GREETING", "overridden"});
  c.env.push_back({"GREETING", "hello world"});  // the later entry wins
  ::setenv("EXEC_TEST_PARENT", "inherited", 1);
  auto p = provider(c);
  auto creds = syncCredentials(*p);
  ::unsetenv("EXEC_TEST_PARENT");
  ASSERT_TRUE(creds) << creds.error().message();
  EXPECT_EQ(creds->bearerToken, "abc");
  EXPECT_EQ(creds->clientCertPem, "");
  EXPECT_EQ(readFile(info),
            R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
            R"("spec":{"interactive":false}})");
  EXPECT_EQ(readFile(seen),
            "greeting=hello world\nparent=inherited\nargs=first arg,--second\nstdin=0\n");
}

TEST_F(ExecCredentialTest, CachesUntilExpiryThenRuns) {
  auto p = provider(config(script("plugin.sh", kCountingPlugin)));
  auto first = syncCredentials(*p);
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->bearerToken, "token-1");
  now_ = at(9, 59, 59);
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "token-1");
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "token-1");
  EXPECT_EQ(runs(), 1);
  now_ = at(10, 0, 0);  // expired
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "token-2");
  EXPECT_EQ(runs(), 2);
  // The new credential carries the same (now past) expiry, so every call runs the plugin.
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "token-3");
}

TEST_F(ExecCredentialTest, InvalidateForcesARun) {
  auto p = provider(config(script("plugin.sh", kCountingPlugin)));
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "token-1");
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "token-1");
  p->invalidate(*syncCredentials(*p));
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "token-2");
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "token-2");
  EXPECT_EQ(runs(), 2);
}

TEST_F(ExecCredentialTest, NoExpiryCachesUntilInvalidated) {
  auto p = provider(config(script("plugin.sh", R"(cat <<EOF
{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"forever"}}
EOF
)")));
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "forever");
  now_ = at(23, 0, 0);
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "forever");
  EXPECT_EQ(runs(), 1);
  p->invalidate(*syncCredentials(*p));
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "forever");
  EXPECT_EQ(runs(), 2);
}

TEST_F(ExecCredentialTest, ConcurrentCallersShareOneRun) {
  auto p = provider(config(script("plugin.sh", std::string("sleep 0.2\n") + kCountingPlugin)));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] { EXPECT_EQ(syncCredentials(*p)->bearerToken, "token-1"); });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(runs(), 1);
}

TEST_F(ExecCredentialTest, ReturnsClientCertificate) {
  auto p = provider(config(script("plugin.sh", R"(cat <<'EOF'
{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{
 "clientCertificateData":"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
 "clientKeyData":"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"}}
EOF
)")));
  auto creds = syncCredentials(*p);
  ASSERT_TRUE(creds) << creds.error().message();
  EXPECT_EQ(creds->bearerToken, "");
  EXPECT_EQ(creds->clientCertPem, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  EXPECT_EQ(creds->clientKeyPem, "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n");
}

TEST_F(ExecCredentialTest, TokenWithALineBreakIsRefused) {
  const std::string command = script("plugin.sh", R"(cat <<'EOF'
{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
 "status":{"token":"abc\r\nX-Injected: yes"}}
EOF
)");
  auto creds = syncCredentials(*provider(config(command)));
  ASSERT_FALSE(creds);
  EXPECT_THAT(creds.error().message(), HasSubstr(command));
  EXPECT_THAT(creds.error().message(), HasSubstr("control character"));
}

TEST_F(ExecCredentialTest, AcceptsV1Beta1) {
  auto c = config(script("plugin.sh", R"(cat <<EOF
{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"beta"}}
EOF
)"));
  c.apiVersion = std::string(kExecApiVersionV1Beta1);
  auto creds = syncCredentials(*provider(c));
  ASSERT_TRUE(creds) << creds.error().message();
  EXPECT_EQ(creds->bearerToken, "beta");
}

TEST_F(ExecCredentialTest, FailingPluginReportsCommandAndExitStatus) {
  const std::string command = script("plugin.sh", "exit 3\n");
  auto creds = syncCredentials(*provider(config(command)));
  ASSERT_FALSE(creds);
  EXPECT_EQ(creds.error().kind(), Error::Kind::Config);
  EXPECT_THAT(creds.error().message(), HasSubstr(command));
  EXPECT_THAT(creds.error().message(), HasSubstr("exit status 3"));
}

TEST_F(ExecCredentialTest, RejectsWrongApiVersion) {
  const std::string command = script("plugin.sh", R"(cat <<EOF
{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}}
EOF
)");
  auto creds = syncCredentials(*provider(config(command)));
  ASSERT_FALSE(creds);
  EXPECT_THAT(creds.error().message(), HasSubstr(command));
  EXPECT_THAT(creds.error().message(), HasSubstr("client.authentication.k8s.io/v1beta1"));
  EXPECT_THAT(creds.error().message(), HasSubstr("apiVersion"));
}

TEST_F(ExecCredentialTest, TimeoutKillsThePlugin) {
  const std::string command = script("plugin.sh", "echo started >&2\nsleep 30\necho '{}'\n");
  const auto start = std::chrono::steady_clock::now();
  auto creds = syncCredentials(*provider(config(command), std::chrono::milliseconds(300)));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(creds);
  EXPECT_THAT(creds.error().message(), HasSubstr("timed out after 300ms"));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

TEST_F(ExecCredentialTest, BackgroundChildHoldingStdoutDoesNotBlock) {
  // The plugin exits at once but leaves a child with its stdout open (a cached daemon, say).
  auto p = provider(config(script("plugin.sh", R"(sleep 5 &
cat <<EOF
{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}}
EOF
)")));
  const auto start = std::chrono::steady_clock::now();
  auto creds = syncCredentials(*p);
  ASSERT_TRUE(creds) << creds.error().message();
  EXPECT_EQ(creds->bearerToken, "t");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

// True once `pid` has exited (gone, or a zombie waiting for whoever adopted it).
bool processGone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) {
    return true;
  }
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

TEST_F(ExecCredentialTest, PluginRunDoesNotBlockTheIoContext) {
  auto p = provider(config(script("plugin.sh", std::string("sleep 2\n") + kCountingPlugin)));
  boost::asio::io_context ioc;
  int ticks = 0;
  int ticksWhenDone = -1;
  bool done = false;
  boost::asio::steady_timer ticker(ioc);
  std::function<void()> tick = [&] {
    ticker.expires_after(std::chrono::milliseconds(20));
    ticker.async_wait([&](boost::system::error_code ec) {
      if (!ec && !done) {
        ++ticks;
        tick();
      }
    });
  };
  tick();
  auto task = [](std::shared_ptr<ExecCredentialProvider> p, int* ticks, int* ticksWhenDone,
                 bool* done) -> net::awaitable<Result<Credentials>> {
    auto creds = co_await p->credentials();
    *ticksWhenDone = *ticks;
    *done = true;
    co_return creds;
  };
  auto creds = testutil::runSync(ioc, task(p, &ticks, &ticksWhenDone, &done));
  ASSERT_TRUE(creds) << creds.error().message();
  EXPECT_EQ(creds->bearerToken, "token-1");
  // The timer on the same io_context kept firing while the plugin slept.
  EXPECT_GE(ticksWhenDone, 1);
}

TEST_F(ExecCredentialTest, ConcurrentCoroutinesShareOneRun) {
  auto p = provider(config(script("plugin.sh", std::string("sleep 0.5\n") + kCountingPlugin)));
  boost::asio::io_context ioc;
  std::vector<std::optional<Result<Credentials>>> results(5);
  for (auto& r : results) {
    testutil::spawnInto(ioc, p->credentials(), r);
  }
  ioc.run();
  for (auto& r : results) {
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(*r) << (*r).error().message();
    EXPECT_EQ((*r)->bearerToken, "token-1");
  }
  EXPECT_EQ(runs(), 1);
}

TEST_F(ExecCredentialTest, FailingPluginIsNotRerunWithinTheBackoff) {
  auto p = provider(config(script("plugin.sh", "exit 1\n")));
  auto first = syncCredentials(*p);
  ASSERT_FALSE(first);
  auto again = syncCredentials(*p);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().message(), first.error().message());  // the cached failure
  EXPECT_EQ(runs(), 1);
  now_ += ExecCredentialProvider::kInitialBackoff;
  EXPECT_FALSE(syncCredentials(*p));
  EXPECT_EQ(runs(), 2);
  // The wait doubled.
  now_ += ExecCredentialProvider::kInitialBackoff;
  EXPECT_FALSE(syncCredentials(*p));
  EXPECT_EQ(runs(), 2);
  now_ += ExecCredentialProvider::kInitialBackoff;
  EXPECT_FALSE(syncCredentials(*p));
  EXPECT_EQ(runs(), 3);
}

TEST_F(ExecCredentialTest, BackoffIsCappedAndResetBySuccess) {
  const std::string fail = dir_ + "/fail";
  std::ofstream(fail) << "1";
  auto c = config(
      script("plugin.sh", "if [ -e \"$FAIL\" ]; then exit 1; fi\n" + std::string(kCountingPlugin)));
  c.env.push_back({"FAIL", fail});
  auto p = provider(c);
  for (int i = 0; i < 20; ++i) {
    EXPECT_FALSE(syncCredentials(*p));
    now_ += ExecCredentialProvider::kMaxBackoff;
  }
  EXPECT_EQ(runs(), 20);  // never waits longer than the cap
  fs::remove(fail);
  EXPECT_TRUE(syncCredentials(*p));
  std::ofstream(fail) << "1";
  auto used = syncCredentials(*p);
  ASSERT_TRUE(used);
  p->invalidate(*used);
  EXPECT_FALSE(syncCredentials(*p));
  EXPECT_EQ(runs(), 22);
  // After a success the next failure waits the initial backoff again, not the cap.
  now_ += ExecCredentialProvider::kInitialBackoff;
  EXPECT_FALSE(syncCredentials(*p));
  EXPECT_EQ(runs(), 23);
}

TEST_F(ExecCredentialTest, UnauthorizedWithAStaleCredentialDoesNotRerun) {
  auto p = provider(config(script("plugin.sh", kCountingPlugin)));
  auto first = syncCredentials(*p);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->bearerToken, "token-1");
  p->invalidate(*first);  // the first request to get a 401 refreshes
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "token-2");
  p->invalidate(*first);  // a second request that carried token-1 does not
  EXPECT_EQ(syncCredentials(*p)->bearerToken, "token-2");
  EXPECT_EQ(runs(), 2);
}

TEST_F(ExecCredentialTest, HangingPluginIsKilledAtTheTimeout) {
  const std::string pids = dir_ + "/pids";
  auto c =
      config(script("plugin.sh", "echo $$ > \"$PIDS\"\nsleep 30 &\necho $! >> \"$PIDS\"\nwait\n"));
  c.env.push_back({"PIDS", pids});
  auto creds = syncCredentials(*provider(c, std::chrono::milliseconds(300)));
  ASSERT_FALSE(creds);
  EXPECT_THAT(creds.error().message(), HasSubstr("timed out after 300ms"));
  std::ifstream in(pids);
  pid_t plugin = 0;
  pid_t child = 0;
  in >> plugin >> child;
  ASSERT_GT(plugin, 0);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(processGone(plugin));  // killed and reaped before credentials() returned
  // Its helper was in the same process group and got the same SIGKILL; it only has to die.
  for (int i = 0; i < 500 && !processGone(child); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(processGone(child));
}

TEST_F(ExecCredentialTest, StderrIsLoggedOnceAndNotInTheError) {
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  const std::string command = script("plugin.sh", "echo 'please run: login-xyz' >&2\nexit 3\n");
  auto p = provider(config(command));
  auto creds = syncCredentials(*p);
  auto again = syncCredentials(*p);  // within the backoff: no run, no second log line
  spdlog::set_default_logger(previous);
  ASSERT_FALSE(creds);
  EXPECT_THAT(creds.error().message(), Not(HasSubstr("login-xyz")));
  ASSERT_FALSE(again);
  EXPECT_THAT(again.error().message(), Not(HasSubstr("login-xyz")));
  const std::string text = log.str();
  const size_t at = text.find("please run: login-xyz");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.find("please run: login-xyz", at + 1), std::string::npos) << text;
  EXPECT_THAT(text, HasSubstr(command));
}

TEST_F(ExecCredentialTest, ProviderMayGoAwayWhileThePluginRuns) {
  auto p = provider(config(script("plugin.sh", std::string("sleep 0.3\n") + kCountingPlugin)));
  boost::asio::io_context ioc;
  std::optional<Result<Credentials>> result;
  testutil::spawnInto(ioc, p->credentials(), result);
  ioc.poll();
  p.reset();  // the RestClient and its config are gone; the run finishes on shared state
  ioc.run();
  ASSERT_TRUE(result.has_value());
  ASSERT_TRUE(*result) << (*result).error().message();
  EXPECT_EQ((*result)->bearerToken, "token-1");
}

TEST_F(ExecCredentialTest, MissingCommandShowsInstallHint) {
  auto c = config("egress-no-such-plugin-xyz");
  c.installHint = "install it with: apt install egress-plugin\n";
  auto creds = syncCredentials(*provider(c));
  ASSERT_FALSE(creds);
  EXPECT_THAT(creds.error().message(), HasSubstr("\"egress-no-such-plugin-xyz\""));
  EXPECT_THAT(creds.error().message(), HasSubstr("not found in PATH"));
  EXPECT_THAT(creds.error().message(), HasSubstr("apt install egress-plugin"));
}

TEST(ExecConfigValidation, RejectsWhatCannotWork) {
  ExecConfig c;
  c.apiVersion = std::string(kExecApiVersionV1);
  c.command = "get-token";
  EXPECT_TRUE(validateExecConfig(c));
  c.interactiveMode = "IfAvailable";
  EXPECT_TRUE(validateExecConfig(c));
  c.interactiveMode = "Always";
  auto always = validateExecConfig(c);
  ASSERT_FALSE(always);
  EXPECT_EQ(always.error().kind(), Error::Kind::Config);
  EXPECT_THAT(always.error().message(), HasSubstr("interactiveMode Always"));
  c.interactiveMode = "Sometimes";
  EXPECT_FALSE(validateExecConfig(c));
  c.interactiveMode = "Never";
  c.apiVersion = "client.authentication.k8s.io/v1alpha1";
  EXPECT_FALSE(validateExecConfig(c));
  c.apiVersion = std::string(kExecApiVersionV1);
  c.command = "";
  EXPECT_FALSE(validateExecConfig(c));
  c.command = "x";
  c.env = {{"A=B", "c"}};
  EXPECT_FALSE(validateExecConfig(c));
  EXPECT_FALSE(ExecCredentialProvider::create(c, {}));
}

TEST(ExecCredentialParse, ChecksShapeAndFields) {
  const std::string v1(kExecApiVersionV1);
  const auto parse = [&](const std::string& status) {
    return parseExecCredential(
        R"({"apiVersion":")" + v1 + R"(","kind":"ExecCredential","status":)" + status + "}", v1);
  };
  auto ok = parse(R"({"token":"t","expirationTimestamp":"2026-11-30T10:00:00Z"})");
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(ok->token, "t");
  EXPECT_EQ(ok->expiration, at(10, 0, 0));
  EXPECT_FALSE(parse("{}"));
  EXPECT_FALSE(parse("null"));
  EXPECT_FALSE(parse(R"({"token":42})"));
  EXPECT_FALSE(parse(R"({"clientCertificateData":"c"})"));  // a certificate without its key
  EXPECT_FALSE(parse(R"({"token":"t","expirationTimestamp":"tomorrow"})"));
  EXPECT_FALSE(parseExecCredential("not json", v1));
  EXPECT_FALSE(parseExecCredential("[]", v1));
  EXPECT_FALSE(parseExecCredential(R"({"apiVersion":")" + v1 + R"(","status":{"token":"t"}})", v1));
  auto wrongKind = parseExecCredential(
      R"({"apiVersion":")" + v1 + R"(","kind":"Secret","status":{"token":"t"}})", v1);
  ASSERT_FALSE(wrongKind);
  EXPECT_THAT(wrongKind.error().message(), HasSubstr("kind \"Secret\""));
}

TEST(ExecCredentialParse, Rfc3339) {
  using namespace std::chrono;
  EXPECT_EQ(meta::parseRfc3339("2026-11-30T10:00:00Z"), at(10, 0, 0));
  EXPECT_EQ(meta::parseRfc3339("2026-11-30t10:00:00z"), at(10, 0, 0));
  EXPECT_EQ(meta::parseRfc3339("2026-11-30T12:30:00+02:30"), at(10, 0, 0));
  EXPECT_EQ(meta::parseRfc3339("2026-11-30T05:00:00-05:00"), at(10, 0, 0));
  EXPECT_EQ(meta::parseRfc3339("2026-11-30T10:00:00.5Z"), at(10, 0, 0) + milliseconds(500));
  EXPECT_EQ(meta::parseRfc3339("2026-11-30T10:00:00.123456789123Z"),
            at(10, 0, 0) + nanoseconds(123456789));
  EXPECT_EQ(meta::parseRfc3339("1970-01-01T00:00:00Z"), system_clock::time_point{});
  for (const char* bad :
       {"", "2026-11-30", "2026-11-30T10:00:00", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
        "2026-11-30T24:00:00Z", "2026-11-30T10:00:00.Z", "2026-11-30T10:00:00+0200",
        "2026-11-30 10:00:00Z", "2026-11-3aT10:00:00Z", "2026-11-30T10:00:00Zjunk"}) {
    EXPECT_EQ(meta::parseRfc3339(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace egress::kube
