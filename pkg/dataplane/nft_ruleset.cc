#include "pkg/dataplane/nft_ruleset.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/base/fnv1a.h"

namespace egress::dataplane {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

constexpr const char* kFamily = "inet";

const char* proto(ipam::Family f) {
  return f == ipam::Family::kIPv4 ? "ip" : "ip6";
}
const char* addrType(ipam::Family f) {
  return f == ipam::Family::kIPv4 ? "ipv4_addr" : "ipv6_addr";
}
const char* suffix(ipam::Family f) {
  return f == ipam::Family::kIPv4 ? "4" : "6";
}

std::string macString(const std::array<uint8_t, 6>& mac) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return buf;
}

constexpr const char* kRefuseChain = "refuse";

std::string pickChain(const NftPick& pick) {
  return pick.egressIP ? egressIPChain(*pick.egressIP) : kRefuseChain;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Small builders for the expressions the table uses; each writes one JSON value.
struct Expr {
  Writer& w;

  void key(const char* k) { w.Key(k); }
  void str(const std::string& s) {
    w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  }

  void meta(const char* k) {
    w.StartObject();
    key("meta");
    w.StartObject();
    key("key");
    w.String(k);
    w.EndObject();
    w.EndObject();
  }
  void ct(const char* k) {
    w.StartObject();
    key("ct");
    w.StartObject();
    key("key");
    w.String(k);
    w.EndObject();
    w.EndObject();
  }
  void payload(const char* protocol, const char* field) {
    w.StartObject();
    key("payload");
    w.StartObject();
    key("protocol");
    w.String(protocol);
    key("field");
    w.String(field);
    w.EndObject();
    w.EndObject();
  }
  // {"&": [left, mask]}
  template <typename L>
  void masked(L left, uint32_t mask) {
    w.StartObject();
    key("&");
    w.StartArray();
    left();
    w.Uint(mask);
    w.EndArray();
    w.EndObject();
  }
  // {"match": {"op": op, "left": left, "right": right}}
  template <typename L, typename R>
  void match(const char* op, L left, R right) {
    w.StartObject();
    key("match");
    w.StartObject();
    key("op");
    w.String(op);
    key("left");
    left();
    key("right");
    right();
    w.EndObject();
    w.EndObject();
  }
  void matchName(const char* op, const char* metaKey, const std::string& name) {
    match(
        op, [&] { meta(metaKey); }, [&] { str(name); });
  }
  // Sets the mask's bits of the packet (meta) or connection (ct) mark to `value`.
  void setMark(bool connection, uint32_t mask, uint32_t value) {
    auto subject = [&] { connection ? ct("mark") : meta("mark"); };
    w.StartObject();
    key("mangle");
    w.StartObject();
    key("key");
    subject();
    key("value");
    w.StartObject();
    key("|");
    w.StartArray();
    masked(subject, ~mask);
    w.Uint(value);
    w.EndArray();
    w.EndObject();
    w.EndObject();
    w.EndObject();
  }
  void verdict(const char* v) {
    w.StartObject();
    key(v);
    w.Null();
    w.EndObject();
  }
};

class Builder {
 public:
  Builder(Writer& w, const NftTable& t) : w_(w), e_{w}, t_(t) {}

  void tableObject() {
    w_.StartObject();
    w_.Key("table");
    w_.StartObject();
    w_.Key("family");
    w_.String(kFamily);
    w_.Key("name");
    e_.str(t_.name);
    w_.EndObject();
    w_.EndObject();
  }

  void command(const char* verb, const std::function<void()>& body) {
    w_.StartObject();
    w_.Key(verb);
    body();
    w_.EndObject();
  }

  void common(const char* kind, const std::string& name) {
    w_.Key(kind);
    w_.StartObject();
    w_.Key("family");
    w_.String(kFamily);
    w_.Key("table");
    e_.str(t_.name);
    w_.Key("name");
    e_.str(name);
  }

  void chain(const std::string& name, const char* type, const char* hook, int prio) {
    command("add", [&] {
      w_.StartObject();
      common("chain", name);
      if (type != nullptr) {
        w_.Key("type");
        w_.String(type);
        w_.Key("hook");
        w_.String(hook);
        w_.Key("prio");
        w_.Int(prio);
        w_.Key("policy");
        w_.String("accept");
      }
      w_.EndObject();
      w_.EndObject();
    });
  }

  // Opens a set or map object keyed by addresses of `f`.
  void setHeader(const char* kind, const std::string& name, ipam::Family f) {
    w_.StartObject();
    common(kind, name);
    w_.Key("type");
    w_.String(addrType(f));
  }

  void prefixSet(const std::string& name, ipam::Family f, const std::vector<ipam::Prefix>& elems) {
    command("add", [&] {
      setHeader("set", name, f);
      w_.Key("flags");
      w_.StartArray();
      w_.String("interval");
      w_.EndArray();
      w_.Key("auto-merge");
      w_.Bool(true);
      if (!elems.empty()) {
        w_.Key("elem");
        w_.StartArray();
        for (const auto& p : elems) {
          w_.StartObject();
          w_.Key("prefix");
          w_.StartObject();
          w_.Key("addr");
          e_.str(p.address.toString());
          w_.Key("len");
          w_.Int(p.bits);
          w_.EndObject();
          w_.EndObject();
        }
        w_.EndArray();
      }
      w_.EndObject();
      w_.EndObject();
    });
  }

  void addressSet(const std::string& name, ipam::Family f,
                  const std::vector<ipam::Address>& elems) {
    command("add", [&] {
      setHeader("set", name, f);
      if (!elems.empty()) {
        w_.Key("elem");
        w_.StartArray();
        for (const auto& a : elems) {
          e_.str(a.toString());
        }
        w_.EndArray();
      }
      w_.EndObject();
      w_.EndObject();
    });
  }

  // A set of (tunnel MAC . source address) of family `f`.
  void tunnelSourceSet(const std::string& name, ipam::Family f,
                       const std::vector<NftTunnelSource>& elems) {
    command("add", [&] {
      w_.StartObject();
      common("set", name);
      w_.Key("type");
      w_.StartArray();
      w_.String("ether_addr");
      w_.String(addrType(f));
      w_.EndArray();
      if (!elems.empty()) {
        w_.Key("elem");
        w_.StartArray();
        for (const auto& src : elems) {
          w_.StartObject();
          w_.Key("concat");
          w_.StartArray();
          e_.str(macString(src.mac));
          e_.str(src.ip.toString());
          w_.EndArray();
          w_.EndObject();
        }
        w_.EndArray();
      }
      w_.EndObject();
      w_.EndObject();
    });
  }

  void counterObject(const std::string& name) {
    command("add", [&] {
      w_.StartObject();
      common("counter", name);
      w_.EndObject();
      w_.EndObject();
    });
  }

  // The named counter `name` counts the packet.
  void countAs(const std::string& name) {
    w_.StartObject();
    w_.Key("counter");
    e_.str(name);
    w_.EndObject();
  }

  void pickMap(const std::string& name, ipam::Family f, const std::vector<NftPick>& picks) {
    command("add", [&] {
      setHeader("map", name, f);
      w_.Key("map");
      w_.String("verdict");
      w_.Key("elem");
      w_.StartArray();
      for (const auto& p : picks) {
        w_.StartArray();
        e_.str(p.source.toString());
        w_.StartObject();
        w_.Key("goto");
        w_.StartObject();
        w_.Key("target");
        e_.str(pickChain(p));
        w_.EndObject();
        w_.EndObject();
        w_.EndArray();
      }
      w_.EndArray();
      w_.EndObject();
      w_.EndObject();
    });
  }

  // Source address -> the egress IP it is SNATed to.
  void snatMap(const std::string& name, ipam::Family f, const std::vector<NftSnat>& snat) {
    command("add", [&] {
      setHeader("map", name, f);
      w_.Key("map");
      w_.String(addrType(f));
      w_.Key("elem");
      w_.StartArray();
      for (const auto& m : snat) {
        w_.StartArray();
        e_.str(m.source.toString());
        e_.str(m.egressIP.toString());
        w_.EndArray();
      }
      w_.EndArray();
      w_.EndObject();
      w_.EndObject();
    });
  }

  void rule(const std::string& chainName, const std::string& comment,
            const std::function<void()>& exprs) {
    command("add", [&] {
      w_.StartObject();
      w_.Key("rule");
      w_.StartObject();
      w_.Key("family");
      w_.String(kFamily);
      w_.Key("table");
      e_.str(t_.name);
      w_.Key("chain");
      e_.str(chainName);
      if (!comment.empty()) {
        w_.Key("comment");
        e_.str(comment);
      }
      w_.Key("expr");
      w_.StartArray();
      exprs();
      w_.EndArray();
      w_.EndObject();
      w_.EndObject();
    });
  }

  // Calls fn(policy, set name prefix, family, family index) for every policy and family that
  // classifies anything.
  template <typename Fn>
  void forEachClassified(Fn fn) {
    for (const auto& p : t_.policies) {
      const std::string base = "p" + std::to_string(&p - t_.policies.data()) + "_";
      for (auto f : {ipam::Family::kIPv4, ipam::Family::kIPv6}) {
        auto i = static_cast<size_t>(f);
        if (!p.destinations[i].empty() && !p.picks[i].empty()) {
          fn(p, base, f, i);
        }
      }
    }
  }

  // Everything after the table itself; `tag` is the tag element's comment ("" while digesting).
  void body(const std::string& tag) {
    const auto& tun = t_.tunnel;
    const uint32_t mask = t_.markMask;
    auto ctDirection = [&](const char* dir) {
      e_.match(
          "==", [&] { e_.ct("direction"); }, [&] { w_.String(dir); });
    };
    auto ctMarkIs = [&](uint32_t v) {
      e_.match(
          "==", [&] { e_.masked([&] { e_.ct("mark"); }, mask); }, [&] { w_.Uint(v); });
    };
    // A policy's destinations, less its exclusions (none: no match).
    auto policyDestination = [&](const NftPolicy& p, ipam::Family f, size_t i) {
      e_.match(
          "==", [&] { e_.payload(proto(f), "daddr"); },
          [&] { e_.str("@" + cidrSetName(f, p.destinations[i])); });
      if (!p.excluded[i].empty()) {
        e_.match(
            "!=", [&] { e_.payload(proto(f), "daddr"); },
            [&] { e_.str("@" + cidrSetName(f, p.excluded[i])); });
      }
    };
    auto markIs = [&](uint32_t v) {
      e_.match(
          "==", [&] { e_.masked([&] { e_.meta("mark"); }, mask); }, [&] { w_.Uint(v); });
    };

    // The chains the pick maps' verdicts name first: one per egress IP with a live holder, which
    // sets the mark that routes to it, and the refusal.
    chain(kRefuseChain, nullptr, nullptr, 0);
    rule(kRefuseChain, "", [&] { e_.setMark(false, mask, t_.refuseMark); });
    for (const auto& eip : t_.egressIPs) {
      if (eip.mark != 0) {
        chain(egressIPChain(eip.ip), nullptr, nullptr, 0);
        rule(egressIPChain(eip.ip), "", [&] { e_.setMark(false, mask, eip.mark); });
      }
    }
    for (auto f : {ipam::Family::kIPv4, ipam::Family::kIPv6}) {
      const auto i = static_cast<size_t>(f);
      prefixSet(std::string("incluster") + suffix(f), f, t_.inCluster[i]);
      addressSet(std::string("nodes") + suffix(f), f, t_.nodes[i]);
      tunnelSourceSet(std::string("tunsrc") + suffix(f), f, t_.tunnelSources[i]);
    }
    for (const char* c : {kTunnelNotNode, kTunnelFromPod, kTunnelForged}) {
      counterObject(c);
    }
    // The digest of everything else: the comment of set `tag`'s one element, which an element
    // transaction rewrites as cheaply as any element (a rule's would make libnftables fetch the
    // whole table first).
    command("add", [&] {
      w_.StartObject();
      common("set", kTagSet);
      w_.Key("type");
      w_.String("inet_service");
      w_.Key("elem");
      w_.StartArray();
      if (tag.empty()) {
        w_.Uint(1);
      } else {
        w_.StartObject();
        w_.Key("elem");
        w_.StartObject();
        w_.Key("val");
        w_.Uint(1);
        w_.Key("comment");
        e_.str(tag);
        w_.EndObject();
        w_.EndObject();
      }
      w_.EndArray();
      w_.EndObject();
      w_.EndObject();
    });
    for (const auto& eip : t_.egressIPs) {
      if (eip.held) {
        counterObject(egressCounter(eip.ip));
      }
    }
    // The tunnel's port and the heartbeats': only nodes may send to either.
    auto udpToTunnel = [&] {
      e_.match(
          "==", [&] { e_.payload("udp", "dport"); },
          [&] {
            if (t_.heartbeatPort == 0 || t_.heartbeatPort == t_.tunnelPort) {
              w_.Uint(t_.tunnelPort);
              return;
            }
            w_.StartObject();
            w_.Key("set");
            w_.StartArray();
            w_.Uint(t_.tunnelPort);
            w_.Uint(t_.heartbeatPort);
            w_.EndArray();
            w_.EndObject();
          });
    };
    // Destinations and exclusions, one interval set per distinct list, shared by the policies
    // that list the same (most policies do): libnftables fetches every interval set's elements
    // before any element transaction, so their number is what a pod change costs (1.5 s with
    // 5,000 of them, where one pick map element alone takes 10 ms).
    forEachClassified([&](const NftPolicy& p, const std::string&, ipam::Family f, size_t i) {
      for (const auto* list : {&p.destinations[i], &p.excluded[i]}) {
        if (list->empty()) {
          continue;
        }
        auto [it, added] = cidrSets_[i].emplace(
            cidrKey(*list), "cidrs" + std::to_string(cidrSets_[i].size()) + suffix(f));
        if (added) {
          prefixSet(it->second, f, *list);
        }
      }
    });
    forEachClassified([&](const NftPolicy& p, const std::string& base, ipam::Family f, size_t i) {
      pickMap(base + "pick" + suffix(f), f, p.picks[i]);
      if (!p.snat[i].empty()) {
        snatMap(base + "snat" + suffix(f), f, p.snat[i]);
      }
    });

    chain("classify", "filter", "prerouting", -90);
    if (t_.symmetricReply) {
      rule("classify", "", [&] {
        ctDirection("reply");
        ctMarkIs(t_.replyMark);
        e_.setMark(false, mask, t_.replyMark);
        e_.verdict("return");
      });
    }
    rule("classify", "", [&] {
      ctDirection("reply");
      e_.verdict("return");
    });
    // What the tunnel delivers that opens a connection must be a source pod of the node that
    // sent it: its inner source MAC is that node's tunnel MAC, its address a pod the view places
    // there. (Replies through the tunnel are the reply direction and returned above.)
    for (auto f : {ipam::Family::kIPv4, ipam::Family::kIPv6}) {
      rule("classify", "", [&] {
        e_.matchName("==", "iifname", tun);
        e_.match(
            "==", [&] { e_.meta("nfproto"); },
            [&] { w_.String(f == ipam::Family::kIPv4 ? "ipv4" : "ipv6"); });
        e_.match(
            "!=",
            [&] {
              w_.StartObject();
              w_.Key("concat");
              w_.StartArray();
              e_.payload("ether", "saddr");
              e_.payload(proto(f), "saddr");
              w_.EndArray();
              w_.EndObject();
            },
            [&] { e_.str(std::string("@tunsrc") + suffix(f)); });
        countAs(kTunnelForged);
        e_.verdict("drop");
      });
    }
    rule("classify", "", [&] {
      e_.matchName("==", "iifname", tun);
      e_.setMark(true, mask, t_.replyMark);
    });
    // In-cluster traffic never leaves by a gateway: node addresses (the API server's too,
    // NodePorts, hostNetwork pods), pod and service ranges.
    for (auto f : {ipam::Family::kIPv4, ipam::Family::kIPv6}) {
      rule("classify", "", [&] {
        e_.match(
            "==", [&] { e_.payload(proto(f), "daddr"); },
            [&] { e_.str(std::string("@incluster") + suffix(f)); });
        e_.verdict("return");
      });
    }
    forEachClassified([&](const NftPolicy& p, const std::string& base, ipam::Family f, size_t idx) {
      rule("classify", p.key, [&] {
        policyDestination(p, f, idx);
        w_.StartObject();
        w_.Key("vmap");
        w_.StartObject();
        w_.Key("key");
        e_.payload(proto(f), "saddr");
        w_.Key("data");
        e_.str("@" + base + "pick" + suffix(f));
        w_.EndObject();
        w_.EndObject();
      });
    });

    chain("srcnat", "nat", "postrouting", 90);
    for (auto f : {ipam::Family::kIPv4, ipam::Family::kIPv6}) {
      rule("srcnat", "", [&] {
        e_.match(
            "==", [&] { e_.meta("nfproto"); },
            [&] { w_.String(f == ipam::Family::kIPv4 ? "ipv4" : "ipv6"); });
        e_.matchName("==", "oifname", tun);
        w_.StartObject();
        w_.Key("snat");
        w_.StartObject();
        w_.Key("family");
        w_.String(proto(f));
        w_.Key("addr");
        e_.payload(proto(f), "saddr");
        w_.EndObject();
        w_.EndObject();
      });
    }
    // Per policy, as classify ordered them: a packet with the local mark was classified by the
    // first policy whose destinations it matches and whose pick map has its source; the same
    // policy's rule here is the first to match it, and its map holds the source iff the pick
    // is held here.
    forEachClassified([&](const NftPolicy& p, const std::string& base, ipam::Family f, size_t i) {
      if (p.snat[i].empty()) {
        return;
      }
      rule("srcnat", p.key, [&] {
        markIs(t_.localMark);
        e_.matchName("!=", "oifname", tun);
        policyDestination(p, f, i);
        w_.StartObject();
        w_.Key("snat");
        w_.StartObject();
        w_.Key("family");
        w_.String(proto(f));
        w_.Key("addr");
        w_.StartObject();
        w_.Key("map");
        w_.StartObject();
        w_.Key("key");
        e_.payload(proto(f), "saddr");
        w_.Key("data");
        e_.str("@" + base + "snat" + suffix(f));
        w_.EndObject();
        w_.EndObject();
        w_.EndObject();
        w_.EndObject();
      });
    });

    // After every NAT chain of the hook (the CNI's MASQUERADE at 100 included), so the source
    // is the translated one: what came in through the tunnel leaves other than by it only with
    // an egress IP this node holds. A test of "SNATed at all" would let the CNI's masquerade
    // send it out with the node's address (dataplane_packets_test ANodeThatNoLongerHolds...).
    chain("guard", "filter", "postrouting", 101);
    for (auto f : {ipam::Family::kIPv4, ipam::Family::kIPv6}) {
      std::vector<std::string> held;
      for (const auto& eip : t_.egressIPs) {
        if (eip.held && eip.ip.family == f) {
          held.push_back(eip.ip.toString());
        }
      }
      // Its source is none of the egress IPs held here (all of them: none is).
      auto notFromHeld = [&] {
        if (held.empty()) {
          return;
        }
        e_.match(
            "!=", [&] { e_.payload(proto(f), "saddr"); },
            [&] {
              w_.StartObject();
              w_.Key("set");
              w_.StartArray();
              for (const auto& ip : held) {
                e_.str(ip);
              }
              w_.EndArray();
              w_.EndObject();
            });
      };
      rule("guard", "", [&] {
        e_.match(
            "==", [&] { e_.meta("nfproto"); },
            [&] { w_.String(f == ipam::Family::kIPv4 ? "ipv4" : "ipv6"); });
        ctDirection("original");
        ctMarkIs(t_.replyMark);
        e_.matchName("!=", "oifname", tun);
        notFromHeld();
        e_.verdict("drop");
      });
      // A packet classified to an egress IP held here leaves with that address, whatever else
      // happened to it: should its source miss the SNAT map (an element transaction committed
      // between its prerouting and its postrouting), the CNI's MASQUERADE would have sent it with
      // the node's address.
      rule("guard", "", [&] {
        e_.match(
            "==", [&] { e_.meta("nfproto"); },
            [&] { w_.String(f == ipam::Family::kIPv4 ? "ipv4" : "ipv6"); });
        markIs(t_.localMark);
        e_.matchName("!=", "oifname", tun);
        notFromHeld();
        e_.verdict("drop");
      });
    }
    // A packet marked for another node's egress IP (or refused) leaves only through the tunnel
    // (or not at all). The rule that routes its mark and this table do not change in one
    // transaction (a node that starts holding gets its rule after the chains that set its mark;
    // a fresh node gets the refusal's rule after the table): in that moment the main table would
    // send it out with the node's address. Dropped instead. Only the marks this table sets: a
    // value of the mask someone else uses is not ours to drop.
    std::set<uint32_t> routedMarks{t_.refuseMark};
    for (const auto& eip : t_.egressIPs) {
      if (eip.mark != 0 && eip.mark != t_.localMark) {
        routedMarks.insert(eip.mark);
      }
    }
    rule("guard", "", [&] {
      e_.match(
          "==", [&] { e_.masked([&] { e_.meta("mark"); }, mask); },
          [&] {
            w_.StartObject();
            w_.Key("set");
            w_.StartArray();
            for (uint32_t m : routedMarks) {
              w_.Uint(m);
            }
            w_.EndArray();
            w_.EndObject();
          });
      e_.matchName("!=", "oifname", tun);
      e_.verdict("drop");
    });

    // What leaves with each egress IP held here: after NAT (so every packet of a connection
    // carries the egress IP, not only the first, which alone passes the NAT chains), after the
    // guard and the fence's snat_gate (111: so only what really leaves), and only connections
    // SNATed to it (a pod on this node that sends with the egress IP as its own source is not the
    // policy's traffic, whatever it claims): the agent's per-policy counters.
    chain("account", "filter", "postrouting", 115);
    for (const auto& eip : t_.egressIPs) {
      if (!eip.held) {
        continue;
      }
      rule("account", "", [&] {
        e_.match(
            "==", [&] { e_.meta("nfproto"); },
            [&] { w_.String(eip.ip.family == ipam::Family::kIPv4 ? "ipv4" : "ipv6"); });
        e_.matchName("!=", "oifname", tun);
        e_.match(
            "==", [&] { e_.payload(proto(eip.ip.family), "saddr"); },
            [&] { e_.str(eip.ip.toString()); });
        e_.match(
            "in", [&] { e_.ct("status"); }, [&] { w_.String("snat"); });
        countAs(egressCounter(eip.ip));
      });
    }

    chain("unmark", "filter", "postrouting", 110);
    rule("unmark", "", [&] {
      e_.matchName("==", "oifname", tun);
      e_.setMark(false, mask, 0);
    });

    chain("forward", "filter", "forward", 0);
    rule("forward", "", [&] {
      e_.matchName("==", "iifname", tun);
      e_.matchName("==", "oifname", tun);
      e_.verdict("drop");
    });
    // The tunnel's own packets leave this node from the output hook; a forwarded one comes from a
    // pod (or anything routed through this node) pretending to be a node's tunnel endpoint.
    for (auto f : {ipam::Family::kIPv4, ipam::Family::kIPv6}) {
      rule("forward", "", [&] {
        e_.match(
            "==", [&] { e_.payload(proto(f), "daddr"); },
            [&] { e_.str(std::string("@nodes") + suffix(f)); });
        udpToTunnel();
        countAs(kTunnelFromPod);
        e_.verdict("drop");
      });
    }
    // Whoever sends to the tunnel port must be a node: the outer source of what the tunnel
    // decapsulates is checked here, before the tunnel's socket gets it.
    chain("tunnel_in", "filter", "input", -150);
    for (auto f : {ipam::Family::kIPv4, ipam::Family::kIPv6}) {
      rule("tunnel_in", "", [&] {
        e_.match(
            "!=", [&] { e_.payload(proto(f), "saddr"); },
            [&] { e_.str(std::string("@nodes") + suffix(f)); });
        udpToTunnel();
        countAs(kTunnelNotNode);
        e_.verdict("drop");
      });
    }
    rule("forward", "", [&] {
      e_.matchName("==", "oifname", tun);
      e_.match(
          "in", [&] { e_.payload("tcp", "flags"); }, [&] { w_.String("syn"); });
      w_.StartObject();
      w_.Key("mangle");
      w_.StartObject();
      w_.Key("key");
      w_.StartObject();
      w_.Key("tcp option");
      w_.StartObject();
      w_.Key("name");
      w_.String("maxseg");
      w_.Key("field");
      w_.String("size");
      w_.EndObject();
      w_.EndObject();
      w_.Key("value");
      w_.StartObject();
      w_.Key("rt");
      w_.StartObject();
      w_.Key("key");
      w_.String("mtu");
      w_.EndObject();
      w_.EndObject();
      w_.EndObject();
      w_.EndObject();
    });
  }

 private:
  static std::string cidrKey(const std::vector<ipam::Prefix>& list) {
    std::string key;
    for (const auto& p : list) {
      key += p.toString() + ",";
    }
    return key;
  }
  // The interval set of `list` (made by body() before any rule names it).
  const std::string& cidrSetName(ipam::Family f, const std::vector<ipam::Prefix>& list) const {
    return cidrSets_[static_cast<size_t>(f)].at(cidrKey(list));
  }

  Writer& w_;
  Expr e_;
  const NftTable& t_;
  // Per family, the name of the interval set of each distinct list of prefixes.
  std::array<std::map<std::string, std::string>, 2> cidrSets_;
};

std::string document(const NftTable& t, bool replace, const std::string& tag, bool withBody) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  Builder b(w, t);
  w.StartObject();
  w.Key("nftables");
  w.StartArray();
  // add + delete: the delete succeeds whether or not the table existed.
  b.command("add", [&] { b.tableObject(); });
  if (replace) {
    b.command("delete", [&] { b.tableObject(); });
  }
  if (withBody) {
    b.command("add", [&] { b.tableObject(); });
    b.body(tag);
  }
  w.EndArray();
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

std::string jsonOf(const std::function<void(Writer&)>& write) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  write(w);
  return {buf.GetString(), buf.GetSize()};
}

