#include "pkg/dataplane/fence.h"

#include <algorithm>
#include <cstdio>

#include "pkg/base/fnv1a.h"

namespace egress::dataplane {
namespace {

// An IPv6 address as the 128-bit integer nft's raw-payload sets hold.
std::string rawIPv6(const ipam::Address& a) {
  char buf[35];
  std::snprintf(buf, sizeof buf, "0x%016llx%016llx",
                static_cast<unsigned long long>(static_cast<uint64_t>(a.value >> 64)),
                static_cast<unsigned long long>(static_cast<uint64_t>(a.value)));
  return buf;
}

// "{ a, b }" of the addresses of `family` among `list`, each written by `text` and followed by
// `suffix`; "" when there are none (nft refuses an empty element list).
template <typename Text>
std::string elements(const std::vector<ipam::Address>& list, ipam::Family family, Text text,
                     const std::string& suffix) {
  std::string out;
  for (const auto& a : list) {
    if (a.family == family) {
      out += (out.empty() ? "{ " : ", ") + text(a) + suffix;
    }
  }
  return out.empty() ? out : out + " }";
}

// Replaces set `set`'s elements with those of `list` of family `f`, as `text` writes them, each
// followed by `suffix`.
template <typename Text>
void fill(std::string& out, const std::string& family, const std::string& set,
          const std::vector<ipam::Address>& list, ipam::Family f, Text text,
          const std::string& suffix) {
  const std::string prefix = family + " " + kFenceTable + " " + set;
  out += "flush set " + prefix + "\n";
  const std::string e = elements(list, f, text, suffix);
  if (!e.empty()) {
    out += "add element " + prefix + " " + e + "\n";
  }
}

}  // namespace

std::string renderFence(const FenceState& s) {
  const std::string t = kFenceTable;
  const auto plain = [](const ipam::Address& a) { return a.toString(); };
  const auto v4 = ipam::Family::kIPv4;
  const auto v6 = ipam::Family::kIPv6;
  std::string out;
  auto line = [&](const std::string& l) { out += l + "\n"; };
  line("add table inet " + t);
  line("add set inet " + t + " held4 { type ipv4_addr; flags timeout; }");
  line("add set inet " + t + " held6 { type ipv6_addr; flags timeout; }");
  line("add set inet " + t + " heldnd { typeof @th,64,128; flags timeout; }");
  line("add set inet " + t + " known4 { type ipv4_addr; }");
  line("add set inet " + t + " known6 { type ipv6_addr; }");
  line("add set inet " + t + " knownnd { typeof @th,64,128; }");
  line("add set inet " + t + " promised { type mark; flags timeout; }");
  line("add counter inet " + t + " fenced");
  // srcnat + 11: after the agent's own guard (srcnat + 1) and every NAT chain of the hook.
  line("add chain inet " + t +
       " snat_gate { type filter hook postrouting priority 111; "
       "policy accept; }");
  line("add chain inet " + t + " nd_gate { type filter hook output priority 0; policy accept; }");
  line("add table arp " + t);
  line("add set arp " + t + " held { type ipv4_addr; flags timeout; }");
  line("add set arp " + t + " known { type ipv4_addr; }");
  line("add counter arp " + t + " fenced");
  line("add chain arp " + t + " out { type filter hook output priority 0; policy accept; }");
  fill(out, "inet", "known4", s.known, v4, plain, "");
  fill(out, "inet", "known6", s.known, v6, plain, "");
  fill(out, "inet", "knownnd", s.known, v6, rawIPv6, "");
  fill(out, "arp", "known", s.known, v4, plain, "");
  return out + renderFenceHeld(s);
}

std::string renderFenceHeld(const FenceState& s) {
  const auto plain = [](const ipam::Address& a) { return a.toString(); };
  const auto v4 = ipam::Family::kIPv4;
  const auto v6 = ipam::Family::kIPv6;
  const std::string timeout =
      s.remaining.count() > 0 ? " timeout " + std::to_string(s.remaining.count()) + "ms" : "";
  std::vector<ipam::Address> held = s.remaining.count() > 0 ? s.held : std::vector<ipam::Address>{};
  const std::string t = kFenceTable;
  std::string out;
  auto line = [&](const std::string& l) { out += l + "\n"; };
  // The gates' rules too: a refresh puts back a rule someone deleted, so that between two full
  // writes only the known sets go unchecked.
  line("flush chain inet " + t + " snat_gate");
  line("add rule inet " + t + " snat_gate oifname != \"" + s.tunnel +
       "\" ip saddr @known4 ip saddr != @held4 counter name \"fenced\" drop");
  line("add rule inet " + t + " snat_gate oifname != \"" + s.tunnel +
       "\" ip6 saddr @known6 ip6 saddr != @held6 counter name \"fenced\" drop");
  line("flush chain inet " + t + " nd_gate");
  // An NA's target address is the 16 bytes after its type, code, checksum and flags.
  line("add rule inet " + t +
       " nd_gate icmpv6 type nd-neighbor-advert @th,64,128 @knownnd @th,64,128 != @heldnd "
       "counter name \"fenced\" drop");
  line("flush chain arp " + t + " out");
  line("add rule arp " + t +
       " out arp operation reply arp saddr ip @known arp saddr ip != @held "
       "counter name \"fenced\" drop");
  fill(out, "inet", "held4", held, v4, plain, timeout);
  fill(out, "inet", "held6", held, v6, plain, timeout);
  fill(out, "inet", "heldnd", held, v6, rawIPv6, timeout);
  fill(out, "arp", "held", held, v4, plain, timeout);
  return out;
}

uint32_t promiseKey(std::string_view node) {
  const uint64_t h = fnv1a(node);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

std::string renderPromise(std::string_view node, std::chrono::milliseconds remaining) {
  const std::string t = kFenceTable;
  const std::string key = std::to_string(promiseKey(node));
  // add + delete + add: a new timeout whether or not the element was there.
  return "add table inet " + t + "\nadd set inet " + t +
         " promised { type mark; flags timeout; }\nadd element inet " + t + " promised { " + key +
         " }\ndelete element inet " + t + " promised { " + key + " }\nadd element inet " + t +
         " promised { " + key + " timeout " + std::to_string(remaining.count()) + "ms }\n";
}

std::string removeFence() {
  const std::string t = kFenceTable;
  // add + delete: the delete succeeds whether or not the table existed.
  return "add table inet " + t + "\ndelete table inet " + t + "\nadd table arp " + t +
         "\ndelete table arp " + t + "\n";
}

}  // namespace egress::dataplane
