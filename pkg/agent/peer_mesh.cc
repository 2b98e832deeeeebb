#include "pkg/agent/peer_mesh.h"

#include <array>
#include <random>
#include <set>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <spdlog/spdlog.h>

#include "pkg/dataplane/fence.h"
#include "pkg/dataplane/nft_applier.h"

namespace egress::agent {
namespace {

namespace net = boost::asio;
using udp = net::ip::udp;

net::ip::address toAsio(const ipam::Address& a) {
  if (a.family == ipam::Family::kIPv4) {
    return net::ip::address_v4(static_cast<uint32_t>(a.value));
  }
  net::ip::address_v6::bytes_type bytes;
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<unsigned char>(a.value >> (8 * (15 - i)));
  }
  return net::ip::address_v6(bytes);
}

ipam::Address fromAsio(const net::ip::address& a) {
  if (a.is_v4()) {
    return {ipam::Family::kIPv4, a.to_v4().to_uint()};
  }
  if (a.to_v6().is_v4_mapped()) {
    return {ipam::Family::kIPv4, net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6()).to_uint()};
  }
  ipam::Uint128 v = 0;
  for (unsigned char b : a.to_v6().to_bytes()) {
    v = (v << 8) | b;
  }
  return {ipam::Family::kIPv6, v};
}

uint64_t randomIncarnation() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// What a sync reads of the quorum, to tell whether it changed.
struct Snapshot {
  bool lease = false;
  std::set<std::string> dead;
  std::set<std::string> current;
  std::map<std::string, std::vector<ipam::Address>> claims;

  friend bool operator==(const Snapshot&, const Snapshot&) = default;
};

}  // namespace

struct PeerMesh::State {
  std::string self;
  Clock* clock = nullptr;
  net::any_io_executor executor;
  Options options;
  PeerQuorum quorum;
  std::unique_ptr<Timer> timer;
  bool started = false;
  bool stopped = false;
  TimePoint startedAt{};
  std::map<std::string, Member> members;
  std::map<ipam::Address, std::string> byAddress;
  // The sockets by family, and the addresses they are bound to.
  std::shared_ptr<udp::socket> v4;
  std::shared_ptr<udp::socket> v6;
  std::optional<ipam::Address> bound4;
  std::optional<ipam::Address> bound6;
  Snapshot last;
  // Where the long promises are kept for the next agent on this node, and until when they are.
  dataplane::NftApplier nft;
  std::map<std::string, TimePoint> kept;

  prometheus::Counter* sent = nullptr;
  prometheus::Counter* sentBytes = nullptr;
  prometheus::Counter* sendErrors = nullptr;
  prometheus::Counter* receivedBytes = nullptr;
  std::map<std::string, prometheus::Counter*> received;  // by result
  std::map<std::string, prometheus::Gauge*> peers;       // by state

  State(std::string selfName, Clock& c, net::any_io_executor ex, Options o)
      : self(std::move(selfName)),
        clock(&c),
        executor(std::move(ex)),
        options(std::move(o)),
        quorum(self, randomIncarnation(), options.quorum, c.now()),
        timer(c.makeTimer()),
        startedAt(c.now()) {}

  Snapshot snapshot(TimePoint now) const {
    Snapshot s;
    s.lease = quorum.leaseUntil(now).has_value();
    for (const auto& [name, m] : members) {
      if (name == self) {
        continue;
      }
      if (quorum.deadUntil(name, now)) {
        s.dead.insert(name);
        continue;
      }
      if (quorum.current(name, now)) {
        s.current.insert(name);
      }
      if (auto c = quorum.claims(name); !c.empty()) {
        s.claims.emplace(name, std::move(c));
      }
    }
    return s;
  }

  void notice(TimePoint now) {
    auto s = snapshot(now);
    if (s == last) {
      return;
    }
    last = std::move(s);
    if (options.onChange) {
      options.onChange();
    }
  }

  // Where `node` is sent to: its address of a family this node has a socket for, IPv4 first.
  std::optional<udp::endpoint> endpointOf(const std::string& node) const {
    auto it = members.find(node);
    if (it == members.end()) {
      return std::nullopt;
    }
    if (it->second.ipv4 && v4) {
      return udp::endpoint(toAsio(*it->second.ipv4), options.port);
    }
    if (it->second.ipv6 && v6) {
      return udp::endpoint(toAsio(*it->second.ipv6), options.port);
    }
    return std::nullopt;
  }

  // A grant longer than the window (a leaving peer's restart grace) is a promise the next agent
  // on this node must keep too: written to the kernel first, with 2 s to spare so that it is
  // rewritten every 2 s, not every round. If that fails, the grant goes out a window long.
  void keepPromise(const std::string& node, Heartbeat& hb, TimePoint now) {
    const auto window = options.quorum.window();
    const std::chrono::milliseconds grant(hb.grantMs);
    if (grant <= window) {
      return;
    }
    auto& until = kept[node];
    if (until >= now + grant) {
      return;
    }
    const auto keep = grant + std::chrono::seconds(2);
    if (auto done = nft.promise(node, keep); !done) {
      spdlog::warn("egw-agent: {}: granting {} one window only", done.error(), node);
      hb.grantMs = static_cast<uint32_t>(window.count());
      return;
    }
    until = now + keep;
  }