std::string quoted(const std::string& s) {
  return jsonOf(
      [&](Writer& w) { w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); });
}

std::string gotoJson(const std::string& chain) {
  return jsonOf([&](Writer& w) {
    w.StartObject();
    w.Key("goto");
    w.StartObject();
    w.Key("target");
    w.String(chain.c_str(), static_cast<rapidjson::SizeType>(chain.size()));
    w.EndObject();
    w.EndObject();
  });
}

std::string concatJson(const NftTunnelSource& src) {
  return jsonOf([&](Writer& w) {
    w.StartObject();
    w.Key("concat");
    w.StartArray();
    const std::string mac = macString(src.mac);
    w.String(mac.c_str());
    const std::string ip = src.ip.toString();
    w.String(ip.c_str());
    w.EndArray();
    w.EndObject();
  });
}

// The element commands that turn `from` into `to` in the set or map `name`.
class DeltaWriter {
 public:
  explicit DeltaWriter(const std::string& table) : table_(table) {}

  // `keyLess` orders elements by their key in the kernel (for a set: the element). Only what
  // differs turns into JSON: the lists are walked side by side in that order, so a change to
  // one element of a hundred thousand costs a comparison per element, not a string.
  template <typename T, typename Less, typename KeyJson, typename ValueJson>
  void diff(const std::string& name, const std::vector<T>& from, const std::vector<T>& to,
            Less keyLess, KeyJson keyJson, ValueJson valueJson) {
    const auto a = sorted(from, keyLess);
    const auto b = sorted(to, keyLess);
    std::vector<const T*> deleted;
    std::vector<const T*> added;
    size_t i = 0;
    size_t j = 0;
    while (i < a.size() || j < b.size()) {
      if (j == b.size() || (i < a.size() && keyLess(*a[i], *b[j]))) {
        deleted.push_back(a[i++]);
      } else if (i == a.size() || keyLess(*b[j], *a[i])) {
        added.push_back(b[j++]);
      } else {
        // The same key: a changed value is a deletion and an addition.
        if (!(*a[i] == *b[j])) {
          deleted.push_back(a[i]);
          added.push_back(b[j]);
        }
        ++i;
        ++j;
      }
    }
    if (!deleted.empty()) {
      std::string elems;
      for (const T* x : deleted) {
        elems += (elems.empty() ? "" : ",") + keyJson(*x);
      }
      deletes_.push_back(command("delete", name, elems));
    }
    if (!added.empty()) {
      std::string elems;
      for (const T* x : added) {
        const std::string v = valueJson(*x);
        elems += (elems.empty() ? "" : ",") +
                 (v.empty() ? keyJson(*x) : "[" + keyJson(*x) + "," + v + "]");
      }
      adds_.push_back(command("add", name, elems));
    }
    count_ += deleted.size() + added.size();
  }

