#include "pkg/agent/peer_quorum.h"

#include <algorithm>
#include <functional>

namespace egress::agent {
namespace {

// Seqs older than this are not looked up: a promise written after one stands no longer.
constexpr std::chrono::seconds kMaxWindow{60};
// No promise is taken for longer (the restart grace's limit).
constexpr std::chrono::minutes kMaxPromise{5};

// The k-th latest of `ends` (1-based), if there are k.
std::optional<Clock::TimePoint> kthLatest(std::vector<Clock::TimePoint> ends, size_t k) {
  if (k == 0) {
    return Clock::TimePoint::max();
  }
  if (ends.size() < k) {
    return std::nullopt;
  }
  std::nth_element(ends.begin(), ends.begin() + static_cast<std::ptrdiff_t>(k - 1), ends.end(),
                   std::greater<>());
  return ends[k - 1];
}

}  // namespace

Result<Ok, std::string> validateQuorumOptions(const QuorumOptions& options) {
  if (options.interval.count() <= 0) {
    return unexpected(std::string("the heartbeat interval must be positive"));
  }
  if (options.timeout < 4 * options.interval) {
    return unexpected("the heartbeat timeout (" + std::to_string(options.timeout.count()) +
                      "ms) must be at least 4 intervals (" +
                      std::to_string(4 * options.interval.count()) + "ms)");
  }
  if (options.window() > kMaxWindow) {
    return unexpected(std::string("the heartbeat timeout must be at most 60s"));
  }
  if (options.restartGrace < options.timeout || options.restartGrace > kMaxPromise) {
    return unexpected(
        std::string("the restart grace must be at least the heartbeat timeout and at most 5m"));
  }
  return Ok{};
}

PeerQuorum::PeerQuorum(std::string self, uint64_t incarnation, QuorumOptions options,
                       TimePoint start)
    : self_(std::move(self)), incarnation_(incarnation), options_(options), start_(start) {}

void PeerQuorum::setMembers(const std::vector<std::string>& nodes) {
  for (auto& [name, p] : peers_) {
    p.member = false;
  }
  for (const auto& n : nodes) {
    if (n != self_) {
      peers_[n].member = true;
    }
  }
}

void PeerQuorum::setClaims(std::vector<ipam::Address> held) {
  claims_ = std::move(held);
}

size_t PeerQuorum::members() const {
  size_t n = 1;
  for (const auto& [name, p] : peers_) {
    n += p.member ? 1 : 0;
  }
  return n;
}

std::optional<PeerQuorum::TimePoint> PeerQuorum::sentAt(uint64_t seq) const {
  if (rounds_.empty() || seq < rounds_.front().first || seq > rounds_.back().first) {
    return std::nullopt;
  }
  return rounds_[seq - rounds_.front().first].second;
}

PeerQuorum::TimePoint PeerQuorum::standsUntil(TimePoint echoed, uint32_t ms) {
  // 2 % off for the two clocks' rates (NTP slews a monotonic clock by at most 0.05 %).
  const std::chrono::microseconds window{static_cast<int64_t>(ms) * 1000};
  return echoed + window - window / 50;
}

// A grant waits a window after the last dead vote, a dead vote for the end of the last grant. A
// process's own start counts as both, a window long (what a predecessor promised for longer, it
// kept in the kernel: restorePromises).
bool PeerQuorum::canGrant(const Peer& p, TimePoint now) const {
  return now - std::max(start_, p.lastDead.value_or(start_)) >= options_.window();
}

bool PeerQuorum::canVoteDead(const Peer& p, TimePoint now) const {
  return now >= std::max(start_ + options_.window(), p.grantedUntil.value_or(start_));
}

void PeerQuorum::restorePromises(const std::map<std::string, TimePoint>& grantedUntil) {
  for (const auto& [node, until] : grantedUntil) {
    auto& p = peers_[node];
    p.grantedUntil = std::max(p.grantedUntil.value_or(until), until);
  }
}

std::vector<std::pair<std::string, Heartbeat>> PeerQuorum::round(TimePoint now) {
  const uint64_t seq = ++seq_;
  rounds_.emplace_back(seq, now);
  while (!rounds_.empty() && now - rounds_.front().second > kMaxWindow) {
    rounds_.pop_front();
  }
  std::vector<std::string> dead;
  std::map<std::string, uint32_t> grants;
  for (auto& [name, p] : peers_) {
    // Promises that ended weigh nothing.
    if (p.grantUntil && *p.grantUntil <= now) {
      p.grantUntil.reset();
    }
    std::erase_if(p.votes, [now](const auto& v) { return v.second <= now; });
    if (!p.member) {
      continue;
    }
    // A node certified dead has withdrawn: what it claimed before is not news of it.
    if (deadUntil(name, now)) {
      p.claims.clear();
    }
    const bool heardIt = heard(name, now);
    if (heardIt && canGrant(p, now)) {
      const auto ms = std::max(options_.window(), p.asks);
      p.grantedUntil = std::max(p.grantedUntil.value_or(now), now + ms);
      grants.emplace(name, static_cast<uint32_t>(ms.count()));
    } else if (!heardIt && canVoteDead(p, now)) {
      p.lastDead = now;
      dead.push_back(name);
    }
  }
  trackLease(now);
  const auto window = static_cast<uint32_t>(options_.window().count());
  std::vector<std::pair<std::string, Heartbeat>> out;
  for (const auto& [name, p] : peers_) {
    if (!p.member) {
      continue;
    }
    Heartbeat hb;
    hb.sender = self_;
    hb.incarnation = incarnation_;
    hb.seq = seq;
    hb.windowMs = window;
    if (auto g = grants.find(name); g != grants.end()) {
      hb.grantMs = g->second;
    }
    hb.leaving = leaving_;
    hb.restartMs = leaving_ ? static_cast<uint32_t>(options_.restartGrace.count()) : 0;
    hb.echoIncarnation = p.incarnation;
    hb.echoSeq = p.seq;
    hb.dead = dead;
    hb.claims = claims_;
    out.emplace_back(name, std::move(hb));
  }
  return out;
}

bool PeerQuorum::receive(const std::string& from, const Heartbeat& hb, TimePoint now) {
  auto it = peers_.find(hb.sender);
  if (hb.sender != from || hb.sender == self_ || it == peers_.end() || !it->second.member) {
    return false;
  }
  Peer& p = it->second;
  if (hb.incarnation == p.incarnation && hb.seq <= p.seq) {
    return false;  // a replay, or out of order
  }
  std::optional<TimePoint> echoed;
  const auto within = [](uint32_t ms) { return std::chrono::milliseconds(ms) <= kMaxPromise; };
  if (hb.echoIncarnation == incarnation_ && within(hb.windowMs) && within(hb.grantMs) &&
      within(hb.restartMs)) {
    echoed = sentAt(hb.echoSeq);
  }
  if (!echoed) {
    // It has not heard this process yet: learn whom to echo, so that its next message can
    // count. Only while nothing of it counted lately, so that a forged message with another
    // incarnation cannot make this process echo the wrong one to a live peer.
    if (!heard(hb.sender, now)) {
      p.incarnation = hb.incarnation;
      p.seq = hb.seq;
    }
    return false;
  }
  p.incarnation = hb.incarnation;
  p.seq = hb.seq;
  p.lastCounted = now;
  p.echoed = echoed;
  // A promise stands to its end even if a later message does not repeat it: the sender keeps
  // it from the last time it wrote it.
  if (hb.grantMs > 0) {
    const TimePoint granted = standsUntil(*echoed, hb.grantMs);
    if (!p.grantUntil || *p.grantUntil < granted) {
      p.grantUntil = granted;
    }
  }
  p.asks = hb.leaving ? std::chrono::milliseconds(hb.restartMs) : std::chrono::milliseconds(0);
  const TimePoint until = standsUntil(*echoed, hb.windowMs);
  for (const auto& d : hb.dead) {
    auto [v, added] = p.votes.emplace(d, until);
    if (!added && v->second < until) {
      v->second = until;
    }
  }
  p.claims = hb.claims;
  trackLease(now);
  return true;
}

void PeerQuorum::trackLease(TimePoint now) {
  const auto until = leaseUntil(now);
  if (!until) {
    leaseSince_.reset();
  } else if (!leaseSince_ || !leaseSeenUntil_ || *leaseSeenUntil_ <= now) {
    leaseSince_ = now;
  }
  leaseSeenUntil_ = until;
}

std::optional<PeerQuorum::TimePoint> PeerQuorum::leaseUntil(TimePoint now) const {
  std::vector<TimePoint> ends;
  for (const auto& [name, p] : peers_) {
    if (p.member && p.grantUntil && *p.grantUntil > now) {
      ends.push_back(*p.grantUntil);
    }
  }
  // This node grants itself.
  return kthLatest(std::move(ends), majority() - 1);
}

std::optional<PeerQuorum::TimePoint> PeerQuorum::deadUntil(const std::string& node,
                                                           TimePoint now) const {
  if (node == self_) {
    return std::nullopt;
  }
  std::vector<TimePoint> ends;
  // This node's own vote: it grants `node` nothing until a window after its last vote.
  if (auto it = peers_.find(node); it != peers_.end() && it->second.lastDead) {
    const TimePoint own = *it->second.lastDead + options_.window();
    if (own > now) {
      ends.push_back(own);
    }
  }
  for (const auto& [name, p] : peers_) {
    if (!p.member || name == node) {
      continue;
    }
    if (auto v = p.votes.find(node); v != p.votes.end() && v->second > now) {
      ends.push_back(v->second);
    }
  }
  auto until = kthLatest(std::move(ends), majority());
  if (until && *until <= now) {
    return std::nullopt;
  }
  return until;
}

bool PeerQuorum::heard(const std::string& node, TimePoint now) const {
  auto it = peers_.find(node);
  return it != peers_.end() && it->second.lastCounted &&
         now - *it->second.lastCounted <= options_.grace();
}

bool PeerQuorum::current(const std::string& node, TimePoint now) const {
  auto it = peers_.find(node);
  return heard(node, now) && leaseSince_ && it->second.echoed && *it->second.echoed >= *leaseSince_;
}

std::vector<ipam::Address> PeerQuorum::claims(const std::string& node) const {
  auto it = peers_.find(node);
  return it == peers_.end() ? std::vector<ipam::Address>{} : it->second.claims;
}

}  // namespace egress::agent
