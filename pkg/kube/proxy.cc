#include "pkg/kube/proxy.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "pkg/kube/base64.h"
#include <arpa/inet.h>

namespace egress::kube {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) {
    return {};
  }
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

bool allDigits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::optional<std::string> percentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16)));
    i += 2;
  }
  return out;
}

// "host", "host:port", "[v6]", "[v6]:port" → host (no brackets) and port ("" if none).
std::optional<std::pair<std::string, std::string>> splitHostPort(const std::string& s) {
  if (!s.empty() && s.front() == '[') {
    const auto close = s.find(']');
    if (close == std::string::npos) {
      return std::nullopt;
    }
    std::string rest = s.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') {
      return std::nullopt;
    }
    return std::make_pair(s.substr(1, close - 1), rest.empty() ? "" : rest.substr(1));
  }
  const auto colon = s.find(':');
  if (colon == std::string::npos) {
    return std::make_pair(s, std::string());
  }
  if (s.find(':', colon + 1) != std::string::npos) {
    return std::make_pair(s, std::string());  // a bare IPv6 address
  }
  return std::make_pair(s.substr(0, colon), s.substr(colon + 1));
}

// An IP address as 16 bytes, IPv4 mapped into IPv6 (::ffff:a.b.c.d) so that the two spellings
// of one IPv4 address compare equal, as Go's net.IP does.
using Ip = std::array<unsigned char, 16>;

std::optional<Ip> parseIp(const std::string& s) {
  Ip ip{};
  in_addr v4{};
  if (inet_pton(AF_INET, s.c_str(), &v4) == 1) {
    ip[10] = 0xff;
    ip[11] = 0xff;
    std::memcpy(ip.data() + 12, &v4, 4);
    return ip;
  }
  if (inet_pton(AF_INET6, s.c_str(), ip.data()) == 1) {
    return ip;
  }
  return std::nullopt;
}

bool isV4(const Ip& ip) {
  static constexpr std::array<unsigned char, 12> kMapped{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::equal(kMapped.begin(), kMapped.end(), ip.begin());
}

bool isLoopback(const Ip& ip) {
  static constexpr Ip kV6Loopback{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return (isV4(ip) && ip[12] == 127) || ip == kV6Loopback;
}

bool prefixMatches(const Ip& a, const Ip& b, int bits) {
  for (int i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
    const int mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((a[i] & mask) != (b[i] & mask)) {
      return false;
    }
  }
  return true;
}

// One NO_PROXY entry against a lower-cased host (and its IP, if it is one) and port.
bool entryMatches(const std::string& entry, const std::string& host, const std::optional<Ip>& ip,
                  const std::string& port) {
  if (entry == "*") {
    return true;
  }
  if (const auto slash = entry.find('/'); slash != std::string::npos) {
    const auto net = parseIp(entry.substr(0, slash));
    const std::string bits = entry.substr(slash + 1);
    if (!net || !allDigits(bits) || bits.size() > 3) {
      return false;
    }
    const int prefix = std::stoi(bits) + (isV4(*net) ? 96 : 0);
    return prefix <= 128 && ip && isV4(*ip) == isV4(*net) && prefixMatches(*ip, *net, prefix);
  }
  auto split = splitHostPort(entry);
  if (!split || split->first.empty()) {
    return false;  // malformed: ignored, as Go ignores it
  }
  auto [entryHost, entryPort] = *split;
  if (!entryPort.empty() && entryPort != port) {
    return false;
  }
  if (const auto entryIp = parseIp(entryHost)) {
    return ip && *ip == *entryIp;
  }
  // "foo.com" matches foo.com and its subdomains; ".foo.com" and "*.foo.com" only subdomains.
  if (entryHost.rfind("*.", 0) == 0) {
    entryHost.erase(0, 1);
  }
  if (entryHost.front() == '.') {
    return host.size() > entryHost.size() &&
           host.compare(host.size() - entryHost.size(), entryHost.size(), entryHost) == 0;
  }
  const std::string suffix = "." + entryHost;
  return host == entryHost ||
         (host.size() > suffix.size() &&
          host.compare(host.size() - suffix.size(), suffix.size(), suffix) == 0);
}

std::string firstNonEmptyEnv(const char* upper, const char* lowerName) {
  for (const char* name : {upper, lowerName}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') {
      return v;
    }
  }
  return {};
}

}  // namespace