  NftDelta finish(const std::string& digest) {
    std::string body;
    for (const auto* list : {&deletes_, &adds_}) {
      for (const auto& c : *list) {
        body += (body.empty() ? "" : ",") + c;
      }
    }
    // The tag element, as body() writes it, with the new digest: a restarted agent finds the
    // digest of what the kernel now has.
    body +=
        (body.empty() ? "" : ",") + command("delete", kTagSet, "1") + "," +
        command("add", kTagSet, R"({"elem":{"val":1,"comment":)" + quoted(nftTag(digest)) + "}}");
    return {R"({"nftables":[)" + body + "]}", count_};
  }

 private:
  // The list in `less` order (desired_state.h makes them so already; anything else is sorted
  // here rather than diffed wrong).
  template <typename T, typename Less>
  static std::vector<const T*> sorted(const std::vector<T>& list, Less less) {
    std::vector<const T*> out;
    out.reserve(list.size());
    for (const auto& x : list) {
      out.push_back(&x);
    }
    auto byKey = [&](const T* x, const T* y) { return less(*x, *y); };
    if (!std::is_sorted(out.begin(), out.end(), byKey)) {
      std::stable_sort(out.begin(), out.end(), byKey);
    }
    return out;
  }

  std::string command(const char* verb, const std::string& name, const std::string& elems) const {
    return std::string(R"({")") + verb + R"(":{"element":{"family":"inet","table":)" +
           quoted(table_) + R"(,"name":)" + quoted(name) + R"(,"elem":[)" + elems + "]}}}";
  }

  std::string table_;
  std::vector<std::string> deletes_;
  std::vector<std::string> adds_;
  size_t count_ = 0;
};

template <typename T>
bool sourceLess(const T& a, const T& b) {
  return a.source < b.source;
}
bool tunnelSourceLess(const NftTunnelSource& a, const NftTunnelSource& b) {
  return std::tie(a.ip, a.mac) < std::tie(b.ip, b.mac);
}
std::string addressJson(const ipam::Address& a) {
  return quoted(a.toString());
}
template <typename T>
std::string noValue(const T& /*element*/) {
  return "";
}

// A 64-bit hash of words, the same on every machine: each word is mixed into the state by
// splitmix64's finaliser, whose every output bit depends on every input bit. (FNV-1a's step on
// whole words would not do: a flip of a word's top bit only ever flips the state's top bit, so
// two such flips cancel, and two pods swapping egress IPs that differ there would hash alike.)
class WordHash {
 public:
  void add(uint64_t w) { h_ = mix(h_ ^ w) + 0x9e3779b97f4a7c15ULL; }
  void add(const ipam::Address& a) {
    add(static_cast<uint64_t>(a.family));
    add(static_cast<uint64_t>(a.value >> 64));
    add(static_cast<uint64_t>(a.value));
  }
  uint64_t value() const { return mix(h_); }

