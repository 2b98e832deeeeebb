#include "pkg/dataplane/sysctl_applier.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "pkg/dataplane/rtnetlink.h"
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

namespace egress::dataplane {

namespace {

constexpr std::string_view kIPv4Conf = "net/ipv4/conf/";

// The IPV4_DEVCONF_* index of a per-device parameter rtnetlink can set, or 0. Only what
// desired_state.cc asks for of a device the agent itself makes.
int devconfIndex(std::string_view key) {
  return key == "rp_filter" ? IPV4_DEVCONF_RP_FILTER : 0;
}

// net/ipv4/conf/<device>/<key> = <number> through RTM_NEWLINK; "" or why not.
std::string setThroughRtnetlink(const Sysctl& s) {
  if (!s.path.starts_with(kIPv4Conf)) {
    return "not a per-device IPv4 parameter";
  }
  const std::string_view rest = std::string_view(s.path).substr(kIPv4Conf.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) {
    return "not a per-device IPv4 parameter";
  }
  const std::string device(rest.substr(0, slash));
  const int index = devconfIndex(rest.substr(slash + 1));
  uint32_t value = 0;
  const auto [end, ec] = std::from_chars(s.value.data(), s.value.data() + s.value.size(), value);
  if (index == 0 || device == "all" || device == "default" || ec != std::errc() ||
      end != s.value.data() + s.value.size()) {
    return "rtnetlink cannot set it";
  }
  const unsigned ifindex = if_nametoindex(device.c_str());
  if (ifindex == 0) {
    return "no device " + device;
  }
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = linkMessage(buf, RTM_NEWLINK, NLM_F_ACK, static_cast<int>(ifindex));
  nlattr* spec = mnl_attr_nest_start(nlh, IFLA_AF_SPEC);
  nlattr* inet = mnl_attr_nest_start(nlh, AF_INET);
  nlattr* conf = mnl_attr_nest_start(nlh, IFLA_INET_CONF);
  mnl_attr_put_u32(nlh, static_cast<uint16_t>(index), value);
  mnl_attr_nest_end(nlh, conf);
  mnl_attr_nest_end(nlh, inet);
  mnl_attr_nest_end(nlh, spec);
  Rtnetlink nl;
  auto r = nl.request(nlh, nullptr, nullptr);
  return r ? "" : r.error();
}

}  // namespace

Result<std::string, std::string> SysctlApplier::read(const std::string& path) const {
  std::ifstream in(root_ + "/" + path);
  if (!in) {
    return unexpected("sysctl " + path + ": " + std::strerror(errno));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string v = ss.str();
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) {
    v.pop_back();
  }
  return v;
}

int SysctlApplier::write(const Sysctl& s) const {
  const int fd = ::open((root_ + "/" + s.path).c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return errno;
  }
  const std::string line = s.value + "\n";
  const ssize_t n = ::write(fd, line.data(), line.size());
  const int err = n < 0 ? errno : (n != static_cast<ssize_t>(line.size()) ? EIO : 0);
  ::close(fd);
  return err;
}

Result<int, std::string> SysctlApplier::apply(const std::vector<Sysctl>& want) {
  int changes = 0;
  std::string errors;
  const auto fail = [&errors](const std::string& e) { errors += (errors.empty() ? "" : "; ") + e; };
  for (const auto& s : want) {
    auto have = read(s.path);
    if (!have) {
      fail(have.error());
      continue;
    }
    if (*have == s.value) {
      continue;
    }
    const int err = write(s);
    if (err != 0) {
      // Only where /proc refuses for want of privilege (a read-only /proc/sys in an unprivileged
      // container): a value the kernel rejects (EINVAL) must not pass through rtnetlink, which
      // checks only the attribute's type and length.
      const bool refused = err == EROFS || err == EACCES || err == EPERM;
      const std::string viaNetlink = refused ? setThroughRtnetlink(s) : "";
      if (!refused || !viaNetlink.empty()) {
        fail("sysctl " + s.toString() + ": " + std::strerror(err) +
             (viaNetlink.empty() ? "" : " (" + viaNetlink + ")"));
        continue;
      }
    }
    ++changes;
  }
  if (!errors.empty()) {
    return unexpected(errors);
  }
  return changes;
}

}  // namespace egress::dataplane
