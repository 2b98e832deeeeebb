#include "pkg/agent/heartbeat.h"

namespace egress::agent {
namespace {

constexpr std::string_view kMagic = "EGWH";
constexpr uint8_t kVersion = 1;
constexpr size_t kMaxName = 253;
constexpr size_t kMaxItems = 0xffff;

class Writer {
 public:
  void bytes(std::string_view s) { out_.append(s); }
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void be(uint64_t v, int width) {
    for (int shift = (width - 1) * 8; shift >= 0; shift -= 8) {
      u8(static_cast<uint8_t>(v >> shift));
    }
  }
  bool name(std::string_view s) {
    if (s.empty() || s.size() > kMaxName) {
      return false;
    }
    u8(static_cast<uint8_t>(s.size()));
    bytes(s);
    return true;
  }
  std::string take() { return std::move(out_); }
  size_t size() const { return out_.size(); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool bytes(size_t n, std::string_view* out) {
    if (in_.size() < n) {
      return false;
    }
    *out = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool be(int width, uint64_t* out) {
    std::string_view b;
    if (!bytes(static_cast<size_t>(width), &b)) {
      return false;
    }
    uint64_t v = 0;
    for (char c : b) {
      v = (v << 8) | static_cast<uint8_t>(c);
    }
    *out = v;
    return true;
  }
  bool name(std::string* out) {
    uint64_t n = 0;
    std::string_view b;
    if (!be(1, &n) || n == 0 || !bytes(n, &b)) {
      return false;
    }
    *out = std::string(b);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

}  // namespace

Result<std::string, std::string> encodeHeartbeat(const Heartbeat& hb) {
  if (hb.dead.size() > kMaxItems || hb.claims.size() > kMaxItems) {
    return unexpected(std::string("heartbeat: more than 65535 dead nodes or claims"));
  }
  Writer w;
  w.bytes(kMagic);
  w.u8(kVersion);
  w.u8(hb.leaving ? 1 : 0);
  if (!w.name(hb.sender)) {
    return unexpected("heartbeat: sender name \"" + hb.sender + "\" is empty or too long");
  }
  w.be(hb.incarnation, 8);
  w.be(hb.seq, 8);
  w.be(hb.windowMs, 4);
  w.be(hb.grantMs, 4);
  w.be(hb.restartMs, 4);
  w.be(hb.echoIncarnation, 8);
  w.be(hb.echoSeq, 8);
  w.be(hb.dead.size(), 2);
  for (const auto& d : hb.dead) {
    if (!w.name(d)) {
      return unexpected("heartbeat: node name \"" + d + "\" is empty or too long");
    }
  }
  w.be(hb.claims.size(), 2);
  for (const auto& c : hb.claims) {
    const bool v4 = c.family == ipam::Family::kIPv4;
    w.u8(v4 ? 4 : 6);
    if (v4) {
      w.be(static_cast<uint64_t>(c.value), 4);
    } else {
      w.be(static_cast<uint64_t>(c.value >> 64), 8);
      w.be(static_cast<uint64_t>(c.value), 8);
    }
  }
  if (w.size() > kMaxHeartbeatBytes) {
    return unexpected("heartbeat: " + std::to_string(w.size()) + " bytes, more than " +
                      std::to_string(kMaxHeartbeatBytes));
  }
  return w.take();
}

Result<Heartbeat, std::string> decodeHeartbeat(std::string_view bytes) {
  Reader r(bytes);
  std::string_view magic;
  if (!r.bytes(kMagic.size(), &magic) || magic != kMagic) {
    return unexpected(std::string("not a heartbeat"));
  }
  uint64_t version = 0;
  uint64_t flags = 0;
  if (!r.be(1, &version) || !r.be(1, &flags)) {
    return unexpected(std::string("heartbeat: truncated"));
  }
  if (version != kVersion) {
    return unexpected("heartbeat: version " + std::to_string(version) + ", this agent speaks " +
                      std::to_string(kVersion));
  }
  Heartbeat hb;
  hb.leaving = (flags & 1U) != 0;
  uint64_t window = 0;
  uint64_t grant = 0;
  uint64_t restart = 0;
  uint64_t deadCount = 0;
  if (!r.name(&hb.sender) || !r.be(8, &hb.incarnation) || !r.be(8, &hb.seq) || !r.be(4, &window) ||
      !r.be(4, &grant) || !r.be(4, &restart) || !r.be(8, &hb.echoIncarnation) ||
      !r.be(8, &hb.echoSeq) || !r.be(2, &deadCount)) {
    return unexpected(std::string("heartbeat: truncated"));
  }
  hb.windowMs = static_cast<uint32_t>(window);
  hb.grantMs = static_cast<uint32_t>(grant);
  hb.restartMs = static_cast<uint32_t>(restart);
  for (uint64_t i = 0; i < deadCount; ++i) {
    std::string d;
    if (!r.name(&d)) {
      return unexpected(std::string("heartbeat: truncated"));
    }
    hb.dead.push_back(std::move(d));
  }
  uint64_t claimCount = 0;
  if (!r.be(2, &claimCount)) {
    return unexpected(std::string("heartbeat: truncated"));
  }
  for (uint64_t i = 0; i < claimCount; ++i) {
    uint64_t family = 0;
    uint64_t hi = 0;
    uint64_t lo = 0;
    if (!r.be(1, &family)) {
      return unexpected(std::string("heartbeat: truncated"));
    }
    if (family == 4) {
      if (!r.be(4, &lo)) {
        return unexpected(std::string("heartbeat: truncated"));
      }
      hb.claims.push_back({ipam::Family::kIPv4, lo});
    } else if (family == 6) {
      if (!r.be(8, &hi) || !r.be(8, &lo)) {
        return unexpected(std::string("heartbeat: truncated"));
      }
      hb.claims.push_back({ipam::Family::kIPv6, (ipam::Uint128{hi} << 64) | lo});
    } else {
      return unexpected("heartbeat: address family " + std::to_string(family));
    }
  }
  if (!r.done()) {
    return unexpected(std::string("heartbeat: trailing bytes"));
  }
  return hb;
}

}  // namespace egress::agent