 private:
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  uint64_t h_ = 14695981039346656037ULL;
};

// Every element nftShapeDigest leaves out, in order, each list behind its place and length (an
// element moved from one map to the next changes the hash).
uint64_t elementsHash(const NftTable& t) {
  WordHash h;
  for (const auto& p : t.policies) {
    for (size_t i = 0; i < 2; ++i) {
      h.add(p.picks[i].size());
      for (const auto& pick : p.picks[i]) {
        h.add(pick.source);
        h.add(pick.egressIP ? 1 : 0);
        if (pick.egressIP) {
          h.add(*pick.egressIP);
        }
      }
      h.add(p.snat[i].size());
      for (const auto& m : p.snat[i]) {
        h.add(m.source);
        h.add(m.egressIP);
      }
    }
  }
  for (size_t i = 0; i < 2; ++i) {
    h.add(t.tunnelSources[i].size());
    for (const auto& src : t.tunnelSources[i]) {
      uint64_t mac = 0;
      for (uint8_t byte : src.mac) {
        mac = (mac << 8) | byte;
      }
      h.add(mac);
      h.add(src.ip);
    }
    h.add(t.nodes[i].size());
    for (const auto& a : t.nodes[i]) {
      h.add(a);
    }
  }
  return h.value();
}

}  // namespace