std::string ProxyUrl::display() const {
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" + port;
}

std::string ProxyUrl::authorization() const {
  if (!username) {
    return {};
  }
  return "Basic " + base64Encode(*username + ":" + password);
}

Result<ProxyUrl> parseProxyUrl(const std::string& url, bool assumeHttp) {
  const auto bad = [&](const std::string& why) {
    // Never echo the URL: it may carry a password.
    return Error::config("proxy URL: " + why);
  };
  ProxyUrl out;
  std::string rest;
  const auto schemeEnd = url.find("://");
  const std::string scheme = schemeEnd == std::string::npos ? "" : lower(url.substr(0, schemeEnd));
  if (scheme == "https") {
    out.tls = true;
    rest = url.substr(schemeEnd + 3);
  } else if (scheme == "http") {
    rest = url.substr(schemeEnd + 3);
  } else if (scheme.empty() && assumeHttp) {
    rest = url;
  } else if (scheme.empty()) {
    return bad("want an http:// or https:// URL");
  } else {
    return bad("scheme \"" + scheme + "\" is not supported (http and https are)");
  }
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const auto at = rest.rfind('@'); at != std::string::npos) {
    const std::string userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const auto colon = userinfo.find(':');
    auto user = percentDecode(userinfo.substr(0, colon));
    auto password =
        percentDecode(colon == std::string::npos ? std::string() : userinfo.substr(colon + 1));
    if (!user || !password) {
      return bad("bad percent-encoding in the user information");
    }
    out.username = std::move(*user);
    out.password = std::move(*password);
  }
  auto split = splitHostPort(rest);
  if (!split || split->first.empty()) {
    return bad("no host");
  }
  out.host = split->first;
  out.port = split->second.empty() ? (out.tls ? "443" : "80") : split->second;
  if (!allDigits(out.port)) {
    return bad("port \"" + out.port + "\" is not a number");
  }
  return out;
}

ProxyEnvironment ProxyEnvironment::fromProcess() {
  ProxyEnvironment env;
  env.httpProxy = firstNonEmptyEnv("HTTP_PROXY", "http_proxy");
  env.httpsProxy = firstNonEmptyEnv("HTTPS_PROXY", "https_proxy");
  env.noProxy = firstNonEmptyEnv("NO_PROXY", "no_proxy");
  return env;
}

bool bypassesProxy(const std::string& noProxy, const std::string& host, const std::string& port) {
  const auto ip = parseIp(host);
  if (host == "localhost" || (ip && isLoopback(*ip))) {
    return true;
  }
  const std::string h = lower(trim(host));
  size_t start = 0;
  while (start <= noProxy.size()) {
    const auto comma = std::min(noProxy.find(',', start), noProxy.size());
    const std::string entry = lower(trim(noProxy.substr(start, comma - start)));
    if (!entry.empty() && entryMatches(entry, h, ip, port)) {
      return true;
    }
    start = comma + 1;
  }
  return false;
}

Result<std::optional<ProxyUrl>> proxyFor(bool tls, const std::string& host, const std::string& port,
                                         const std::string& configured,
                                         const ProxyEnvironment& env) {
  if (!configured.empty()) {
    auto proxy = parseProxyUrl(configured, false);
    if (!proxy) {
      return proxy.error();
    }
    return std::optional<ProxyUrl>(std::move(*proxy));
  }
  const std::string& fromEnv = tls ? env.httpsProxy : env.httpProxy;
  if (fromEnv.empty() || bypassesProxy(env.noProxy, host, port)) {
    return std::optional<ProxyUrl>();
  }
  auto proxy = parseProxyUrl(fromEnv, true);
  if (!proxy) {
    return std::optional<ProxyUrl>();
  }
  return std::optional<ProxyUrl>(std::move(*proxy));
}

}  // namespace egress::kube