  void round() {
    const TimePoint now = clock->now();
    for (auto& [node, hb] : quorum.round(now)) {
      auto to = endpointOf(node);
      if (!to) {
        continue;
      }
      keepPromise(node, hb, now);
      auto bytes = encodeHeartbeat(hb);
      if (!bytes) {
        spdlog::warn("egw-agent: heartbeat to {}: {}", node, bytes.error());
        sendErrors->Increment();
        continue;
      }
      auto& sock = to->address().is_v4() ? v4 : v6;
      boost::system::error_code ec;
      sock->send_to(net::buffer(*bytes), *to, 0, ec);
      if (ec) {
        sendErrors->Increment();
        continue;
      }
      sent->Increment();
      sentBytes->Increment(static_cast<double>(bytes->size()));
    }
    int heard = 0;
    int dead = 0;
    for (const auto& [name, m] : members) {
      if (name == self) {
        continue;
      }
      if (quorum.deadUntil(name, now)) {
        ++dead;
      } else if (quorum.heard(name, now)) {
        ++heard;
      }
    }
    const int others = static_cast<int>(members.size()) - (members.contains(self) ? 1 : 0);
    peers["heard"]->Set(heard);
    peers["dead"]->Set(dead);
    peers["silent"]->Set(others - heard - dead);
    if (options.onRound) {
      options.onRound();
    }
    notice(now);
  }

  void take(const char* data, size_t size, const udp::endpoint& from) {
    receivedBytes->Increment(static_cast<double>(size));
    auto hb = decodeHeartbeat(std::string_view(data, size));
    if (!hb) {
      received["undecodable"]->Increment();
      return;
    }
    auto node = byAddress.find(fromAsio(from.address()));
    if (node == byAddress.end()) {
      received["unknown-sender"]->Increment();
      return;
    }
    const TimePoint now = clock->now();
    const bool wasCurrent = quorum.current(node->second, now);
    auto before = quorum.claims(node->second);
    if (!quorum.receive(node->second, *hb, now)) {
      received["ignored"]->Increment();
      return;
    }
    received["counted"]->Increment();
    // What a sync reads of this sender; the rest (a lease, a death) shows at the next round.
    if (quorum.current(node->second, now) != wasCurrent || quorum.claims(node->second) != before) {
      notice(now);
    }
  }
};

namespace {

net::awaitable<void> roundLoop(std::shared_ptr<PeerMesh::State> s) {
  while (!s->stopped) {
    s->round();
    co_await s->timer->waitUntil(s->clock->now() + s->options.quorum.interval);
  }
}

net::awaitable<void> receiveLoop(std::shared_ptr<PeerMesh::State> s,
                                 std::shared_ptr<udp::socket> sock) {
  std::array<char, kMaxHeartbeatBytes + 1> buffer{};
  while (!s->stopped && sock->is_open()) {
    udp::endpoint from;
    boost::system::error_code ec;
    const size_t n = co_await sock->async_receive_from(net::buffer(buffer), from,
                                                       net::redirect_error(net::use_awaitable, ec));
    if (ec == net::error::operation_aborted || s->stopped || !sock->is_open()) {
      break;
    }
    if (ec) {
      continue;
    }
    s->take(buffer.data(), n, from);
  }
}

// Binds a socket of `address`'s family to it and the port; replaces `sock` (closing the old one,
// which ends its receive loop). An error message on failure.
std::string bindSocket(const std::shared_ptr<PeerMesh::State>& s,
                       std::shared_ptr<udp::socket>& sock, std::optional<ipam::Address>& bound,
                       const std::optional<ipam::Address>& address) {
  if (bound == address && (sock || !address)) {
    return "";
  }
  if (sock) {
    boost::system::error_code ignored;
    sock->close(ignored);
    sock.reset();
  }
  bound.reset();
  if (!address) {
    return "";
  }
  auto next = std::make_shared<udp::socket>(s->executor);
  const udp::endpoint at(toAsio(*address), s->options.port);
  boost::system::error_code ec;
  next->open(at.protocol(), ec);
  if (!ec) {
    next->non_blocking(true, ec);
  }
  if (!ec) {
    next->bind(at, ec);
  }
  if (ec) {
    return "heartbeat socket on " + address->toString() + " port " +
           std::to_string(s->options.port) + ": " + ec.message();
  }
  sock = next;
  bound = address;
  if (s->started && !s->stopped) {
    net::co_spawn(s->executor, receiveLoop(s, sock), net::detached);
  }
  return "";
}

}  // namespace