std::string nftShapeDigest(const NftTable& table) {
  NftTable shape;
  // Everything but the elements, without copying them: a map's presence (and its rules) follows
  // whether it has elements, which one placeholder keeps.
  shape.name = table.name;
  shape.tunnel = table.tunnel;
  shape.markMask = table.markMask;
  shape.replyMark = table.replyMark;
  shape.refuseMark = table.refuseMark;
  shape.localMark = table.localMark;
  shape.symmetricReply = table.symmetricReply;
  shape.egressIPs = table.egressIPs;
  shape.inCluster = table.inCluster;
  shape.tunnelPort = table.tunnelPort;
  shape.heartbeatPort = table.heartbeatPort;
  shape.policies.reserve(table.policies.size());
  for (const auto& p : table.policies) {
    NftPolicy s;
    s.key = p.key;
    s.destinations = p.destinations;
    s.excluded = p.excluded;
    for (size_t i = 0; i < 2; ++i) {
      if (!p.picks[i].empty()) {
        s.picks[i] = {NftPick{}};
      }
      if (!p.snat[i].empty()) {
        s.snat[i] = {NftSnat{}};
      }
    }
    shape.policies.push_back(std::move(s));
  }
  return hex64(fnv1a(document(shape, true, "", true)));
}

bool nftSameShape(const NftTable& a, const NftTable& b) {
  if (a.name != b.name || a.tunnel != b.tunnel || a.markMask != b.markMask ||
      a.replyMark != b.replyMark || a.refuseMark != b.refuseMark || a.localMark != b.localMark ||
      a.symmetricReply != b.symmetricReply || a.egressIPs != b.egressIPs ||
      a.inCluster != b.inCluster || a.tunnelPort != b.tunnelPort ||
      a.heartbeatPort != b.heartbeatPort || a.policies.size() != b.policies.size()) {
    return false;
  }
  for (size_t n = 0; n < a.policies.size(); ++n) {
    const auto& p = a.policies[n];
    const auto& q = b.policies[n];
    if (p.key != q.key || p.destinations != q.destinations || p.excluded != q.excluded) {
      return false;
    }
    for (size_t i = 0; i < 2; ++i) {
      if (p.picks[i].empty() != q.picks[i].empty() || p.snat[i].empty() != q.snat[i].empty()) {
        return false;
      }
    }
  }
  return true;
}

NftDelta renderNftDelta(const NftTable& from, const NftTable& to, const std::string& digest) {
  DeltaWriter d(to.name);
  auto tunnelSourceJson = [](const NftTunnelSource& s) { return concatJson(s); };
  auto pickKey = [](const NftPick& p) { return addressJson(p.source); };
  auto pickValue = [](const NftPick& p) { return gotoJson(pickChain(p)); };
  auto snatKey = [](const NftSnat& m) { return addressJson(m.source); };
  auto snatValue = [](const NftSnat& m) { return addressJson(m.egressIP); };
  auto addressLess = [](const ipam::Address& a, const ipam::Address& b) { return a < b; };
  for (auto f : {ipam::Family::kIPv4, ipam::Family::kIPv6}) {
    const auto i = static_cast<size_t>(f);
    // Only what differs is looked at element by element: a pod change touches one policy.
    if (from.tunnelSources[i] != to.tunnelSources[i]) {
      d.diff(std::string("tunsrc") + suffix(f), from.tunnelSources[i], to.tunnelSources[i],
             tunnelSourceLess, tunnelSourceJson, noValue<NftTunnelSource>);
    }
    if (from.nodes[i] != to.nodes[i]) {
      d.diff(std::string("nodes") + suffix(f), from.nodes[i], to.nodes[i], addressLess, addressJson,
             noValue<ipam::Address>);
    }
  }
  // Equal shapes: the same policies, in the same order, classified in the same families.
  for (size_t n = 0; n < to.policies.size() && n < from.policies.size(); ++n) {
    const auto& a = from.policies[n];
    const auto& b = to.policies[n];
    const std::string base = "p" + std::to_string(n) + "_";
    for (auto f : {ipam::Family::kIPv4, ipam::Family::kIPv6}) {
      const auto i = static_cast<size_t>(f);
      if (b.destinations[i].empty() || b.picks[i].empty()) {
        continue;
      }
      if (a.picks[i] != b.picks[i]) {
        d.diff(base + "pick" + suffix(f), a.picks[i], b.picks[i], sourceLess<NftPick>, pickKey,
               pickValue);
      }
      if (!b.snat[i].empty() && a.snat[i] != b.snat[i]) {
        d.diff(base + "snat" + suffix(f), a.snat[i], b.snat[i], sourceLess<NftSnat>, snatKey,
               snatValue);
      }
    }
  }
  return d.finish(digest);
}