PeerMesh::PeerMesh(std::string self, Clock& clock, net::any_io_executor executor, Options options,
                   prometheus::Registry& registry)
    : state_(std::make_shared<State>(std::move(self), clock, std::move(executor),
                                     std::move(options))) {
  auto counter = [&registry](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
  };
  state_->sent = counter("egw_agent_heartbeats_sent_total",
                         "Heartbeats this agent sent to its peers (one per peer per interval).");
  state_->sentBytes = counter("egw_agent_heartbeat_sent_bytes_total",
                              "UDP payload bytes of the heartbeats this agent sent.");
  state_->sendErrors =
      counter("egw_agent_heartbeat_send_errors_total",
              "Heartbeats that could not be sent (a full socket buffer, no route).");
  state_->receivedBytes = counter("egw_agent_heartbeat_received_bytes_total",
                                  "UDP payload bytes of the datagrams received on the heartbeat "
                                  "port.");
  auto& received = prometheus::BuildCounter()
                       .Name("egw_agent_heartbeats_received_total")
                       .Help(
                           "Datagrams received on the heartbeat port, by result: counted (its "
                           "promises and claims were taken), ignored (a replay, or one that "
                           "does not echo this process: a peer that has not heard it yet, or a "
                           "forgery), undecodable, unknown-sender (not from a member's "
                           "InternalIP).")
                       .Register(registry);
  for (const char* result : {"counted", "ignored", "undecodable", "unknown-sender"}) {
    state_->received[result] = &received.Add({{"result", result}});
  }
  auto& peers = prometheus::BuildGauge()
                    .Name("egw_agent_peers")
                    .Help(
                        "The other agents as this one sees them: heard (within the grace), "
                        "dead (a majority certifies it), silent (neither).")
                    .Register(registry);
  for (const char* state : {"heard", "dead", "silent"}) {
    state_->peers[state] = &peers.Add({{"state", state}});
  }
}

PeerMesh::~PeerMesh() {
  stop();
}

Result<Ok, std::string> PeerMesh::setMembers(const std::map<std::string, Member>& members) {
  auto& s = *state_;
  if (members != s.members) {
    s.members = members;
    s.byAddress.clear();
    std::vector<std::string> names;
    for (const auto& [name, m] : members) {
      names.push_back(name);
      for (const auto& a : {m.ipv4, m.ipv6}) {
        if (a) {
          s.byAddress.emplace(*a, name);
        }
      }
    }
    s.quorum.setMembers(names);
  }
  // Every time, not only when the members change: a bind that failed (the port still taken by a
  // predecessor, the address not up yet) is tried again at the next sync.
  Member self;
  if (auto it = members.find(s.self); it != members.end()) {
    self = it->second;
  }
  std::string problems;
  for (auto& problem : {bindSocket(state_, s.v4, s.bound4, self.ipv4),
                        bindSocket(state_, s.v6, s.bound6, self.ipv6)}) {
    if (!problem.empty()) {
      problems += (problems.empty() ? "" : "; ") + problem;
    }
  }
  if (!problems.empty()) {
    return unexpected(std::move(problems));
  }
  return Ok{};
}

void PeerMesh::setClaims(std::vector<ipam::Address> held) {
  state_->quorum.setClaims(std::move(held));
}

void PeerMesh::leave() {
  state_->quorum.leave();
  // Asked at once, not at the next interval: the agent is stopping.
  state_->timer->cancel();
}

void PeerMesh::start() {
  auto& s = *state_;
  if (s.started || s.stopped) {
    return;
  }
  s.started = true;
  s.startedAt = s.clock->now();
  // What a predecessor on this node promised for longer than a window (fence.h).
  if (auto kept = s.nft.promises(); kept) {
    std::map<std::string, TimePoint> restore;
    for (const auto& [name, m] : s.members) {
      if (auto it = kept->find(dataplane::promiseKey(name)); it != kept->end()) {
        restore[name] = s.startedAt + it->second;
        s.kept[name] = s.startedAt + it->second;
      }
    }
    s.quorum.restorePromises(restore);
    if (!restore.empty()) {
      spdlog::info("egw-agent: keeping {} promises of the agent before this one", restore.size());
    }
  } else {
    spdlog::warn("egw-agent: {}", kept.error());
  }
  net::co_spawn(s.executor, roundLoop(state_), net::detached);
  for (const auto& sock : {s.v4, s.v6}) {
    if (sock) {
      net::co_spawn(s.executor, receiveLoop(state_, sock), net::detached);
    }
  }
}

void PeerMesh::stop() {
  auto& s = *state_;
  s.stopped = true;
  s.timer->cancel();
  boost::system::error_code ignored;
  for (const auto& sock : {s.v4, s.v6}) {
    if (sock) {
      sock->close(ignored);
    }
  }
}

const PeerQuorum& PeerMesh::quorum() const {
  return state_->quorum;
}

const QuorumOptions& PeerMesh::options() const {
  return state_->options.quorum;
}

bool PeerMesh::ready(TimePoint now) const {
  const auto& s = *state_;
  return s.started && (s.quorum.leaseUntil(now) || now - s.startedAt >= s.options.quorum.timeout);
}

bool PeerMesh::dead(const std::string& node, TimePoint now) const {
  return state_->quorum.deadUntil(node, now).has_value();
}

bool PeerMesh::current(const std::string& node, TimePoint now) const {
  return state_->quorum.current(node, now);
}

}  // namespace egress::agent