std::string nftTag(const std::string& digest) {
  return "egw:" + digest;
}

std::string nftDigest(const NftTable& table, const std::string& shapeDigest) {
  return hex64(fnv1a(shapeDigest + hex64(elementsHash(table))));
}

std::string nftDigest(const NftTable& table) {
  return nftDigest(table, nftShapeDigest(table));
}

NftJson renderNftJson(const NftTable& table) {
  NftJson out;
  out.digest = nftDigest(table);
  out.json = document(table, true, nftTag(out.digest), true);
  return out;
}

std::string removeNftJson(const std::string& tableName) {
  NftTable t;
  t.name = tableName;
  return document(t, true, "", false);
}

std::string egressIPChain(const ipam::Address& ip) {
  std::string name = "eip_" + ip.toString();
  std::replace_if(
      name.begin(), name.end(), [](char c) { return c == '.' || c == ':'; }, '_');
  return name;
}

std::string egressCounter(const ipam::Address& ip) {
  std::string name = "egress_" + ip.toString();
  std::replace_if(
      name.begin(), name.end(), [](char c) { return c == '.' || c == ':'; }, '_');
  return name;
}

std::string NftTable::toString() const {
  std::string out;
  char buf[64];
  for (const auto& e : egressIPs) {
    std::snprintf(buf, sizeof buf, " mark 0x%x%s\n", e.mark, e.held ? " held" : "");
    out += "nft eip " + e.ip.toString() + buf;
  }
  for (const auto& list : inCluster) {
    for (const auto& d : list) {
      out += "nft incluster " + d.toString() + "\n";
    }
  }
  for (const auto& list : nodes) {
    for (const auto& a : list) {
      out += "nft node " + a.toString() + "\n";
    }
  }
  for (const auto& list : tunnelSources) {
    for (const auto& src : list) {
      out += "nft tunsrc " + macString(src.mac) + " " + src.ip.toString() + "\n";
    }
  }
  for (const auto& p : policies) {
    for (auto f : {ipam::Family::kIPv4, ipam::Family::kIPv6}) {
      auto i = static_cast<size_t>(f);
      for (const auto& d : p.destinations[i]) {
        out += "nft " + p.key + " dst " + d.toString() + "\n";
      }
      for (const auto& d : p.excluded[i]) {
        out += "nft " + p.key + " exc " + d.toString() + "\n";
      }
      for (const auto& pick : p.picks[i]) {
        out += "nft " + p.key + " pick " + pick.source.toString() + " " +
               (pick.egressIP ? pick.egressIP->toString() : "refuse") + "\n";
      }
      for (const auto& m : p.snat[i]) {
        out += "nft " + p.key + " snat " + m.source.toString() + " " + m.egressIP.toString() + "\n";
      }
    }
  }
  return out;
}

}  // namespace egress::dataplane
